"""The JSON-schema view of `fleetplace.shared.api.decisions.DecisionDiff`, for the AsyncAPI
document (`fleetplace docs asyncapi`) only: what the worker writes, field by field, with
descriptions. Records are read and written by the dataclass; a test holds both to the same
fields."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

SCHEMA_VERSION = 1
PLACEMENT_KEY_PATTERN = r"^[^/]+/[^/]+$"
TRIGGER_KINDS = (
    "cluster",
    "taint",
    "score",
    "clusterset",
    "binding",
    "placement",
    "toleration-expired",
    "score-expired",
    "resync",
    "startup",
)


class _Payload(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore")


class DecisionTrigger(_Payload):
    """What made the scheduler evaluate the placement."""

    kind: str = Field(
        description="One of: " + ", ".join(TRIGGER_KINDS) + ". Consumers must accept kinds they do not know.",
        examples=["cluster", "toleration-expired"],
    )
    key: str = Field(description="The key of the record (or the placement, for timers) behind the trigger.")


class DecisionGroupRecord(_Payload):
    """One decision group of the placement's decision strategy: its clusters, in decision order."""

    group_name: str = ""
    group_index: int = Field(default=0, ge=0)
    clusters: tuple[str, ...] = ()


class StatusCondition(_Payload):
    """A Placement status condition (PlacementMisconfigured, PlacementSatisfied)."""

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str = ""
    message: str = ""


class DecisionStatus(_Payload):
    """The Placement status the decision implies. Empty for a deleted placement."""

    number_of_selected_clusters: int = Field(default=0, ge=0)
    conditions: tuple[StatusCondition, ...] = ()


class DecisionDiff(_Payload):
    """One change of a placement's decision: the whole decision *and* the diff (topic `decisions`).

    `seq` rises by one per placement with no gaps: a subscriber that sees a seq it already
    applied ignores it. `inputs` and `evaluatedAt` make the decision reproducible
    (`fleetplace audit`, `fleetplace explain`).
    """

    schema_version: int = Field(default=SCHEMA_VERSION, description="Version of this payload schema.")
    placement: str = Field(pattern=PLACEMENT_KEY_PATTERN, description="`<namespace>/<name>`, the record key.")
    seq: int = Field(ge=1, description="Per-placement sequence number, +1 per published change.")
    generation: int = Field(default=0, ge=0, description="metadata.generation of the Placement evaluated.")
    evaluated_at: datetime = Field(description="The scheduler's clock when it evaluated (RFC 3339, UTC).")
    trigger: DecisionTrigger
    added: tuple[str, ...] = Field(default=(), description="Clusters selected now and not before.")
    removed: tuple[str, ...] = Field(default=(), description="Clusters selected before and not now.")
    decisions: tuple[str, ...] = Field(
        default=(), description="Every selected cluster, in PlacementDecision page order."
    )
    groups: tuple[DecisionGroupRecord, ...] = ()
    scores: dict[str, int] = Field(
        default_factory=dict,
        description="Total score of the selected clusters and of those added or removed (not the whole fleet).",
    )
    status: DecisionStatus = Field(default_factory=DecisionStatus)
    next_requeue_at: datetime | None = Field(
        default=None, description="When a timer (toleration expiry, score expiry) re-evaluates next."
    )
    inputs: dict[str, int] = Field(
        default_factory=dict,
        description=(
            "The watermark the decision was computed from: `<topic without prefix>/<partition>` to the "
            "next offset consumed. A partition left out was not read (next offset 0)."
        ),
    )
    deleted: bool = Field(default=False, description="The placement is gone; `decisions` is empty.")
    sort_by: Literal["Score"] | None = Field(
        default=None,
        description="`Score` when the Placement sorts its decisions by score (scores are then visible).",
    )
