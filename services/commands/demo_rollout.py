"""The demo's rollout: the Rollout object it publishes, the reports of its deployer, and what a
rollout diff of an act should look like.

The Rollout rolls a revision out over the demo fleet's `apps/api` placement (demo_fleet.yaml):
decision group `canary` (edge-1) is mandatory, then the rest. The demo plays the deployer itself,
one report per act, so every act causes a known diff (docs/rollouts.md, "The status contract").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from fleetplace.shared.api.rollouts import API_VERSION, RolloutDiff, RolloutStatusReport
from fleetplace.shared.bus.deployer import status_record
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.bus.topics import Topics

API = "apps/api"
CANARY = "edge-1"
# Short enough for a demo that ends within a minute; the soak ends on the worker's timer.
SOAK_S = 3
DEADLINE = timedelta(minutes=1)
MAX_FAILURES = 1


def rollout_document(revision: str) -> dict[str, Any]:
    """The demo's Rollout of `revision` over `apps/api`: the mandatory canary group first, then
    one decision group at a time, each cluster soaking SOAK_S seconds after it succeeded."""
    namespace, name = API.split("/")
    return {
        "apiVersion": API_VERSION,
        "kind": "Rollout",
        "metadata": {"namespace": namespace, "name": name},
        "spec": {
            "revision": revision,
            "placementRefs": [
                {
                    "name": name,
                    "rolloutStrategy": {
                        "type": "ProgressivePerGroup",
                        "progressivePerGroup": {
                            "mandatoryDecisionGroups": [{"groupName": "canary"}],
                            "minSuccessTime": f"{SOAK_S}s",
                            "progressDeadline": f"{int(DEADLINE.total_seconds())}s",
                            "maxFailures": MAX_FAILURES,
                        },
                    },
                }
            ],
        },
    }


class DemoDeployer:
    """The demo's deployer of `apps/api`: it reports what it did to each cluster, stamped with
    the moment of the change (whole seconds, as Kubernetes times)."""

    source = "/fleetplace/demo-deployer"

    def __init__(self, topics: Topics) -> None:
        self.topics = topics
        self.reported: list[tuple[str, str, datetime]] = []  # (cluster, status, since)

    def report(
        self, cluster: str, status: str, revision: str, since: datetime, message: str
    ) -> OutgoingRecord:
        report = RolloutStatusReport(
            revision=revision, status=status, last_transition_time=since, message=message
        )
        self.reported.append((cluster, status, since))
        return status_record(self.topics, API, cluster, report, self.source)

    def last_since(self, status: str) -> datetime:
        return next(since for _, s, since in reversed(self.reported) if s == status)


# ---- what an act expects of rollout-decisions -------------------------------------------------


def parse_rollout_diff(diff: Mapping[str, Any]) -> RolloutDiff | None:
    """A rollout diff read through its model; None for a placement's diff or a malformed one."""
    if "rollout" not in diff:
        return None  # a placement's DecisionDiff
    try:
        return RolloutDiff.model_validate(diff)
    except ValidationError:
        return None


@dataclass(frozen=True, slots=True)
class Recheck:
    """When the worker should look at the rollout again by itself: `at()` (asked once the act's
    reports are sent, as it depends on their times), described as `label`."""

    label: str
    at: Callable[[], datetime]


def _instant(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


@dataclass(frozen=True, slots=True)
class ExpectedRolloutDiff:
    """One rollout diff an act should cause: the rollout, its revision, the clusters added to and
    removed from the roll-out-now set, why, whether maxFailures is breached, and the next recheck
    (none when `recheck` is None)."""

    rollout: str
    revision: str
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    trigger: str | None = None
    breach: bool = False
    recheck: Recheck | None = None

    def matches(self, diff: Mapping[str, Any]) -> bool:
        parsed = parse_rollout_diff(diff)
        return (
            parsed is not None
            and parsed.rollout == self.rollout
            and parsed.revision == self.revision
            and tuple(parsed.added) == tuple(sorted(self.added))
            and tuple(parsed.removed) == tuple(sorted(self.removed))
            and (self.trigger is None or parsed.trigger.get("kind") == self.trigger)
            and parsed.max_failure_breach == self.breach
            and not parsed.deleted
            and _instant(parsed.next_recheck_at) == (None if self.recheck is None else self.recheck.at())
        )

    def describe(self) -> str:
        text = _describe(self.rollout, self.revision, self.added, self.removed, self.breach, False)
        return text if self.recheck is None else f"{text}, recheck at {self.recheck.label}"


def _changes(revision: str, added: Sequence[str], removed: Sequence[str], breach: bool, deleted: bool) -> str:
    changes = [f"+{c}" for c in sorted(added)] + [f"−{c}" for c in sorted(removed)]
    flags = (", maxFailures breached" if breach else "") + (" (deleted)" if deleted else "")
    return f"{revision} {' '.join(changes) or 'no change'}{flags}"


def _describe(
    rollout: str, revision: str, added: Sequence[str], removed: Sequence[str], breach: bool, deleted: bool
) -> str:
    # the demo's rollout lives in namespace `apps`, like its placements: the name says enough
    name = rollout.rpartition("/")[2]
    return f"rollout {name} {_changes(revision, added, removed, breach, deleted)}"


def describe_rollout_diff(diff: Mapping[str, Any]) -> str:
    parsed = parse_rollout_diff(diff)
    if parsed is None:
        return f"rollout {diff.get('rollout')}: not a rollout diff"
    return _describe(
        parsed.rollout,
        parsed.revision,
        parsed.added,
        parsed.removed,
        parsed.max_failure_breach,
        parsed.deleted,
    )


def rollout_line(diff: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """(rollout, seq and trigger, the change, the set now and when the worker looks again) of a
    diff, for the demo's act log."""
    parsed = parse_rollout_diff(diff)
    if parsed is None:
        return str(diff.get("rollout")), "?", "", "not a rollout diff"
    head = f"seq {parsed.seq} ({parsed.trigger.get('kind')} {parsed.trigger.get('key')})"
    change = _changes(
        parsed.revision, parsed.added, parsed.removed, parsed.max_failure_breach, parsed.deleted
    )
    now = "deleted" if parsed.deleted else ", ".join(parsed.clusters) or "(none)"
    notes = []
    if parsed.max_failure_breach:
        notes.append("stopped")
    if parsed.complete:
        notes.append("complete")
    recheck = _instant(parsed.next_recheck_at)
    if recheck is not None:
        notes.append(f"recheck {recheck:%H:%M:%S} UTC")
    return parsed.rollout, head, change, f"{now}{'  [' + '; '.join(notes) + ']' if notes else ''}"
