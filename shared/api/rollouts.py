"""The Rollout object and the rollout-status record a deployer reports.

A Rollout says *what* is being rolled out (`spec.revision`) and *how* over each placement's
decision groups (`spec.placementRefs`, one OCM RolloutStrategy per placement, as OCM's
ManifestWorkReplicaSet has them). A rollout-status record says where the revision stands on one
cluster. docs/rollouts.md describes both.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from fleetplace.shared.api.ocm import ObjectMeta, Time, _Model
from fleetplace.shared.rollout import RolloutError, RolloutStrategy, StrategyType

__all__ = [
    "API_VERSION",
    "REPORTED_STATUSES",
    "PlacementRef",
    "ReportedStatus",
    "Rollout",
    "RolloutDiff",
    "RolloutSpec",
    "RolloutState",
    "RolloutStatusReport",
    "rollout_key_of_status",
    "status_key",
]

API_VERSION = "fleetplace.dev/v1alpha1"
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")

# What a deployer may report; ToApply and TimeOut are the rollout's own words, never reported.
ReportedStatus = Literal["Progressing", "Succeeded", "Failed", "Skip"]
REPORTED_STATUSES: tuple[str, ...] = get_args(ReportedStatus)


class PlacementRef(_Model):
    """A Placement in the rollout's namespace and how to roll out over its decision groups."""

    name: str = Field(min_length=1)
    rollout_strategy: dict[str, Any] = Field(default_factory=lambda: {"type": StrategyType.ALL.value})

    @field_validator("rollout_strategy")
    @classmethod
    def _strategy(cls, value: dict[str, Any]) -> dict[str, Any]:
        # The type is an enum in OCM's CRD; the settings' shapes are checked as OCM reads them.
        # Threshold and duration values OCM only rejects while rolling out are reported then.
        kind = value.get("type")
        if kind not in tuple(StrategyType):
            raise ValueError(
                f"type: Unsupported value: {kind!r}: supported values: {', '.join(StrategyType)}"
            )
        try:
            RolloutStrategy.from_json(value)
        except RolloutError as e:
            raise ValueError(str(e)) from None
        return value

    def strategy(self) -> RolloutStrategy:
        return RolloutStrategy.from_json(self.rollout_strategy)


class RolloutSpec(_Model):
    revision: str = Field(min_length=1)
    placement_refs: tuple[PlacementRef, ...] = Field(min_length=1)

    @field_validator("placement_refs")
    @classmethod
    def _distinct(cls, refs: tuple[PlacementRef, ...]) -> tuple[PlacementRef, ...]:
        names = [r.name for r in refs]
        if len(set(names)) != len(names):
            raise ValueError("each placement may be referenced once")
        return refs


class Rollout(_Model):
    """`fleetplace.dev/v1alpha1` Rollout: a revision rolled out over placements' decision groups."""

    api_version: Literal["fleetplace.dev/v1alpha1"] = "fleetplace.dev/v1alpha1"
    kind: Literal["Rollout"] = "Rollout"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: RolloutSpec

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


class RolloutStatusReport(_Model):
    """One deployer's report for one (rollout, cluster): topic `rollout-status`, key
    `<namespace>/<rollout>/<cluster>`. Without `lastTransitionTime` the record's timestamp is the
    transition time. A report of another revision than the rollout's counts as no report."""

    revision: str = Field(min_length=1)
    status: ReportedStatus
    last_transition_time: Time | None = None
    message: str | None = None

    @field_validator("last_transition_time", mode="before")
    @classmethod
    def _time_is_text(cls, v: Any) -> Any:
        # metav1.Time is an RFC 3339 date-time on the wire, as Go parses it: a number, a date
        # alone or a time without its offset is an error there, and read leniently ("1234" as
        # seconds since 1970) it would move a soak or a deadline by decades
        if isinstance(v, datetime) or v is None:
            return v
        if not isinstance(v, str) or _RFC3339.fullmatch(v) is None:
            raise ValueError(f"lastTransitionTime must be an RFC 3339 date-time, got {v!r}")
        return v

    def to_value(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def status_key(rollout: str, cluster: str) -> str:
    return f"{rollout}/{cluster}"


def rollout_key_of_status(key: str) -> tuple[str, str]:
    """(`<namespace>/<rollout>`, cluster) of a rollout-status key; ValueError when it has not
    exactly three non-empty segments."""
    parts = key.split("/")
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"key {key!r} is not <namespace>/<rollout>/<cluster>")
    return f"{parts[0]}/{parts[1]}", parts[2]


