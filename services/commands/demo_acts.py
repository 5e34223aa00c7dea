"""The demo's acts: what one act sends and the diffs it expects, and how what it saw is matched
against them (`fleetplace demo`; the act scripts are in demo.py and its demo_* companions)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from fleetplace.shared.bus.publish import Document, plan_document, to_outgoing
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.bus.topics import Topics

# ---- what an act expects ---------------------------------------------------------------------


class Expectation(Protocol):
    """One diff an act should cause, on `decisions` (ExpectedDiff) or `rollout-decisions`
    (ExpectedRolloutDiff): each matches only diffs of its own topic."""

    def matches(self, diff: Mapping[str, Any]) -> bool: ...

    def describe(self) -> str: ...


@dataclass(frozen=True, slots=True)
class ExpectedDiff:
    """One DecisionDiff an act should cause: which placement, which clusters in and out, and why."""

    placement: str
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    trigger: str | None = None
    deleted: bool = False

    def matches(self, diff: Mapping[str, Any]) -> bool:
        trigger = diff.get("trigger") or {}
        return (
            diff.get("placement") == self.placement
            and tuple(diff.get("added") or ()) == tuple(sorted(self.added))
            and tuple(diff.get("removed") or ()) == tuple(sorted(self.removed))
            and (self.trigger is None or trigger.get("kind") == self.trigger)
            and bool(diff.get("deleted", False)) == self.deleted
        )

    def describe(self) -> str:
        return describe_change(self.placement, self.added, self.removed, self.deleted)


def describe_change(placement: str, added: Sequence[str], removed: Sequence[str], deleted: bool) -> str:
    changes = [f"+{c}" for c in sorted(added)] + [f"−{c}" for c in sorted(removed)]
    # every placement of the example lives in namespace `apps`: the name says enough
    name = placement.rpartition("/")[2]
    return f"{name} {' '.join(changes)}{' (deleted)' if deleted else ''}".rstrip()


def unmatched(
    expected: Sequence[Expectation], seen: Sequence[Mapping[str, Any]]
) -> tuple[list[Expectation], list[Mapping[str, Any]]]:
    """Expected diffs not seen, and seen diffs not expected (an act passes when both are empty)."""
    missing = list(expected)
    unexpected: list[Mapping[str, Any]] = []
    for diff in seen:
        match = next((e for e in missing if e.matches(diff)), None)
        if match is None:
            unexpected.append(diff)
        else:
            missing.remove(match)
    return missing, unexpected


@dataclass(frozen=True, slots=True)
class Act:
    title: str
    story: str
    records: Callable[[], list[OutgoingRecord]]  # built when the act starts (taints carry the time)
    expected: tuple[Expectation, ...]
    timeout_s: float = 10.0
    starts_worker: bool = False
    detail: Callable[[], str] | None = None  # a line shown when the act starts
    setup: Callable[[], Awaitable[None]] | None = None  # awaited before the act starts
    # why the act cannot be played here (Prometheus missing): shown, counted apart, never passed
    skipped: str | None = None
    # where the act's diffs are seen, when not on the demo's `decisions` (the hub acts read the
    # hub): a list that grows
    observed: Callable[[], Sequence[Mapping[str, Any]]] | None = None


@dataclass(frozen=True, slots=True)
class ActResult:
    title: str
    expected: tuple[Expectation, ...]
    seen: tuple[Mapping[str, Any], ...]
    seconds: float
    ok: bool  # a skipped act is ok (the demo goes on) but not passed
    skipped: str | None = None


def upsert(topics: Topics, *bodies: dict[str, Any]) -> Callable[[], list[OutgoingRecord]]:
    planned = [r for i, body in enumerate(bodies) for r in plan_document(Document(f"demo#{i}", body))]
    return lambda: to_outgoing(planned, topics)


def now_seconds() -> datetime:
    # Kubernetes times have whole seconds.
    return datetime.now(UTC).replace(microsecond=0)
