"""The DecisionDiff: one record of the `decisions` topic, as the scheduler builds it, subscribers
read it (`DecisionDiff.from_value`) and the auditor compares it.

Plain slots dataclasses with hand-written readers, no pydantic: the auditor reads every diff of
a history with them, and this module is compiled (shared/native.py). Its JSON schema view, for
the AsyncAPI document, is `_decision_schema`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from fleetplace.shared.api._decision_schema import SCHEMA_VERSION

# ---- decisions --------------------------------------------------------------------------------


class InvalidDecisionDiff(ValueError):
    """A value that is not a DecisionDiff; the message names the field."""


def _strings(value: Any, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if type(value) is not list and type(value) is not tuple:
        raise InvalidDecisionDiff(f"{name} must be a list of strings")
    for item in value:  # a loop, not all(...): this runs for every diff an audit replays
        if type(item) is not str:
            raise InvalidDecisionDiff(f"{name} must be a list of strings")
    return tuple(value)


def _integer(value: Any, name: str) -> int:
    if type(value) is not int:
        raise InvalidDecisionDiff(f"{name} must be an integer, got {value!r}")
    return value


# The fields of a DecisionDiff that say what was decided; the rest say when, why and from what.
DECIDED: tuple[str, ...] = (
    "deleted",
    "generation",
    "decisions",
    "groups",
    "status",
    "scores",
    "added",
    "removed",
    "sortBy",
)


@dataclass(slots=True)
class DecisionTrigger:
    """What made the scheduler evaluate the placement: `kind` (one of TRIGGER_KINDS; consumers
    must accept kinds they do not know) and the key of the record (or the placement, for
    timers) behind it. Read-only by convention, like DecisionDiff."""

    kind: str
    key: str

    def to_value(self) -> dict[str, str]:
        return {"kind": self.kind, "key": self.key}


@dataclass(slots=True)
class DecisionGroup:
    """One decision group of the placement's decision strategy: its clusters, in decision order.
    Read-only by convention, like DecisionDiff."""

    group_name: str
    group_index: int
    clusters: tuple[str, ...]

    def to_value(self) -> dict[str, Any]:
        return {"groupName": self.group_name, "groupIndex": self.group_index, "clusters": list(self.clusters)}


@dataclass(slots=True)
class DecisionDiff:
    """One change of a placement's decision: the whole decision *and* the diff (topic `decisions`).

    The one description of the record: the worker builds it, the scheduler's checkpoint and
    subscribers read it (`from_value`), the auditor compares what it decided (`decided`). The
    AsyncAPI schema is its field-by-field view (`fleetplace.shared.api._decision_schema`).

    `seq` rises by one per placement with no gaps: a subscriber that sees a seq it already
    applied ignores it. `inputs` and `evaluatedAt` make the decision reproducible
    (`fleetplace audit`, `fleetplace explain`). `status` is the Placement status the decision
    implies (`numberOfSelectedClusters`, `conditions`), as written; empty for a deleted placement.

    Read-only by convention: not frozen, since a frozen dataclass sets each field through
    `object.__setattr__`, which doubled the cost of reading one (an audit reads every diff).
    """

    placement: str  # `<namespace>/<name>`, the record key
    seq: int
    evaluated_at: str  # RFC 3339, UTC, as written ("" when a record leaves it out)
    trigger: DecisionTrigger | None
    generation: int = 0  # metadata.generation of the Placement evaluated
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    decisions: tuple[str, ...] = ()  # every selected cluster, in PlacementDecision page order
    groups: tuple[DecisionGroup, ...] = ()
    # the selected, added and removed clusters' (in any order: `to_value` writes them by name)
    scores: Mapping[str, int] = field(default_factory=dict)
    status: Mapping[str, Any] = field(default_factory=dict)
    next_requeue_at: str | None = None
    inputs: Mapping[str, int] = field(default_factory=dict)
    deleted: bool = False
    sort_by: Literal["Score"] | None = None  # scores are visible: decisions are ordered by them
    schema_version: int = SCHEMA_VERSION

    @property
    def key(self) -> str:
        return self.placement

    def to_value(self) -> dict[str, Any]:
        """The JSON object as the worker writes it (field order included)."""
        out: dict[str, Any] = {
            "schemaVersion": self.schema_version,
            "placement": self.placement,
            "seq": self.seq,
            "generation": self.generation,
            "evaluatedAt": self.evaluated_at,
            "trigger": None if self.trigger is None else self.trigger.to_value(),
            "added": list(self.added),
            "removed": list(self.removed),
            "decisions": list(self.decisions),
            "groups": [g.to_value() for g in self.groups],
            "scores": dict(sorted(self.scores.items())),
            "status": dict(self.status),
            "nextRequeueAt": self.next_requeue_at,
            "inputs": dict(self.inputs),
        }
        if self.deleted:
            out["deleted"] = True
        if self.sort_by is not None:
            out["sortBy"] = self.sort_by
        return out

    @classmethod
    def from_value(cls, value: Mapping[str, Any]) -> DecisionDiff:
        """Read a decoded record value; InvalidDecisionDiff names what is wrong. Fields other
        than `placement` and `seq` may be left out (their defaults); unknown fields are ignored,
        so that a newer producer does not break an older consumer."""
        placement = value.get("placement")
        if not isinstance(placement, str) or not _is_placement_key(placement):
            raise InvalidDecisionDiff(f"placement must be '<namespace>/<name>', got {placement!r}")
        seq = _integer(value.get("seq"), "seq")
        if seq < 1:
            raise InvalidDecisionDiff(f"seq must be at least 1, got {seq}")
        evaluated_at = value.get("evaluatedAt") or ""
        if not isinstance(evaluated_at, str):
            raise InvalidDecisionDiff("evaluatedAt must be an RFC 3339 time")
        trigger = value.get("trigger")
        if trigger is not None:
            kind, key = (
                (trigger.get("kind"), trigger.get("key")) if isinstance(trigger, dict) else (None, None)
            )
            if not isinstance(kind, str) or not isinstance(key, str):
                raise InvalidDecisionDiff("trigger must be {kind, key}")
            trigger = DecisionTrigger(kind, key)
        groups = value.get("groups") or ()
        if not isinstance(groups, (list, tuple)):
            raise InvalidDecisionDiff("groups must be a list")
        read_groups = []
        for g in groups:
            if not isinstance(g, dict) or not isinstance(g.get("groupName"), str):
                raise InvalidDecisionDiff("groups[].groupName must be a string")
            read_groups.append(
                DecisionGroup(
                    g["groupName"],
                    _integer(g.get("groupIndex"), "groups[].groupIndex"),
                    _strings(g.get("clusters"), "groups[].clusters"),
                )
            )
        scores = value.get("scores") or {}
        if not isinstance(scores, dict):
            raise InvalidDecisionDiff("scores must map clusters to integers")
        for score in scores.values():
            if type(score) is not int:
                raise InvalidDecisionDiff("scores must map clusters to integers")
        status = value.get("status") or {}
        if not isinstance(status, dict):
            raise InvalidDecisionDiff("status must be an object")
        inputs = value.get("inputs") or {}
        if not isinstance(inputs, dict):
            raise InvalidDecisionDiff("inputs must map '<topic>/<partition>' to offsets")
        next_requeue_at = value.get("nextRequeueAt")
        if next_requeue_at is not None and not isinstance(next_requeue_at, str):
            raise InvalidDecisionDiff("nextRequeueAt must be an RFC 3339 time")
        deleted = value.get("deleted", False)
        if not isinstance(deleted, bool):
            raise InvalidDecisionDiff("deleted must be true or false")
        sort_by = value.get("sortBy")
        if sort_by is not None and sort_by != "Score":
            raise InvalidDecisionDiff(f"sortBy must be 'Score', got {sort_by!r}")
        return cls(
            placement,
            seq,
            evaluated_at,
            trigger,
            _integer(value.get("generation", 0), "generation"),
            _strings(value.get("added"), "added"),
            _strings(value.get("removed"), "removed"),
            _strings(value.get("decisions"), "decisions"),
            tuple(read_groups),
            scores,
            status,
            next_requeue_at,
            inputs,
            deleted,
            "Score" if sort_by is not None else None,
            _integer(value.get("schemaVersion", SCHEMA_VERSION), "schemaVersion"),
        )

    def decided_value(self) -> dict[str, Any]:
        """`decided(self.to_value())`, without writing the fields nobody compares."""
        return {
            "deleted": self.deleted,
            "generation": self.generation,
            "decisions": list(self.decisions),
            "groups": [g.to_value() for g in self.groups],
            "status": self.status,
            "scores": self.scores,
            "added": list(self.added),
            "removed": list(self.removed),
            "sortBy": self.sort_by,
        }

    @classmethod
    def decided(cls, value: Mapping[str, Any]) -> dict[str, Any]:
        """The DECIDED fields (module constant) of a record value, defaults filled in, as compared (the value's own
        lists and mappings: nothing writes to them)."""
        return {
            "deleted": bool(value.get("deleted", False)),
            "generation": value.get("generation", 0),
            "decisions": value.get("decisions") or [],
            "groups": value.get("groups") or [],
            "status": value.get("status") or {},
            "scores": value.get("scores") or {},
            "added": value.get("added") or [],
            "removed": value.get("removed") or [],
            "sortBy": value.get("sortBy"),
        }


def _is_placement_key(text: str) -> bool:
    """PLACEMENT_KEY_PATTERN: `<namespace>/<name>`, both parts non-empty, one slash."""
    namespace, slash, name = text.partition("/")
    return bool(namespace) and bool(slash) and bool(name) and "/" not in name
