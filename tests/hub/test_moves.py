"""The move plan: every served version keeps every still-selected cluster, ends at the desired
slices, respects the capacity, and writes nothing when nothing changed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetplace.services.hub.moves import Delete, Write, apply_step, plan_moves, served_clusters


def carry(i: int) -> str:
    return f"p-carry-{i}"


def replay(
    served: Mapping[str, Sequence[str]], desired: Mapping[str, Sequence[str]], capacity: int
) -> list[dict[str, tuple[str, ...]]]:
    """Every version a watcher of the hub sees, the served one first."""
    steps = plan_moves(served, desired, capacity=capacity, carry_name=carry)
    versions = [{k: tuple(v) for k, v in served.items()}]
    for step in steps:
        versions.append(apply_step(versions[-1], step))
    return versions


def pages(clusters: Sequence[str], capacity: int, prefix: str = "p-") -> dict[str, tuple[str, ...]]:
    chunks = [tuple(clusters[i : i + capacity]) for i in range(0, len(clusters), capacity)] or [()]
    return {f"{prefix}{i}": chunk for i, chunk in enumerate(chunks)}


def test_a_cluster_inserted_on_the_first_page_shifts_the_pages_from_the_last_one_back() -> None:
    served = pages(["c1", "c2", "c3", "c4", "c5"], 2)  # p-0 c1 c2 | p-1 c3 c4 | p-2 c5
    desired = pages(["c0", "c1", "c2", "c3", "c4", "c5"], 2)  # c0 c1 | c2 c3 | c4 c5
    steps = plan_moves(served, desired, capacity=2, carry_name=carry)
    assert steps == [
        Write("p-2", ("c4", "c5")),
        Write("p-1", ("c2", "c3")),
        Write("p-0", ("c0", "c1")),
    ]


def test_clusters_swapping_slices_go_through_a_union_first() -> None:
    served = {"p-0": ("a", "x"), "p-1": ("b", "y")}
    desired = {"p-0": ("a", "y"), "p-1": ("b", "x")}
    steps = plan_moves(served, desired, capacity=3, carry_name=carry)
    assert steps[0] == Write("p-0", ("a", "y", "x"), final=False)
    assert steps[1:] == [Write("p-1", ("b", "x")), Write("p-0", ("a", "y"))]


def test_a_full_slice_that_cannot_hold_the_union_moves_its_clusters_through_a_carry_slice() -> None:
    served = {"p-0": ("a", "x"), "p-1": ("b", "y")}
    desired = {"p-0": ("a", "y"), "p-1": ("b", "x")}
    steps = plan_moves(served, desired, capacity=2, carry_name=carry)
    assert steps[0] == Write("p-carry-0", ("x",), final=False)
    assert steps[-1] == Delete("p-carry-0")
    for version in replay(served, desired, 2)[1:]:
        assert {"a", "b", "x", "y"} <= served_clusters(version)


def test_a_carry_slice_never_takes_a_name_in_use() -> None:
    served = {"p-0": ("a", "x"), "p-1": ("b", "y"), "p-carry-0": ()}
    desired = {"p-0": ("a", "y"), "p-1": ("b", "x"), "p-carry-0": ()}
    steps = plan_moves(served, desired, capacity=2, carry_name=carry)
    assert Write("p-carry-1", ("x",), final=False) in steps
    assert Delete("p-carry-0") not in steps


def test_nothing_is_written_when_the_hub_serves_the_desired_slices() -> None:
    served = pages([f"c{i}" for i in range(7)], 3)
    assert plan_moves(served, dict(served), capacity=3, carry_name=carry) == []


def test_a_reordered_slice_is_rewritten() -> None:
    assert plan_moves({"p-0": ("b", "a")}, {"p-0": ("a", "b")}, capacity=2, carry_name=carry) == [
        Write("p-0", ("a", "b"))
    ]


def test_slices_the_decision_no_longer_has_are_deleted_after_every_write() -> None:
    served = pages(["c1", "c2", "c3", "c4"], 2)
    desired = pages(["c3", "c4"], 2)
    steps = plan_moves(served, desired, capacity=2, carry_name=carry)
    assert steps == [Write("p-0", ("c3", "c4")), Delete("p-1")]


names = st.sampled_from([f"c{i:02d}" for i in range(24)])


@st.composite
def slicings(draw: st.DrawFn, capacity: int) -> dict[str, tuple[str, ...]]:
    """A placement's slices: distinct clusters, in one or more groups, paged by `capacity`."""
    clusters = draw(st.lists(names, unique=True, max_size=20))
    cut = draw(st.integers(min_value=0, max_value=len(clusters)))
    first, second = clusters[:cut], clusters[cut:]
    out = pages(sorted(first), capacity)
    for i, chunk in enumerate(pages(sorted(second), capacity).values()):
        if chunk:
            out[f"p-{len(out) + i}"] = chunk
    return out


@settings(max_examples=400, deadline=None)
@given(data=st.data(), capacity=st.integers(min_value=1, max_value=5))
def test_no_served_version_lacks_a_cluster_that_stays_selected(data: st.DataObject, capacity: int) -> None:
    served = data.draw(slicings(capacity))
    desired = data.draw(slicings(capacity))
    versions = replay(served, desired, capacity)
    staying = served_clusters(served) & served_clusters(desired)
    for version in versions:
        assert staying <= served_clusters(version)
        assert all(len(clusters) <= capacity for clusters in version.values())
    assert versions[-1] == desired


@settings(max_examples=200, deadline=None)
@given(data=st.data(), capacity=st.integers(min_value=1, max_value=4))
def test_any_served_slices_converge_without_losing_a_cluster(data: st.DataObject, capacity: int) -> None:
    """Slices someone else left behind (duplicates, odd names, overfull) converge all the same."""
    slice_names = st.sampled_from(["p-0", "p-1", "p-2", "p-3", "other"])
    served = data.draw(st.dictionaries(slice_names, st.lists(names, max_size=6).map(tuple), max_size=4))
    desired = data.draw(slicings(capacity))
    versions = replay(served, desired, capacity)
    staying = served_clusters(served) & served_clusters(desired)
    for version in versions:
        assert staying <= served_clusters(version)
    assert versions[-1] == desired