# ---- the worker's output records (topics rollout-decisions, rollout-state) ----------------------


class _Payload(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore")


class RolloutClusterRecord(_Payload):
    """One cluster as the rollout function lists it (the form of `fleetplace rollout simulate`)."""

    cluster_name: str
    group_name: str = ""
    group_index: int = 0
    status: str = Field(description="ToApply, Progressing, Succeeded, Failed, TimeOut or Skip.")
    last_transition_time: str | None = None
    time_out_time: str | None = Field(
        default=None, description="When the soak ends or the deadline passes (the recheck time)."
    )


class RolloutPlacementSummary(_Payload):
    """The rollout function's answer for one placementRef, without the clusters to roll out (a
    diff's form: the full listing is on the state)."""

    name: str
    decided: bool = Field(description="The placement has a decision on `placement-decisions`.")
    clusters_time_out: tuple[RolloutClusterRecord, ...] = Field(default=(), alias="clustersTimeOut")
    clusters_removed: tuple[RolloutClusterRecord, ...] = ()
    max_failure_breach: bool = False
    error: str | None = Field(default=None, description="A setting OCM rejects while rolling out.")


class RolloutPlacementRecord(RolloutPlacementSummary):
    """The rollout function's answer for one placementRef (the state's form)."""

    clusters_to_rollout: tuple[RolloutClusterRecord, ...] = ()


class RolloutState(_Payload):
    """The current answer of one rollout (topic `rollout-state`, compacted; a tombstone once the
    rollout is deleted)."""

    schema_version: int = 1
    rollout: str = Field(pattern=r"^[^/]+/[^/]+$", description="`<namespace>/<name>`, the record key.")
    seq: int = Field(ge=1, description="The seq of the diff this state comes from.")
    revision: str
    clusters: tuple[str, ...] = Field(
        default=(), description="The clusters to roll out to now (all placements)."
    )
    placements: tuple[RolloutPlacementRecord, ...] = ()
    max_failure_breach: bool = False
    next_recheck_at: str | None = Field(
        default=None, description="When the worker evaluates again by itself."
    )
    complete: bool = Field(
        default=False, description="Every placed cluster reported Succeeded (soaked) or Skip."
    )


class RolloutDiff(_Payload):
    """One change of a rollout's answer (topic `rollout-decisions`, the log; `seq` +1 per change
    with no gap, continuing across a deletion and re-creation). It carries the roll-out-now set
    and its change, and per placement what is not in the set; the full listing of the clusters
    to roll out (statuses, soak ends, deadlines) is on `rollout-state` under the same seq."""

    schema_version: int = 1
    rollout: str = Field(pattern=r"^[^/]+/[^/]+$", description="`<namespace>/<name>`, the record key.")
    seq: int = Field(ge=1)
    revision: str
    evaluated_at: str = Field(description="The worker's clock when it evaluated (RFC 3339, UTC).")
    trigger: dict[str, str] = Field(description="{kind: rollout|status|placement|recheck|startup, key}.")
    clusters: tuple[str, ...] = Field(
        default=(), description="The clusters to roll out to now (all placements)."
    )
    added: tuple[str, ...] = Field(default=(), description="Clusters to roll out to now and not before.")
    removed: tuple[str, ...] = Field(default=(), description="Clusters to roll out to before and not now.")
    placements: tuple[RolloutPlacementSummary, ...] = Field(
        default=(), description="Per placementRef: timed out, removed, breach, error."
    )
    max_failure_breach: bool = False
    next_recheck_at: str | None = Field(
        default=None, description="When the worker evaluates again by itself."
    )
    complete: bool = Field(
        default=False, description="Every placed cluster reported Succeeded (soaked) or Skip."
    )
    answer_digest: str = Field(
        description="A digest of the full answer (the state's fields): a new diff is published only "
        "when it changes."
    )
    inputs: dict[str, int] = Field(
        default_factory=dict, description="The watermark: `<topic>/<partition>` to the next offset consumed."
    )
    deleted: bool = Field(default=False, description="The rollout is gone: the final diff.")
