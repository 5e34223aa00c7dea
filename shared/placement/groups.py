"""Decision groups and PlacementDecision pages.

Each configured group takes the selected clusters its selector matches and not taken by an
earlier group; the rest form the unnamed group. A group larger than clustersPerDecisionGroup
(a count or a percentage of the selection, rounded up) is split into several.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fleetplace.shared.api.ocm import GroupStrategy, Placement, decision_page_name
from fleetplace.shared.placement.fleet import ClusterInfo
from fleetplace.shared.placement.reads import NOTHING, Reads
from fleetplace.shared.placement.selectors import (
    EVERYTHING,
    CompiledSelector,
    SelectorError,
    compile_label_selector,
    compile_requirements,
)

PAGE_SIZE = 100


@dataclass(slots=True)
class DecisionGroupResult:
    """One decision group of a run (read-only by convention, see `Page`)."""

    name: str
    index: int
    clusters: tuple[str, ...]


@dataclass(slots=True)
class Page:
    """One PlacementDecision's worth of a group. Read-only by convention, not frozen: a frozen
    dataclass sets each field through `object.__setattr__`, which made building one cost twice
    as much, and every run builds its groups and pages."""

    name: str  # <placement>-decision-<k>
    group_name: str
    group_index: int
    clusters: tuple[str, ...]


class GroupError(Exception):
    pass


_GO_DEC = re.compile(r"^(?:[0-9](?:_?[0-9])*)?(?:\.(?:[0-9](?:_?[0-9])*)?)?(?:[eE][+-]?[0-9](?:_?[0-9])*)?$")
_GO_HEX = re.compile(
    r"^0[xX](?:_?[0-9a-fA-F](?:_?[0-9a-fA-F])*)?(?:\.(?:[0-9a-fA-F](?:_?[0-9a-fA-F])*)?)?[pP][+-]?[0-9](?:_?[0-9])*$"
)


def go_parse_float(text: str) -> float:
    """strconv.ParseFloat(text, 64): Go's grammar (underscores, hex floats, inf/nan; no spaces)."""
    body = text[1:] if text[:1] in "+-" else text
    sign = -1.0 if text[:1] == "-" else 1.0
    low = body.lower()
    if low in ("inf", "infinity"):
        return sign * math.inf
    if low == "nan" and text[:1] not in "+-":
        return math.nan
    if _GO_HEX.match(body):
        mant, _, exp = body[2:].replace("_", "").lower().partition("p")
        if mant in ("", "."):
            raise ValueError(text)
        value = float.fromhex("0x" + mant + "p" + exp)
    elif _GO_DEC.match(body) and any(c.isdigit() for c in body.split("e")[0].split("E")[0]):
        value = float(body.replace("_", ""))
    else:
        raise ValueError(text)
    if math.isinf(value):
        raise ValueError(text)  # ErrRange
    return sign * value


def group_length(value: int | str | None, total: int) -> int:
    """The size of a decision group: clustersPerDecisionGroup as a count or a percentage of
    `total` (rounded up); absent, not positive or above `total` means `total`. Raises GroupError
    with the Misconfigured message."""
    if value is None:
        length = 0
    elif isinstance(value, int):
        length = value
    else:
        if not value.endswith("%"):
            raise GroupError(f"{value} invalid type: string is not a percentage")
        try:
            p = go_parse_float(value[:-1])
        except ValueError:
            raise GroupError(f"{value} invalid type: string is not a percentage") from None
        product = (p / 100) * total
        if math.isnan(product) or math.isinf(product):
            length = -1  # Go's float->int of a non-finite value is negative on amd64
        else:
            c = math.ceil(product)
            length = c if -(2**63) <= c < 2**63 else -1
    if length <= 0 or length > total:
        length = total
    return length


def build_groups(
    strategy: GroupStrategy,
    selected: Sequence[str],
    clusters: Mapping[str, ClusterInfo],
    scores: Mapping[str, int] | None = None,
) -> tuple[list[DecisionGroupResult], str | None]:
    """(groups, Misconfigured message or None). On a bad selector the groups built so far stay.

    Clusters are ordered by name inside a group, or by score then name when
    `scores` is given (`sortBy: Score`, beyond OCM).
    """
    total = len(selected)
    try:
        length = group_length(strategy.clusters_per_decision_group, total)
    except GroupError as e:
        return [], str(e)
    groups: list[DecisionGroupResult] = []
    remaining = set(selected)

    def chunk(name: str, names: list[str]) -> None:
        if scores is None:
            names.sort()
        else:
            names.sort(key=lambda n: (-scores.get(n, 0), n))
        step = max(length, 1)
        for i in range(0, len(names), step):
            groups.append(DecisionGroupResult(name, len(groups), tuple(names[i : i + step])))

    for group in strategy.decision_groups:
        sel = group.group_cluster_selector
        try:
            labels = compile_label_selector(sel.label_selector)
            claims = (
                CompiledSelector(tuple(compile_requirements(sel.claim_selector.match_expressions)))
                if sel.claim_selector is not None
                else EVERYTHING
            )
        except SelectorError as error:
            return groups, str(error)
        matched = [
            n
            for n in selected
            if n in remaining and labels.matches(clusters[n].labels) and claims.matches(clusters[n].claims)
        ]
        remaining.difference_update(matched)
        if matched:
            chunk(group.group_name, matched)
    if remaining:
        chunk("", list(remaining))
    if not groups:
        groups.append(DecisionGroupResult("", 0, ()))
    return groups, None


def paginate(placement_name: str, groups: Sequence[DecisionGroupResult]) -> list[Page]:
    """PlacementDecision pages: 100 clusters at most per page, a group's clusters never sharing a
    page with another group's, named `<placement>-decision-<n>` with one counter from 1."""
    pages: list[Page] = []
    for g in groups:
        chunks = [g.clusters[i : i + PAGE_SIZE] for i in range(0, len(g.clusters), PAGE_SIZE)] or [()]
        for c in chunks:
            pages.append(Page(decision_page_name(placement_name, len(pages) + 1), g.name, g.index, tuple(c)))
    return pages


def group_reads(placement: Placement) -> Reads:
    """The label and claim keys the decision groups' selectors read."""
    labels: set[str] = set()
    claims: set[str] = set()
    for group in placement.spec.decision_strategy.group_strategy.decision_groups:
        sel = group.group_cluster_selector
        if sel.label_selector is not None:
            labels.update(sel.label_selector.match_labels)
            labels.update(e.key for e in sel.label_selector.match_expressions)
        if sel.claim_selector is not None:
            claims.update(e.key for e in sel.claim_selector.match_expressions)
    if not labels and not claims:
        return NOTHING
    return Reads(label_keys=frozenset(labels), claim_keys=frozenset(claims))
