"""The rollouts as a reader of the four rollout topics (docs/rollouts.md) knows them — the
explorer, `fleetplace rollout status`: every Rollout object (`rollouts`), the deployers' latest
report per cluster (`rollout-status`), each rollout's diffs in seq order (`rollout-decisions`:
its timeline) and its current answer (`rollout-state`). Records that do not decode are skipped: the worker dead-letters them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from fleetplace.services.rollout.listing import Reported
from fleetplace.shared.api.rollouts import rollout_key_of_status
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeLimits, decode_object
from fleetplace.shared.bus.errors import DecodeError
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import ROLLOUT_DECISIONS, ROLLOUT_STATE, ROLLOUT_STATUS, ROLLOUTS

ROLLOUT_TOPICS = (ROLLOUTS, ROLLOUT_STATUS, ROLLOUT_DECISIONS, ROLLOUT_STATE)


def _record_time(timestamp_ms: int) -> str | None:
    if timestamp_ms < 0:
        return None
    return datetime.fromtimestamp(timestamp_ms / 1000, UTC).isoformat().replace("+00:00", "Z")


class RolloutBook:
    """What the rollout topics say now, and every rollout diff."""

    def __init__(self, limits: DecodeLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self.objects: dict[str, dict[str, Any]] = {}  # rollout key -> the Rollout document
        self.states: dict[str, dict[str, Any]] = {}  # rollout key -> its rollout-state record
        self._diffs: dict[str, dict[int, dict[str, Any]]] = {}  # rollout key -> seq -> diff
        # rollout key -> cluster -> (the revision reported, the report); read once, on arrival
        self._reports: dict[str, dict[str, tuple[object, Reported]]] = {}
        # rollout key -> (revision, its reports): kept until a report of the rollout arrives
        self._of_revision: dict[str, tuple[str | None, dict[str, Reported]]] = {}

    def add(self, topic: str, record: Record) -> None:
        """One record of a rollout topic (`topic` without the prefix)."""
        key = record.key
        if key is None:
            return
        try:
            value = decode_object(record.value, self.limits)
        except DecodeError:
            return
        if topic == ROLLOUTS:
            self._put(self.objects, key, value)
        elif topic == ROLLOUT_STATE:
            self._put(self.states, key, value)
        elif topic == ROLLOUT_DECISIONS:
            seq = None if value is None else value.get("seq")
            if value is not None and isinstance(seq, int):
                # a diff repeated after a takeover has the same content: the last one stands
                self._diffs.setdefault(key, {})[seq] = value
        elif topic == ROLLOUT_STATUS:
            try:
                rollout, cluster = rollout_key_of_status(key)
            except ValueError:
                return
            reports = self._reports.setdefault(rollout, {})
            self._of_revision.pop(rollout, None)
            status = None if value is None else value.get("status")
            if value is None or not isinstance(status, str):
                reports.pop(cluster, None)
            else:
                since, message = value.get("lastTransitionTime"), value.get("message")
                reported = Reported(
                    status,
                    since if isinstance(since, str) else _record_time(record.timestamp_ms),
                    message if isinstance(message, str) else None,
                )
                reports[cluster] = (value.get("revision"), reported)

    @staticmethod
    def _put(table: dict[str, dict[str, Any]], key: str, value: dict[str, Any] | None) -> None:
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value

    # ---- reading ---------------------------------------------------------------------------
    def rollout_keys(self) -> list[str]:
        """Every rollout that exists now or has diffs."""
        return sorted(set(self.objects) | set(self.states) | set(self._diffs))

    def timeline(self, key: str) -> list[dict[str, Any]]:
        """The rollout's diffs in seq order."""
        diffs = self._diffs.get(key, {})
        return [diffs[seq] for seq in sorted(diffs)]

    def latest(self, key: str) -> dict[str, Any] | None:
        diffs = self._diffs.get(key)
        return diffs[max(diffs)] if diffs else None

    def revision(self, key: str) -> str | None:
        """The revision being rolled out: the state's, else the object's, else the last diff's."""
        state = self.states.get(key)
        if state is not None:
            return str(state.get("revision"))
        spec = (self.objects.get(key) or {}).get("spec") or {}
        if "revision" in spec:
            return str(spec["revision"])
        latest = self.latest(key)
        return str(latest["revision"]) if latest is not None and "revision" in latest else None

    def placements(self, key: str) -> list[str]:
        """The names of the placements the rollout references (the object's, else the state's, else
        the last diff's)."""
        spec = (self.objects.get(key) or {}).get("spec") or {}
        refs = spec.get("placementRefs")
        if isinstance(refs, list):
            return [str(r.get("name")) for r in refs if isinstance(r, Mapping)]
        known = (self.states.get(key) or self.latest(key) or {}).get("placements") or ()
        return [str(p.get("name")) for p in known if isinstance(p, Mapping)]

    def strategy(self, key: str, placement: str) -> Mapping[str, Any]:
        spec = (self.objects.get(key) or {}).get("spec") or {}
        for ref in spec.get("placementRefs") or ():
            if isinstance(ref, Mapping) and ref.get("name") == placement:
                strategy = ref.get("rolloutStrategy")
                return strategy if isinstance(strategy, Mapping) else {"type": "All"}
        return {}

    def reports(self, key: str, revision: str | None) -> dict[str, Reported]:
        """The deployers' reports of `revision` (another revision's report counts as none)."""
        kept = self._of_revision.get(key)
        if kept is not None and kept[0] == revision:
            return kept[1]
        out = {c: r for c, (rev, r) in self._reports.get(key, {}).items() if rev == revision}
        self._of_revision[key] = (revision, out)
        return out

    def referencing(self, placement: str) -> list[str]:
        """The rollouts whose placementRefs name `placement` (`<namespace>/<name>`)."""
        namespace, _, name = placement.partition("/")
        return [
            k for k in self.rollout_keys() if k.partition("/")[0] == namespace and name in self.placements(k)
        ]
