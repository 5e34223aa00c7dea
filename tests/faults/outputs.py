"""Read what the workers published and check the delivery guarantees against a fault-free answer.

The guarantees (docs/operations.md): per placement, `decisions` holds one record per change of
state, `seq` 1, 2, 3, … with no gap and no repeat, never the same state twice in a row; the last
record equals the fault-free decision; `placement-decisions` ends on the same seq.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fleetplace.shared.bus.codec import decode_object
from fleetplace.shared.bus.kafka import BroadcastReader
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import Topics
from tests.bus_harness import BackgroundReader
from tests.faults.fleet import Decision


@dataclass(frozen=True, slots=True)
class Published:
    partition: int
    offset: int
    key: str
    value: dict[str, Any] | None
    raw: bytes | None


class Outputs:
    """Follows `decisions`, `placement-decisions` and `deadletter` from the beginning (reconnects by itself)."""

    def __init__(self, bootstrap: str, topics: Topics) -> None:
        self.topics = topics
        self._reader = BackgroundReader(
            bootstrap,
            [topics.decisions, topics.placement_decisions, topics.deadletter],
            self._add_all,
            max_records=20_000,
        )
        self.decisions: list[Published] = []
        self.placement_decisions: list[Published] = []
        self.deadletters: list[Published] = []

    async def __aenter__(self) -> Outputs:
        await self._reader.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._reader.__aexit__(*exc)

    def _add_all(self, records: Sequence[Record]) -> None:
        for r in records:
            self._add(r)

    def _add(self, r: Record) -> None:
        try:
            value = decode_object(r.value)
        except Exception:
            value = None
        item = Published(r.partition, r.offset, r.key or "", value, r.value)
        if r.topic == self.topics.decisions:
            self.decisions.append(item)
        elif r.topic == self.topics.placement_decisions:
            self.placement_decisions.append(item)
        else:
            self.deadletters.append(item)

    def latest(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for d in self.decisions:
            if d.value is not None and (d.key not in out or d.value["seq"] >= out[d.key]["seq"]):
                out[d.key] = d.value
        return out

    def diverging(self, expected: dict[str, Decision], placements: set[str]) -> list[str]:
        """Placements whose last decision differs from the fault-free one (empty when converged)."""
        return diverging(self.latest(), expected, placements)


def _state(value: dict[str, Any]) -> Decision:
    groups = [(g["groupName"], int(g["groupIndex"]), list(g["clusters"])) for g in value.get("groups") or []]
    return list(value.get("decisions") or []), groups


def diverging(
    latest: dict[str, dict[str, Any]], expected: dict[str, Decision], placements: set[str]
) -> list[str]:
    out = []
    for key in sorted(placements | set(expected)):
        last = latest.get(key)
        if key in expected:
            if last is None or last.get("deleted") or _state(last) != expected[key]:
                got = None if last is None else ("deleted" if last.get("deleted") else _state(last))
                out.append(f"{key}: got {got}, expected {expected[key]}")
        elif last is not None and not last.get("deleted"):
            out.append(f"{key}: deleted, but the last decision is {_state(last)}")
    return out


@dataclass
class Verdict:
    """What the published records show. Every list must be empty."""

    placements: int = 0
    diffs: int = 0
    mismatches: list[str] = field(default_factory=list)
    seq_gaps: list[str] = field(default_factory=list)
    seq_repeats_identical: list[str] = field(default_factory=list)  # the same record delivered twice
    seq_repeats_conflicting: list[str] = field(default_factory=list)  # two writers, one seq
    same_state_twice: list[str] = field(default_factory=list)
    placement_decisions_stale: list[str] = field(default_factory=list)
    deadletters: int = 0

    def figures(self) -> dict[str, int]:
        return {
            "placements": self.placements,
            "diffs": self.diffs,
            "mismatches": len(self.mismatches),
            "seq_gaps": len(self.seq_gaps),
            "seq_repeats_identical": len(self.seq_repeats_identical),
            "seq_repeats_conflicting": len(self.seq_repeats_conflicting),
            "same_state_twice": len(self.same_state_twice),
            "placement_decisions_stale": len(self.placement_decisions_stale),
            "deadletters": self.deadletters,
        }

    def problems(self, *, allow_retry_duplicates: bool = False) -> list[str]:
        """Everything wrong. Byte-identical repeats are one record delivered twice by a producer
        retry; `allow_retry_duplicates` accepts them where acknowledgements can be lost (a broker
        restart) and idempotent producers are unavailable (the embedded broker)."""
        return [
            *self.mismatches,
            *self.seq_gaps,
            *([] if allow_retry_duplicates else self.seq_repeats_identical),
            *self.seq_repeats_conflicting,
            *self.same_state_twice,
            *self.placement_decisions_stale,
        ]


def _comparable(value: dict[str, Any]) -> tuple[Any, ...]:
    return (value.get("decisions"), value.get("groups"), value.get("status"), bool(value.get("deleted")))


def verdict(
    decisions: list[Published],
    placement_decisions: list[Published],
    expected: dict[str, Decision],
    placements: set[str],
    deadletters: int = 0,
) -> Verdict:
    v = Verdict(diffs=len(decisions), deadletters=deadletters)
    by_key: dict[str, list[Published]] = defaultdict(list)
    for d in sorted(decisions, key=lambda d: (d.partition, d.offset)):  # a key lives in one partition
        by_key[d.key].append(d)
    v.placements = len(by_key)
    for key, records in sorted(by_key.items()):
        expected_seq = 1
        previous: dict[str, Any] | None = None
        seen: dict[int, bytes | None] = {}
        for r in records:
            value = r.value
            if value is None:
                continue
            seq = int(value["seq"])
            if seq in seen:  # a seq published again: the same bytes (a redelivery) or two writers
                kind = v.seq_repeats_identical if seen[seq] == r.raw else v.seq_repeats_conflicting
                kind.append(f"{key}: seq {seq} published again at offset {r.offset}")
                continue
            if seq != expected_seq:
                v.seq_gaps.append(f"{key}: seq {seq} at offset {r.offset}, expected {expected_seq}")
            if previous is not None and _comparable(previous) == _comparable(value):
                v.same_state_twice.append(f"{key}: seq {seq} repeats the state of seq {previous['seq']}")
            seen[seq] = r.raw
            previous, expected_seq = value, seq + 1
    latest: dict[str, dict[str, Any]] = {}
    for d in decisions:
        if d.value is not None and (d.key not in latest or d.value["seq"] >= latest[d.key]["seq"]):
            latest[d.key] = d.value
    v.mismatches = diverging(latest, expected, placements)
    last_pd: dict[str, dict[str, Any] | None] = {}
    for p in sorted(placement_decisions, key=lambda d: (d.partition, d.offset)):
        last_pd[p.key] = p.value
    for key, value in sorted(latest.items()):
        pd = last_pd.get(key, "missing")
        if value.get("deleted"):
            if pd is not None:
                v.placement_decisions_stale.append(f"{key}: deleted, but placement-decisions has {pd}")
        elif not isinstance(pd, dict) or pd.get("seq") != value["seq"]:
            seq = pd.get("seq") if isinstance(pd, dict) else pd
            v.placement_decisions_stale.append(
                f"{key}: placement-decisions at seq {seq}, decisions at {value['seq']}"
            )
    return v


async def read_all(bootstrap: str, topics: Topics, timeout: float = 120) -> Outputs:
    """Every output record up to now, read afresh from the beginning (the truth, not the live view)."""
    outputs = Outputs(bootstrap, topics)
    async with BroadcastReader(
        bootstrap, [topics.decisions, topics.placement_decisions, topics.deadletter], max_records=20_000
    ) as reader:
        for r in await reader.read_to_end(timeout=timeout):
            outputs._add(r)
    return outputs
