"""Prioritizer weights for Additive and Exact modes, and their instantiation (spec §5.1)."""

from __future__ import annotations

from dataclasses import dataclass

from fleetplace.shared.api.ocm import PrioritizerPolicy
from fleetplace.shared.placement.framework import Code, Prioritizer, Status
from fleetplace.shared.placement.options import DEFAULT_OPTIONS, EngineOptions
from fleetplace.shared.placement.plugins.addon import AddOnScore
from fleetplace.shared.placement.plugins.balance import Balance
from fleetplace.shared.placement.plugins.prefer_no_select import PreferNoSelectPenalty
from fleetplace.shared.placement.plugins.resource import ResourceAllocatable
from fleetplace.shared.placement.plugins.steady import Steady

BUILT_INS = ("Balance", "Steady", "ResourceAllocatableCPU", "ResourceAllocatableMemory")


@dataclass(frozen=True, slots=True)
class Weighted:
    prioritizer: Prioritizer
    weight: int


class WeightError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.status = Status(Code.MISCONFIGURED, "", message)


def _builtin(name: str, options: EngineOptions) -> Prioritizer | None:
    if name == "Balance":
        return Balance()
    if name == "Steady":
        return Steady()
    if name == "ResourceAllocatableCPU":
        return ResourceAllocatable("cpu")
    if name == "ResourceAllocatableMemory":
        return ResourceAllocatable("memory")
    if name == "TaintToleration" and options.prefer_no_select == "penalize":
        return PreferNoSelectPenalty()
    return None


def resolve(policy: PrioritizerPolicy, options: EngineOptions = DEFAULT_OPTIONS) -> list[Weighted]:
    """Weighted prioritizers in configuration order; raises WeightError (Misconfigured)."""
    # The coordinate identity is (type, builtIn, addOn *object*): every AddOn entry is its own
    # coordinate, BuiltIn entries without addOn collapse with the later weight winning.
    table: dict[object, tuple[str, str, tuple[str, str] | None, int]] = {}
    if policy.mode in ("Additive", ""):
        table[("BuiltIn", "Balance")] = ("BuiltIn", "Balance", None, 1)
        table[("BuiltIn", "Steady")] = ("BuiltIn", "Steady", None, 1)
        if options.prefer_no_select == "penalize":
            table[("BuiltIn", "TaintToleration")] = ("BuiltIn", "TaintToleration", None, 1)
    elif policy.mode != "Exact":
        raise WeightError(f"incorrect prioritizer policy mode: {policy.mode}")
    for i, config in enumerate(policy.configurations):
        coord = config.score_coordinate
        if coord is None:
            raise WeightError("scoreCoordinate field is required")
        addon = (coord.add_on.resource_name, coord.add_on.score_name) if coord.add_on is not None else None
        key: object = (coord.type, coord.built_in) if addon is None else ("addon", i)
        table[key] = (coord.type, coord.built_in, addon, config.weight)
    out: list[Weighted] = []
    for ctype, builtin, addon, weight in table.values():
        if weight == 0:
            continue  # never instantiated, so never an error
        if ctype == "BuiltIn":
            p = _builtin(builtin, options)
            if p is None:
                raise WeightError(f"incorrect builtin prioritizer: {builtin}")
        elif addon is None:
            raise WeightError("addOn should not be empty")
        else:
            p = AddOnScore(addon[0], addon[1])
        out.append(Weighted(p, weight))
    return out
