"""The explorer's pages: data shaped here, HTML in Jinja2 templates (services/explorer/templates)
with autoescaping on, so no value needs escaping by hand.

Regions that live updates refresh carry `data-live` and an id (services/explorer/assets.py).
Numbers tests read back are also in data attributes (`data-total`, `data-score`, `data-seq`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from fleetplace.services.auditor.explain import Explanation
from fleetplace.services.auditor.history import DecisionRecord
from fleetplace.services.explorer.hub_agreement import HubAnswer
from fleetplace.services.explorer.templating import (
    ENV,
    iso,
    macro,
    placement_url,
    render,
    rollout_url,
    when,
)
from fleetplace.services.explorer.views import (
    ClusterVerdict,
    PlacementFilter,
    PlacementRow,
    TolerationExpiry,
    trigger_text,
)

__all__ = [
    "iso",
    "layout",
    "matrix_page",
    "not_found",
    "placement_page",
    "placement_url",
    "placements_page",
    "rollout_url",
    "verdict_table",
    "what_if_page",
    "when",
]

NAV = (
    ("placements", "/placements", "Placements"),
    ("fleet", "/fleet", "Fleet"),
    ("matrix", "/fleet/matrix", "Matrix"),
    ("what-if", "/what-if", "What-if"),
    ("rollouts", "/rollouts", "Rollouts"),
    ("queues", "/queues", "Queues"),
)
PALETTE = 8
CONDITIONS = ("", "Satisfied", "Unsatisfied", "Misconfigured", "Deleted")
ENV.globals.update(trigger_text=trigger_text)


def layout(title: str, active: str, body: str, *, version: int, live: bool) -> str:
    """`body`: a page's HTML as one of the functions below renders it."""
    return render(
        "layout.html", title=title, active=active, body=Markup(body), version=version, live=live, nav=NAV
    )


def placements_page(
    rows: Sequence[PlacementRow],
    total: int,
    flt: PlacementFilter,
    namespaces: Sequence[str],
    page: int,
    pages: int,
) -> str:
    params = {
        k: v
        for k, v in (
            ("q", flt.query),
            ("namespace", flt.namespace),
            ("label", flt.label),
            ("condition", flt.condition),
        )
        if v
    }
    return render(
        "placements.html",
        rows=rows,
        total=total,
        flt=flt,
        namespaces=["", *namespaces],
        conditions=CONDITIONS,
        params=params,
        page=page,
        pages=pages,
    )


# ---- one placement: the verdicts ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BarPart:
    name: str
    score: int
    weight: int
    color: int
    negative: bool
    x: float  # in percent of the bar's width
    width: float


@dataclass(frozen=True, slots=True)
class Bar:
    total: int
    zero: float  # where zero is, in percent of the bar's width
    rects: tuple[BarPart, ...]


def _bar(v: ClusterVerdict, scale: tuple[int, int], colors: Mapping[str, int]) -> Bar | None:
    """Positive points (score × weight) stack right of zero, negative ones left of it; both sides
    share one scale across the table, so bars compare row to row. Drawn as an SVG in percent of
    the bar's width: sizes are attributes, not inline styles, which the page's CSP forbids."""
    if v.total is None:
        return None
    below, above = scale
    span = max(1, below + above)
    zero = 100.0 * below / span
    ends = {True: zero, False: zero}
    rects = []
    for name, score, weight in v.parts:
        points = score * weight
        width = 100.0 * abs(points) / span
        positive = points >= 0
        x = ends[positive] if positive else ends[positive] - width
        ends[positive] = x + width if positive else x
        rects.append(BarPart(name, score, weight, colors[name] % PALETTE, not positive, x, width))
    return Bar(v.total, zero, tuple(rects))


@dataclass(frozen=True, slots=True)
class VerdictRow:
    verdict: ClusterVerdict
    bar: Bar | None
    why: str  # the reason shown in the row ("" for none)


@dataclass(frozen=True, slots=True)
class VerdictTable:
    summary: str
    colors: tuple[tuple[str, int], ...]  # prioritizer, its colour in the palette
    errors: tuple[str, ...]  # multi-line reasons, shown once above the rows
    rows: tuple[VerdictRow, ...]


def _message(reason: str) -> str:
    """A reason without the filter that gave it (`Predicate: …`, or `Predicate:…` in a condition)."""
    return reason.partition(":")[2].strip()


def misconfigured(conditions: Iterable[Mapping[str, Any]]) -> list[str]:
    """The messages of PlacementMisconfigured=True conditions (condition_badges shows them)."""
    return [
        str(c.get("message", ""))
        for c in conditions
        if c.get("type") == "PlacementMisconfigured" and c.get("status") == "True"
    ]


