"""Grouping decision records back into evaluation batches (hypothesis): the grouping depends on
the records' batch fields only, never on which records happen to share a watermark object or on
where they lie."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetplace.services.auditor.batches import group_batches
from fleetplace.services.auditor.history import DecisionRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)
WATERMARKS = [(("clusters/0", 3), ("placements/0", 1)), (("clusters/0", 5),), ()]


@st.composite
def records(draw: st.DrawFn) -> list[DecisionRecord]:
    count = draw(st.integers(0, 40))
    out = []
    for offset in range(count):
        source = draw(st.sampled_from(["a", "b"]))
        second = draw(st.integers(0, 2))
        # a fresh tuple or a shared one: equal watermarks are not always the same object
        inputs = WATERMARKS[draw(st.integers(0, len(WATERMARKS) - 1))]
        if draw(st.booleans()):
            inputs = tuple(list(inputs))
        key = f"ns/p{draw(st.integers(0, 5))}"
        out.append(
            DecisionRecord(
                key,
                draw(st.integers(0, 1)),
                offset,
                source,
                {"placement": key},
                draw(st.integers(1, 3)),
                f"2026-01-01T00:00:0{second}Z",
                T0 + timedelta(seconds=second),
                inputs,
            )
        )
    return out


def _naive(records: list[DecisionRecord]) -> dict[tuple[object, ...], list[tuple[int, int]]]:
    groups: dict[tuple[object, ...], list[tuple[int, int]]] = {}
    for r in records:
        groups.setdefault((r.source, r.evaluated_at, r.inputs), []).append((r.partition, r.offset))
    return {k: sorted(v) for k, v in groups.items()}


@settings(max_examples=200, deadline=None)
@given(records(), st.randoms())
def test_batches_hold_exactly_the_records_with_the_same_batch_fields(
    rs: list[DecisionRecord], rnd: object
) -> None:
    batches = group_batches(rs)
    got = {
        (b.source, b.evaluated_at, b.inputs): sorted((d.partition, d.offset) for d in b.diffs)
        for b in batches
    }
    assert got == _naive(rs)
    assert len(batches) == len(got)  # one batch per distinct (source, evaluatedAt, inputs)
    for b in batches:
        assert [(d.key, d.seq) for d in b.diffs] == sorted((d.key, d.seq) for d in b.diffs)
    shuffled = list(rs)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    again = group_batches(shuffled)
    assert [(b.source, b.evaluated_at, b.inputs) for b in again] == [
        (b.source, b.evaluated_at, b.inputs) for b in batches
    ]
