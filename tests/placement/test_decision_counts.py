"""The decision counts Balance reads stay equal to a recount, whatever the sequence of writes.

`DecisionStore.put` moves only the names that differ when a source keeps its owner, and the
fleet keeps its per-slot counts in step from what `put`/`remove` report; both must end where
counting every source from scratch ends, including repeated names, owner changes, sources of
clusters the fleet does not have, and the highest count other placements reach (what Balance scores against).
"""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.placement import apply_object
from fleetplace.shared.placement.fleet import Fleet

from .builders import cluster

NAMES = [f"c{i}" for i in range(6)]  # c5 is never a cluster of the fleet
OWNERS = [("ns", "a"), ("ns", "b"), ("other", "a"), ("ns", None)]

write_st = st.one_of(
    st.tuples(
        st.just("put"),
        st.sampled_from(["s1", "s2", "s3", "s4"]),
        st.sampled_from(OWNERS),
        st.lists(st.sampled_from(NAMES), max_size=5),
    ),
    st.tuples(st.just("remove"), st.sampled_from(["s1", "s2", "s3", "s4"]), st.none(), st.none()),
)


def _fleet() -> Fleet:
    fleet = Fleet()
    for name in NAMES[:5]:
        apply_object(fleet, parse_object(cluster(name)))
    return fleet


@settings(max_examples=300, deadline=None)
@given(st.lists(write_st, max_size=25), st.integers(0, 24))
def test_counts_equal_a_recount(
    writes: list[tuple[str, str, tuple[str, str | None], list[str]]], read_at: int
) -> None:
    fleet = _fleet()
    sources: dict[str, tuple[str, str | None, list[str]]] = {}
    for step, (op, source, owner, names) in enumerate(writes):
        if step == read_at:
            fleet.decision_counts()  # the per-slot counts are then kept incrementally
        if op == "put":
            fleet.set_decisions(source, owner[0], owner[1], names)
            sources[source] = (owner[0], owner[1], names)
        else:
            fleet.remove_decisions(source)
            sources.pop(source, None)

    total: Counter[str] = Counter()
    own: dict[tuple[str, str], Counter[str]] = {}
    for namespace, placement, names in sources.values():
        total.update(names)
        if placement:
            own.setdefault((namespace, placement), Counter()).update(names)
    store = fleet.decisions
    assert dict(store.total) == dict(total)
    counts = fleet.decision_counts()
    for name in NAMES[:5]:
        slot = fleet.slot_of(name)
        assert slot is not None
        assert int(counts[slot]) == total[name], name
    for namespace, placement in [(ns, p) for ns, p in OWNERS if p]:
        mine = own.get((namespace, placement), Counter())
        assert dict(store.own(namespace, placement)) == dict(mine)
        others = [total[n] - mine[n] for n in total]
        assert store.max_count_excluding(store.own(namespace, placement)) == max([0, *others])