def _verdict_table(verdicts: Sequence[ClusterVerdict], shown: Sequence[str] = ()) -> VerdictTable:
    """`shown`: messages already on the page above the table (a Misconfigured condition's)."""
    colors: dict[str, int] = {}
    below = above = 0
    for v in verdicts:
        for part in v.parts:
            colors.setdefault(part[0], len(colors))
        above = max(above, sum(max(0, s * w) for _, s, w in v.parts))
        below = max(below, sum(max(0, -s * w) for _, s, w in v.parts))
    # A multi-line reason (a CEL compile error with its caret line) is the same for every cluster
    # it filters: shown once above the table — by the Misconfigured condition when there is one,
    # else in a block of its own — in monospace so the caret sits under its column.
    above_ = [_message(m) for m in shown if "\n" in m]
    errors: list[str] = []
    for v in verdicts:
        if "\n" in v.why and _message(v.why) not in above_:
            above_.append(_message(v.why))
            errors.append(v.why)
    rows = []
    for v in verdicts:
        why = v.why
        if "\n" in why:
            n = above_.index(_message(why))
            which = "the error above" if len(above_) == 1 else f"error {n + 1} above"
            why = f"{why.partition(':')[0]}: {which}"
        rows.append(VerdictRow(v, _bar(v, (below, above), colors), why))
    counts = {k: sum(1 for v in verdicts if v.verdict == k) for k in ("selected", "outranked", "filtered")}
    summary = ", ".join(f"{n} {k}" for k, n in counts.items())
    shades = tuple((name, i % PALETTE) for name, i in colors.items())
    return VerdictTable(summary, shades, tuple(errors), tuple(rows))


def verdict_table(verdicts: Sequence[ClusterVerdict]) -> str:
    return macro("macros.html", "verdict_table", _verdict_table(verdicts))


def placement_page(
    row: PlacementRow,
    diffs: Sequence[DecisionRecord],
    shown: DecisionRecord | None,
    explanation: Explanation | None,
    verdicts: Sequence[ClusterVerdict],
    expiries: Sequence[TolerationExpiry],
    has_tolerations: bool,
    requeue: tuple[str | None, str],
    rollouts: Sequence[str] = (),
    spec: str = "",
    agreement: HubAnswer | None = None,
) -> str:
    """`rollouts`: the rollouts whose placementRefs name this placement; `spec`: its Placement
    now, as YAML ("" once deleted); `agreement`: shadow mode's agreement with OCM, as the hub
    serves both decisions (None: the explorer has no hub)."""
    latest = diffs[-1] if diffs else None
    then = "now" if latest is not None and shown is not None and shown.seq == latest.seq else "then"
    result = explanation.result if explanation is not None else None
    return render(
        "placement.html",
        row=row,
        diffs=diffs,
        groups=list((latest.value.get("groups") or ()) if latest is not None else ()),
        shown=shown,
        shown_seq=shown.seq if shown is not None else None,
        explanation=explanation,
        then=then,
        table=_verdict_table(verdicts, misconfigured((result or {}).get("conditions") or ())),
        expiries=expiries,
        has_tolerations=has_tolerations,
        requeue_at=requeue[0],
        requeue_why=requeue[1],
        rollouts=rollouts,
        spec=spec,
        agreement=agreement,
    )


# ---- fleet ------------------------------------------------------------------------------------


def fleet_page(clusters: Sequence[Mapping[str, Any]], total: int, query: str, page: int, pages: int) -> str:
    params = {"q": query} if query else {}
    return render(
        "fleet.html", clusters=clusters, total=total, query=query, params=params, page=page, pages=pages
    )


def matrix_page(
    clusters: Sequence[tuple[str, int]],
    placements: Sequence[tuple[str, int]],
    decided: Mapping[str, frozenset[str]],
    params: Mapping[str, str],
    paging: tuple[int, int, int, int],
) -> str:
    """`clusters`/`placements`: (name, how many of the other it is used by/uses), already sorted."""
    page, pages, col_page, col_pages = paging
    return render(
        "matrix.html",
        clusters=clusters,
        placements=placements,
        decided=decided,
        params=params,
        page=page,
        pages=pages,
        col_page=col_page,
        col_pages=col_pages,
        row_params={**params, "cols": str(col_page)},
        col_params={**params, "page": str(page)},
    )


# ---- what-if -----------------------------------------------------------------------


def what_if_page(
    key: str,
    keys: Sequence[str],
    text: str,
    result: Mapping[str, Any] | None,
    today: Sequence[str] | None,
    verdicts: Sequence[ClusterVerdict],
    error: str | None,
) -> str:
    picked = list(result.get("decisions") or ()) if result is not None else []
    before = set(today or ())
    status = (
        "a new placement" if today is None else f"today {len(before)}: {', '.join(sorted(before)) or '—'}"
    )
    return render(
        "what_if.html",
        key=key,
        keys=keys,
        text=text,
        result=result,
        error=error,
        picked=picked,
        added=[c for c in picked if c not in before],
        removed=sorted(before - set(picked)),
        status=status,
        table=_verdict_table(verdicts, misconfigured(result.get("conditions") or ()) if result else ()),
    )


def not_found(message: str) -> str:
    return render("not_found.html", message=message)
