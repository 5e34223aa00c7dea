"""The replay's view of `decisions` is the worker's: every record applied in offset order (hypothesis).

The replay applies only the first record of the highest seq per placement when it can parse
every record of a range, and falls back to offset order when it cannot (a record the auditor
rejects may still be one the worker's processor takes).
"""

from __future__ import annotations

import contextlib
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetplace.services.auditor.history import History
from fleetplace.services.auditor.replay import SourceReplay
from fleetplace.services.scheduler.core import InvalidRecord, SchedulerProcessor
from fleetplace.shared.bus.codec import decode_record
from fleetplace.shared.bus.records import Record

KEYS = ["ns/a", "ns/b"]


@st.composite
def decision_records(draw: st.DrawFn) -> list[Record]:
    records = []
    for offset in range(draw(st.integers(0, 12))):
        key = draw(st.sampled_from(KEYS))
        value: dict[str, Any] = {
            "placement": key,
            "seq": draw(st.integers(1, 4)),
            "evaluatedAt": "2026-01-01T00:00:00Z",
            "decisions": [draw(st.sampled_from(["c1", "c2", "c3"]))],
            "inputs": {"clusters/0": 1},
        }
        flaw = draw(st.sampled_from(["none"] * 6 + ["no inputs", "deleted", "tombstone", "broken groups"]))
        if flaw == "no inputs":
            del value["inputs"]  # the auditor rejects it; the worker's processor takes it
        elif flaw == "deleted":
            value["deleted"] = True
        elif flaw == "broken groups":
            value["groups"] = [{"clusters": []}]  # both reject it
        raw = None if flaw == "tombstone" else orjson.dumps(value)
        records.append(Record("decisions", 0, offset, key, raw))
    return records


def _workers_view(records: list[Record]) -> dict[str, tuple[int, tuple[str, ...], bool]]:
    processor = SchedulerProcessor()
    for record in records:
        decoded = decode_record(record)
        with contextlib.suppress(InvalidRecord):  # dead-lettered
            processor.apply("decisions", decoded.key, decoded.value)
    return {k: (p.seq, p.decisions, p.deleted) for k, p in processor.published.items()}


@settings(max_examples=300, deadline=None)
@given(decision_records(), st.integers(0, 12))
def test_the_replay_holds_the_decisions_the_worker_holds_at_any_watermark(
    records: list[Record], cut: int
) -> None:
    replay = SourceReplay(History.of(records))
    replay.advance({("decisions", 0): cut})  # a stretch starting there, then the rest
    replay.advance({("decisions", 0): len(records)})
    ours = {k: (p.seq, p.decisions, p.deleted) for k, p in replay.processor.published.items()}
    assert ours == _workers_view(records)
