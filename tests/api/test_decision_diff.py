"""The one DecisionDiff type: what the worker writes reads back to the same record, what is not a
DecisionDiff is refused with the field named, and the AsyncAPI view describes the same fields."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic.alias_generators import to_camel

from fleetplace.shared.api._decision_schema import DecisionDiff as DecisionDiffSchema
from fleetplace.shared.api.decisions import (
    DECIDED,
    DecisionDiff,
    DecisionGroup,
    DecisionTrigger,
    InvalidDecisionDiff,
)

names = st.lists(st.sampled_from(["c1", "c2", "c3", "c4"]), unique=True).map(tuple)


@st.composite
def diffs(draw: st.DrawFn) -> DecisionDiff:
    deleted = draw(st.booleans())
    return DecisionDiff(
        placement=draw(st.sampled_from(["ns/a", "team-1/web"])),
        seq=draw(st.integers(1, 10**6)),
        evaluated_at=draw(st.sampled_from(["2026-01-01T00:00:00Z", "2026-01-01T00:00:00.250000Z"])),
        trigger=DecisionTrigger(draw(st.sampled_from(["cluster", "resync"])), "c1"),
        generation=draw(st.integers(0, 5)),
        added=draw(names),
        removed=draw(names),
        decisions=() if deleted else draw(names),
        groups=tuple(
            DecisionGroup(f"g{i}", i, clusters)
            for i, clusters in enumerate(draw(st.lists(names, max_size=3)))
        ),
        scores=dict(
            sorted(draw(st.dictionaries(st.sampled_from(["c1", "c2"]), st.integers(-100, 100))).items())
        ),
        status={} if deleted else {"numberOfSelectedClusters": 1, "conditions": []},
        next_requeue_at=draw(st.sampled_from([None, "2026-01-01T00:05:00Z"])),
        inputs=draw(st.dictionaries(st.sampled_from(["clusters/0", "placements/3"]), st.integers(0, 99))),
        deleted=deleted,
        sort_by=draw(st.sampled_from([None, "Score"])),
    )


@settings(max_examples=200, deadline=None)
@given(diffs())
def test_a_written_diff_reads_back_equal_through_json(diff: DecisionDiff) -> None:
    value = orjson.loads(orjson.dumps(diff.to_value()))
    assert DecisionDiff.from_value(value) == diff
    assert DecisionDiff.from_value(value).to_value() == value


@settings(max_examples=200, deadline=None)
@given(diffs(), st.randoms(use_true_random=False))
def test_the_decided_fields_of_a_diff_are_those_of_its_record(diff: DecisionDiff, rng: Any) -> None:
    items = list(diff.scores.items())
    rng.shuffle(items)
    diff.scores = dict(items)  # built in any order: written by cluster name
    written = diff.to_value()
    assert list(written["scores"]) == sorted(diff.scores)
    assert diff.decided_value() == DecisionDiff.decided(orjson.loads(orjson.dumps(written)))


def test_the_written_fields_are_those_the_asyncapi_schema_describes() -> None:
    written = DecisionDiff(
        "ns/a", 1, "2026-01-01T00:00:00Z", DecisionTrigger("cluster", "c1"), deleted=True, sort_by="Score"
    ).to_value()
    described = {to_camel(name) for name in DecisionDiffSchema.model_fields}
    assert set(written) == described
    assert set(DECIDED) < described
    DecisionDiffSchema.model_validate(written)  # and the schema accepts what is written


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"placement": "no-namespace"}, "placement"),
        ({"seq": 0}, "seq"),
        ({"seq": "2"}, "seq"),
        ({"groups": [{"clusters": []}]}, "groupName"),
        ({"decisions": "c1"}, "decisions"),
        ({"scores": {"c1": "high"}}, "scores"),
        ({"deleted": "yes"}, "deleted"),
        ({"sortBy": "Name"}, "sortBy"),
    ],
)
def test_a_value_that_is_not_a_decision_diff_is_refused_with_the_field_named(
    change: dict[str, Any], named: str
) -> None:
    value = {"placement": "ns/a", "seq": 1, "evaluatedAt": "2026-01-01T00:00:00Z", **change}
    with pytest.raises(InvalidDecisionDiff, match=named):
        DecisionDiff.from_value(value)


def test_the_decided_fields_of_a_record_fill_in_what_the_worker_leaves_out() -> None:
    decided = DecisionDiff.decided({"placement": "ns/a", "seq": 2, "decisions": ["c1"]})
    assert decided == {
        "deleted": False,
        "generation": 0,
        "decisions": ["c1"],
        "groups": [],
        "status": {},
        "scores": {},
        "added": [],
        "removed": [],
        "sortBy": None,
    }
