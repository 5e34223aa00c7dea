"""The order in which one placement's decision slices are rewritten on the hub.

A decision is spread over slices (OCM PlacementDecisions or SIG-MC slices) of at most 100
clusters, and the API server replaces one object at a time. Rewriting them in page order lets a
cluster that moves from one slice to another vanish from every slice for a moment, and a consumer
that reads the slices then removes its workload from a cluster that never stopped being selected
(OCM's placement controller has this bug; its enhancement 171 proposes writing the union first,
then the final slices). The plan here keeps this rule after every single write:

    every cluster that is selected before and after the change is in at least one served slice.

It writes a slice in its final form as soon as every still-selected cluster it drops is held by
another served slice; slices that only gain clusters therefore go first, and a shift of clusters
along the pages is written from the last page back. When every remaining slice waits on another
(clusters moving both ways), one of them is first written as the union of its final clusters and
the ones it still must hold; if that union would exceed a slice's capacity, those clusters go to a
carry slice that is deleted at the end. Slices the new decision no longer has are deleted last.
Nothing is written for a slice that already holds its final clusters in their final order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Delete", "Step", "Write", "apply_step", "plan_moves", "served_clusters"]


@dataclass(frozen=True, slots=True)
class Write:
    """Create or replace slice `name` so that it holds `clusters`, in this order. `final`: the
    slice's desired form; otherwise a union or carry version the plan passes through."""

    name: str
    clusters: tuple[str, ...]
    final: bool = True


@dataclass(frozen=True, slots=True)
class Delete:
    name: str


Step = Write | Delete


def plan_moves(
    served: Mapping[str, Sequence[str]],
    desired: Mapping[str, Sequence[str]],
    *,
    capacity: int,
    carry_name: Callable[[int], str],
) -> list[Step]:
    """The writes that take the served slices (name → clusters) to the desired ones, in an order
    that never leaves a still-selected cluster outside every slice. `carry_name(i)`: the name of
    the i-th carry slice (a name neither side uses is picked by skipping taken ones)."""
    for name, clusters in desired.items():
        if len(clusters) > capacity:
            raise ValueError(f"slice {name} holds {len(clusters)} clusters, more than {capacity}")
    state: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in served.items()}
    final = {k: tuple(v) for k, v in desired.items()}
    selected = {c for clusters in final.values() for c in clusters}
    held: Counter[str] = Counter(c for clusters in state.values() for c in set(clusters))
    steps: list[Step] = []

    def write(name: str, clusters: tuple[str, ...], is_final: bool) -> None:
        held.subtract(set(state.get(name, ())))
        held.update(set(clusters))
        state[name] = clusters
        steps.append(Write(name, clusters, is_final))

    def stranded(name: str) -> list[str]:
        """Still-selected clusters that writing `name` in its final form would leave in no slice."""
        keep = set(final[name])
        return [c for c in state.get(name, ()) if c not in keep and c in selected and held[c] == 1]

    todo = [name for name in final if state.get(name) != final[name]]
    carries: list[str] = []
    while todo:
        before = len(todo)
        ready = [name for name in todo if not stranded(name)]
        for name in ready:
            # checked again: an earlier write of this round may have dropped the other copy of a
            # cluster this slice drops too
            if not stranded(name):
                write(name, final[name], True)
                todo.remove(name)
        if len(todo) < before:
            continue
        name = todo[0]
        waiting = stranded(name)
        union = final[name] + tuple(waiting)
        if len(union) <= capacity and state.get(name) != union:
            write(name, union, False)
            continue
        for start in range(0, len(waiting), capacity):
            carry = _free_name(carry_name, len(carries), state, final)
            carries.append(carry)
            write(carry, tuple(waiting[start : start + capacity]), False)
    for name in [*carries, *(n for n in served if n not in final)]:
        if name in state:
            held.subtract(set(state.pop(name)))
            steps.append(Delete(name))
    return steps


def _free_name(carry_name: Callable[[int], str], index: int, *taken: Mapping[str, object]) -> str:
    i = index
    while any(carry_name(i) in names for names in taken):
        i += 1
    return carry_name(i)


def apply_step(served: Mapping[str, Sequence[str]], step: Step) -> dict[str, tuple[str, ...]]:
    """The served slices after one step (what a watcher of the hub sees next)."""
    out = {k: tuple(v) for k, v in served.items()}
    if isinstance(step, Write):
        out[step.name] = step.clusters
    else:
        out.pop(step.name, None)
    return out


def served_clusters(served: Mapping[str, Sequence[str]]) -> set[str]:
    return {c for clusters in served.values() for c in clusters}
