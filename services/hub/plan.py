"""The writes that bring one placement's slices on the hub to what the scheduler published.

The order comes from the move plan (`moves.py`), so no still-selected cluster is ever missing
from every served slice; a slice whose clusters are already right but whose other fields are not
(a reason, a label, the decision's seq) is rewritten in place after the moves, which cannot lose a
cluster. When the hub already serves the desired objects, the plan is empty: the bridge writes
nothing.

Every `Put` and `Remove` carries the served object it replaces, so the sink writes with that
object's `resourceVersion` and the API server refuses the write (409) if the slice changed since
it was read — the plan is only safe for the served state it was made from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fleetplace.services.hub.desired import SliceFormat
from fleetplace.services.hub.moves import Write, plan_moves

__all__ = ["Put", "Remove", "plan_placement"]

Obj = dict[str, Any]


@dataclass(frozen=True)
class Put:
    """Create `desired` (when `served` is None) or replace `served` with it."""

    name: str
    desired: Obj
    served: Obj | None
    final: bool = True


@dataclass(frozen=True)
class Remove:
    name: str
    served: Obj


Operation = Put | Remove


def plan_placement(
    fmt: SliceFormat,
    placement_name: str,
    served: Mapping[str, Obj],
    desired: Mapping[str, Obj],
) -> list[Operation]:
    """The operations, in order, that take the `served` slices of one placement to `desired`."""
    entries = fmt.entries(desired.values())
    in_use = max(len(served), len(desired))
    steps = plan_moves(
        {n: fmt.clusters(o) for n, o in served.items()},
        {n: fmt.clusters(o) for n, o in desired.items()},
        capacity=fmt.capacity,
        carry_name=fmt.carry_name(placement_name, in_use),
    )
    template = next(iter(desired.values()), None)
    current: dict[str, Obj | None] = dict(served)
    ops: list[Operation] = []
    written_final: set[str] = set()
    removes: list[Operation] = []
    for step in steps:
        if isinstance(step, Write):
            if step.final:
                obj = desired[step.name]
                written_final.add(step.name)
            else:
                base = desired.get(step.name, template)
                assert base is not None  # a union or carry exists only on the way to some slice
                obj = fmt.version(base, step.name, step.clusters, entries)
            ops.append(Put(step.name, obj, current.get(step.name), step.final))
            current[step.name] = obj
        else:
            gone = current.pop(step.name, None)
            if gone is not None:
                removes.append(Remove(step.name, gone))
    for name, obj in desired.items():
        if name in written_final:
            continue
        was = served.get(name)
        if was is None or fmt.owned(was) != fmt.owned(obj):
            ops.append(Put(name, obj, was))
    return ops + removes
