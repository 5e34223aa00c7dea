"""Prioritizer weights for Additive and Exact modes, and their instantiation.

Additive mode starts from Balance and Steady at weight 1 (and the PreferNoSelect penalty when the
engine options switch it on) and lets the configurations add to or override them; Exact mode uses
the configurations alone. A coordinate configured with weight 0 is never instantiated.
"""

from __future__ import annotations

from dataclasses import dataclass

from fleetplace.shared.api.ocm import PrioritizerPolicy, ScoreCoordinate
from fleetplace.shared.placement.framework import Code, Prioritizer, Status
from fleetplace.shared.placement.options import DEFAULT_OPTIONS, EngineOptions
from fleetplace.shared.placement.plugins import registry
from fleetplace.shared.placement.reads import NOTHING, Reads

# the prioritizer policy modes; OCM's API leaves `mode` a free string (its default is Additive)
MODES = ("Additive", "Exact")


@dataclass(slots=True)
class Weighted:
    prioritizer: Prioritizer
    weight: int


class WeightError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.status = Status(Code.MISCONFIGURED, "", message)


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
    elif policy.mode not in MODES:
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
            p = registry.built_in(builtin, options)
            if p is None:
                raise WeightError(f"incorrect builtin prioritizer: {builtin}")
        elif addon is None:
            raise WeightError("addOn should not be empty")
        else:
            p = registry.addon(addon[0], addon[1])
        out.append(Weighted(p, weight))
    return out


def _coordinate_reads(coord: ScoreCoordinate, options: EngineOptions) -> Reads:
    if coord.type == "BuiltIn":
        p = registry.built_in(coord.built_in, options)
        return NOTHING if p is None else p.reads
    if coord.add_on is not None:
        return registry.addon(coord.add_on.resource_name, coord.add_on.score_name).reads
    return NOTHING


def prioritizer_reads(policy: PrioritizerPolicy, options: EngineOptions = DEFAULT_OPTIONS) -> Reads:
    """What the configured prioritizers read of the clusters, whatever their weight (so that
    a misconfigured or zero-weighted coordinate is read as it will be once fixed)."""
    reads = NOTHING
    try:
        for w in resolve(policy, options):  # the Additive mode's defaults among them
            reads = reads | w.prioritizer.reads
    except WeightError:
        pass  # the run stops before any prioritizer reads anything
    for config in policy.configurations:
        if config.score_coordinate is not None:
            reads = reads | _coordinate_reads(config.score_coordinate, options)
    return reads
