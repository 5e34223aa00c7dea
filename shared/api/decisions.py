"""The payload contracts of fleetplace's own topics: what the workers publish and what they read
besides Kubernetes objects.

These types are the single description of the records: the workers build them, subscribers
parse with them (`DecisionDiff.from_value`), the AsyncAPI document (`fleetplace docs asyncapi`)
is generated from them (the DecisionDiff through its schema view, `_decision_schema`), and the
tests check the workers' output against them. Field names are the JSON
names; unknown fields are ignored so that a newer producer does not break an older consumer
(every record also carries `schemaVersion`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from fleetplace.shared.api._decision_schema import PLACEMENT_KEY_PATTERN, SCHEMA_VERSION, TRIGGER_KINDS
from fleetplace.shared.api.decision_diff import (
    DECIDED,
    DecisionDiff,
    DecisionGroup,
    DecisionTrigger,
    InvalidDecisionDiff,
)
from fleetplace.shared.api.ocm import Taint
from fleetplace.shared.api.queues import ApplicationSubmission


class _Payload(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore")


# ---- placement-decisions ----------------------------------------------------------------------


class ClusterDecisionEntry(_Payload):
    """One entry of PlacementDecision `status.decisions`, as the OCM CRD defines it."""

    cluster_name: str
    reason: str = ""
    score: int | None = Field(
        default=None,
        description=(
            "The score (an integer, int64 in the CRD) when the Placement sorts by score; absent "
            "when it is zero, as OCM omits a zero score."
        ),
    )


class PlacementDecisionMetadata(_Payload):
    """The page's name, namespace, labels, and the `fleetplace.dev/placement` annotation (the
    placement's whole name) when its label had to be shortened."""

    name: str = Field(
        description=(
            "`<placement>-decision-<k>`, k = 1, 2, … as OCM names its pages (a placement name too "
            "long for that is shortened, docs/names.md)."
        )
    )
    namespace: str
    labels: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "cluster.open-cluster-management.io/placement (the placement's name, shortened past 63 "
            "characters, docs/names.md), …/decision-group-name and …/decision-group-index (as strings)."
        ),
    )
    annotations: dict[str, str] | None = None


class PlacementDecisionPageStatus(_Payload):
    decisions: tuple[ClusterDecisionEntry, ...] = ()


class PlacementDecisionPage(_Payload):
    """One OCM PlacementDecision object: at most 100 clusters of one decision group."""

    api_version: str = "cluster.open-cluster-management.io/v1beta1"
    kind: Literal["PlacementDecision"] = "PlacementDecision"
    metadata: PlacementDecisionMetadata
    status: PlacementDecisionPageStatus = Field(default_factory=PlacementDecisionPageStatus)


class PlacementDecisions(_Payload):
    """The current decision of one placement as PlacementDecision pages (topic `placement-decisions`,
    compacted; a tombstone when the placement is deleted)."""

    schema_version: int = SCHEMA_VERSION
    placement: str = Field(pattern=PLACEMENT_KEY_PATTERN)
    seq: int = Field(ge=1, description="The seq of the DecisionDiff this state comes from.")
    items: tuple[PlacementDecisionPage, ...] = ()


# ---- control and errors -----------------------------------------------------------------------


class ClockRecord(_Payload):
    """The time, for workers started with `--clock topic` (topic `clock`, key = worker group)."""

    now: datetime = Field(description="RFC 3339; the clock never goes back (an earlier time is ignored).")


class DeadLetterRecord(BaseModel):
    """A record a worker could not use, kept whole with the reason (topic `deadletter`, key = the
    original key bytes). Byte strings are base64."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    topic: str = Field(description="The full topic name the record came from.")
    partition: int
    offset: int
    error: str = Field(description="Why the record was rejected.")
    key: str | None = Field(default=None, description="The original key, when it is valid UTF-8.")
    key_b64: str | None = Field(default=None, description="The original key bytes, when it is not UTF-8.")
    value_b64: str | None = Field(description="The original value bytes; null for a tombstone.")
    timestamp_ms: int = -1
    headers: tuple[tuple[str, str], ...] = Field(
        default=(), description="The original headers as [name, base64 value] pairs."
    )


# ---- inputs that are not Kubernetes objects ---------------------------------------------------


class TaintSetRecord(_Payload):
    """The taints a taint owner (health checker, operator) publishes for one cluster (topic `taints`).

    Effective taints = the ManagedCluster's spec.taints united with these; on the same key and
    effect this set wins. A tombstone removes the set."""

    taints: tuple[Taint, ...] = ()


class AppPlacementRecord(_Payload):
    """The queue chosen for one application, or its rejection (topic `app-placements`, one record
    per application, never replaced)."""

    schema_version: int = SCHEMA_VERSION
    application_id: str = Field(alias="applicationID")
    queue: str | None = Field(default=None, description="The fully qualified queue (absent when rejected).")
    rule: str | None = Field(default=None, description="The type of the rule that placed it.")
    created: bool = Field(default=False, description="The placement created the queue.")
    rejected: bool = False
    reason: str | None = Field(default=None, description="Why it was rejected.")
    detail: str | None = Field(default=None, description="The rejection in a sentence.")
    evaluated_at: datetime = Field(description="The queue placer's clock at placement.")
    rule_set_version: str = Field(description="Digest of the rule set in force.")
    inputs: dict[str, int] = Field(
        description=(
            "The `queue-configs` watermark of the batch and `applications/<partition>`: the offset "
            "after the application's own record. With `evaluatedAt`, what makes the placement auditable."
        )
    )
    application: ApplicationSubmission = Field(description="The submission as placed.")


__all__ = [
    "DECIDED",
    "SCHEMA_VERSION",
    "TRIGGER_KINDS",
    "AppPlacementRecord",
    "ClockRecord",
    "ClusterDecisionEntry",
    "DeadLetterRecord",
    "DecisionDiff",
    "DecisionGroup",
    "DecisionTrigger",
    "InvalidDecisionDiff",
    "PlacementDecisionMetadata",
    "PlacementDecisionPage",
    "PlacementDecisionPageStatus",
    "PlacementDecisions",
    "TaintSetRecord",
]
