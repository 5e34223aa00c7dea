"""The prioritizers the engine knows: the one table that names them.

A score coordinate of type BuiltIn names its prioritizer by `builtIn` (`BUILT_IN` maps that name
to a factory, which may return None when the prioritizer is switched off by the engine options,
so that naming it is an error as in OCM); a coordinate of type AddOn is scored by `AddOnScore`.
Adding a prioritizer is one module in this folder and one entry here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from fleetplace.shared.placement.framework import Prioritizer
from fleetplace.shared.placement.options import EngineOptions
from fleetplace.shared.placement.plugins.addon import AddOnScore
from fleetplace.shared.placement.plugins.balance import Balance
from fleetplace.shared.placement.plugins.prefer_no_select import PreferNoSelectPenalty
from fleetplace.shared.placement.plugins.resource import ResourceAllocatable
from fleetplace.shared.placement.plugins.steady import Steady

Factory = Callable[[EngineOptions], Prioritizer | None]


# A prioritizer keeps nothing between runs (what it derives lives in the fleet's memos), so one
# instance of each serves every plan, and resolving a policy constructs none.
_BALANCE = Balance()
_STEADY = Steady()
_CPU = ResourceAllocatable("cpu")
_MEMORY = ResourceAllocatable("memory")
_PREFER_NO_SELECT = PreferNoSelectPenalty()


def _prefer_no_select(options: EngineOptions) -> Prioritizer | None:
    return _PREFER_NO_SELECT if options.prefer_no_select == "penalize" else None


BUILT_IN: dict[str, Factory] = {
    "Balance": lambda options: _BALANCE,
    "Steady": lambda options: _STEADY,
    "ResourceAllocatableCPU": lambda options: _CPU,
    "ResourceAllocatableMemory": lambda options: _MEMORY,
    "TaintToleration": _prefer_no_select,
}


def built_in(name: str, options: EngineOptions) -> Prioritizer | None:
    """The BuiltIn prioritizer of this name, or None when there is none (with these options)."""
    factory = BUILT_IN.get(name)
    return None if factory is None else factory(options)


@functools.lru_cache(maxsize=1024)
def addon(resource: str, score_name: str) -> Prioritizer:
    """The prioritizer of an AddOn score coordinate (one instance per coordinate, like the
    built-ins; a few coordinates are in use at a time)."""
    return AddOnScore(resource, score_name)
