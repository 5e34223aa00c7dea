"""One ingest for every consumer of the scheduler's inputs: a record becomes state or a rejection
with its reason, and switching the fan-out off changes what is marked dirty, never the state."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetplace.services.scheduler.core import SchedulerProcessor
from fleetplace.services.scheduler.ingest import Rejection, ingest
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeLimits
from fleetplace.shared.bus.records import Record
from tests.scheduler.test_core import T0, cluster, fleet, placement


def _record(topic: str, key: str | None, value: Any, offset: int = 0) -> Record:
    raw = value if isinstance(value, bytes) or value is None else orjson.dumps(value)
    return Record(topic, 0, offset, key, raw)


def test_a_record_that_cannot_be_decoded_or_applied_is_rejected_with_its_reason_and_changes_nothing() -> None:
    p = SchedulerProcessor()
    fleet(p)
    before = dict(p.fleet.clusters)
    not_json = ingest(p, "clusters", _record("clusters", "c9", b"{not json"), DEFAULT_LIMITS)
    wrong_kind = ingest(p, "clusters", _record("clusters", "c9", placement("ns", "p")), DEFAULT_LIMITS)
    wrong_key = ingest(p, "clusters", _record("clusters", "c8", cluster("c9")), DEFAULT_LIMITS)
    too_big = ingest(
        p, "clusters", _record("clusters", "c9", cluster("c9")), DecodeLimits(max_record_bytes=10)
    )
    assert all(isinstance(r, Rejection) for r in (not_json, wrong_kind, wrong_key, too_big))
    assert wrong_kind is not None and "expected kind ManagedCluster" in wrong_kind.reason
    assert wrong_key is not None and "does not match" in wrong_key.reason
    assert dict(p.fleet.clusters) == before
    assert ingest(p, "clusters", _record("clusters", "c9", cluster("c9")), DEFAULT_LIMITS) is None
    assert "c9" in p.fleet.clusters


def test_what_the_caller_takes_itself_is_not_applied() -> None:
    p = SchedulerProcessor()
    seen: list[str] = []

    def own(topic: str, decoded: Any) -> bool:
        seen.append(decoded.key)
        return topic == "clock"

    clock = {"now": "2026-01-01T00:00:00Z"}
    assert ingest(p, "clock", _record("clock", "scheduler", clock), DEFAULT_LIMITS, own=own) is None
    assert ingest(p, "clusters", _record("clusters", "c1", cluster("c1")), DEFAULT_LIMITS, own=own) is None
    assert seen == ["scheduler", "c1"] and list(p.fleet.clusters) == ["c1"]


labels = st.sampled_from([{}, {"tier": "gold"}, {"tier": "silver"}, {"region": "eu"}])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["c0", "c1", "c2", "c5"]), labels, st.booleans()), max_size=12))
def test_without_fan_out_the_state_is_the_same_and_nothing_is_marked(
    changes: list[tuple[str, dict[str, str], bool]],
) -> None:
    # both own every placement: what keeps the narrow one's dirty set empty is the fan-out
    # switched off, not a placement it does not own
    wide, narrow = SchedulerProcessor(), SchedulerProcessor(fan_out=False)
    for p in (wide, narrow):
        fleet(p)
        p.apply("placements", "ns1/p", placement("ns1", "p", clusterSets=["prod"]))
        p.evaluate(T0)
    for offset, (name, extra, delete) in enumerate(changes):
        value = None if delete else cluster(name, extra)
        for p in (wide, narrow):
            ingest(p, "clusters", _record("clusters", name, value, offset), DEFAULT_LIMITS)
    assert narrow.dirty == {}
    assert dict(narrow.fleet.clusters) == dict(wide.fleet.clusters)
    assert {k: c.labels for k, c in narrow.fleet.clusters.items()} == {
        k: c.labels for k, c in wide.fleet.clusters.items()
    }
    if any(delete and name in ("c1", "c2") for name, _, delete in changes):
        assert wide.dirty  # a cluster gone from the set re-evaluates the placement bound to it
