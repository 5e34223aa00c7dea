"""The explorer's HTML: plain string templates, every value escaped on the way in (`esc`).

Regions that live updates refresh carry `data-live` and an id (services/explorer/assets.py).
Numbers tests read back are also in data attributes (`data-total`, `data-score`, `data-seq`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any
from urllib.parse import quote, urlencode

from fleetplace.services.auditor.explain import Explanation
from fleetplace.services.auditor.history import DecisionRecord
from fleetplace.services.explorer.views import (
    ClusterVerdict,
    PlacementFilter,
    PlacementRow,
    TolerationExpiry,
    trigger_text,
)
from fleetplace.services.rollout.listing import group_label
from fleetplace.shared.bus.envelope import parse_time

NAV = (
    ("placements", "/placements", "Placements"),
    ("fleet", "/fleet", "Fleet"),
    ("matrix", "/fleet/matrix", "Matrix"),
    ("what-if", "/what-if", "What-if"),
    ("rollouts", "/rollouts", "Rollouts"),
)
PALETTE = 8


def esc(value: object) -> str:
    return escape(str(value), quote=True)


def placement_url(key: str, seq: int | None = None) -> str:
    namespace, _, name = key.partition("/")
    url = f"/placements/{quote(namespace, safe='')}/{quote(name, safe='')}"
    return url if seq is None else f"{url}?seq={seq}#explanation"


def rollout_url(key: str) -> str:
    namespace, _, name = key.partition("/")
    return f"/rollouts/{quote(namespace, safe='')}/{quote(name, safe='')}"


def iso(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def when(text: str | None) -> str:
    """A time as every page shows it: RFC 3339 in UTC to the second, whatever precision the
    record carries (a `<time datetime>` keeps the exact value)."""
    if not text:
        return "—"
    try:
        t = parse_time(text)
    except ValueError:
        return text
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def time_tag(text: str | None) -> str:
    """`<time>` showing `when(text)`, with the exact value in its datetime attribute."""
    if not text:
        return '<span class="muted">—</span>'
    return f'<time datetime="{esc(text)}" title="{esc(text)}">{esc(when(text))}</time>'


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def layout(title: str, active: str, body: str, *, version: int, live: bool) -> str:
    items = []
    for name, href, label in NAV:
        current = ' aria-current="page"' if name == active else ""
        items.append(f'<li><a href="{href}"{current}>{label}</a></li>')
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · fleetplace explorer</title>"
        '<link rel="stylesheet" href="/static/explorer.css"></head>'
        f'<body data-version="{version}" data-live="{1 if live else 0}">'
        '<a class="skip" href="#main">Skip to content</a>'
        '<header><span class="brand">fleetplace explorer</span>'
        f'<nav aria-label="Pages"><ul>{"".join(items)}</ul></nav>'
        f'<span id="live-status" role="status" aria-live="polite">version {version}</span></header>'
        f'<main id="main" tabindex="-1">{body}</main>'
        '<script src="/static/explorer.js" defer></script></body></html>'
    )


def condition_badges(conditions: Iterable[Mapping[str, Any]], deleted: bool = False) -> str:
    out = []
    if deleted:
        out.append('<span class="badge bad">Deleted</span>')
    for c in conditions:
        kind = str(c.get("type", "")).removeprefix("Placement")
        status = c.get("status")
        if kind == "Misconfigured":
            if status == "True":
                out.append(f'<span class="badge bad" title="{esc(c.get("reason", ""))}">Misconfigured</span>')
                out.append(f'<span class="error">{esc(c.get("message", ""))}</span>')
            continue
        good = status == "True"
        label = kind if good else f"{kind}={status}"
        cls = "ok" if good else "warn"
        out.append(f'<span class="badge {cls}" title="{esc(c.get("message", ""))}">{esc(label)}</span>')
    return " ".join(out)


def _clusters(names: Iterable[str], cls: str = "", sign: str = "") -> str:
    return (
        " ".join(f'<span class="{cls}">{sign}{esc(n)}</span>' for n in names)
        or '<span class="muted">—</span>'
    )


def _groups(groups: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for g in groups:
        name = group_label(str(g.get("groupName") or ""), int(g.get("groupIndex") or 0))
        parts.append(f"{esc(name)} ({len(g.get('clusters') or ())})")
    return ", ".join(parts) or '<span class="muted">—</span>'


def _pager(base: str, params: Mapping[str, str], page: int, pages: int, param: str = "page") -> str:
    if pages <= 1:
        return ""
    links = []
    if page > 1:
        links.append(f'<a href="{esc(base)}?{esc(urlencode({**params, param: page - 1}))}">← previous</a>')
    links.append(f'<span class="muted">page {page} of {pages}</span>')
    if page < pages:
        links.append(f'<a href="{esc(base)}?{esc(urlencode({**params, param: page + 1}))}">next →</a>')
    return f'<nav class="pager" aria-label="Pages of results">{"".join(links)}</nav>'


# ---- placements --------------------------------------------------------------------------------


def placements_page(
    rows: Sequence[PlacementRow],
    total: int,
    flt: PlacementFilter,
    namespaces: Sequence[str],
    page: int,
    pages: int,
) -> str:
    options = "".join(
        f'<option value="{esc(ns)}"{" selected" if ns == flt.namespace else ""}>{esc(ns)}</option>'
        for ns in ["", *namespaces]
    )
    conditions = "".join(
        f'<option value="{c}"{" selected" if c == flt.condition else ""}>{c or "any"}</option>'
        for c in ("", "Satisfied", "Unsatisfied", "Misconfigured", "Deleted")
    )
    form = (
        '<form class="filters" method="get" action="/placements" role="search">'
        f'<label>Search <input type="search" name="q" value="{esc(flt.query)}" placeholder="press /"></label>'
        f'<label>Namespace <select name="namespace">{options}</select></label>'
        f'<label>Label <input name="label" value="{esc(flt.label)}" placeholder="key or key=value"></label>'
        f'<label>Condition <select name="condition">{conditions}</select></label>'
        '<button type="submit">Filter</button></form>'
    )
    body_rows = []
    for r in rows:
        wanted = "all" if r.wanted is None else str(r.wanted)
        changed = time_tag(r.changed_at)
        body_rows.append(
            f'<tr data-placement="{esc(r.key)}" data-selected="{r.selected}">'
            f'<td>{esc(r.namespace)}</td><td><a href="{esc(placement_url(r.key))}">{esc(r.name)}</a></td>'
            f'<td class="num">{r.selected} / {wanted}</td>'
            f"<td>{condition_badges(r.conditions, r.deleted)}</td>"
            f'<td class="wide-only">{_groups(r.groups)}</td>'
            f'<td>{changed}<br><span class="muted">{esc(r.trigger)} · seq {r.seq}</span></td></tr>'
        )
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
    table = (
        '<div class="scroll"><table><thead><tr><th>Namespace</th><th>Placement</th>'
        '<th class="num">Selected / wanted</th><th>Conditions</th><th class="wide-only">Decision groups</th>'
        "<th>Last change</th></tr></thead>"
        f"<tbody>{''.join(body_rows)}</tbody></table></div>"
    )
    shown = f'<p class="muted">{len(rows)} shown of {total} matching</p>'
    return (
        f"<h1>Placements</h1>{form}"
        f'<div id="placements" data-live>{shown}{table}{_pager("/placements", params, page, pages)}</div>'
    )


# ---- one placement ----------------------------------------------------------------------------


def _bar(v: ClusterVerdict, scale: tuple[int, int], colors: Mapping[str, int]) -> str:
    """Positive points (score × weight) stack right of zero, negative ones left of it; both sides
    share one scale across the table, so bars compare row to row. An SVG drawn in percent of the
    bar's width: sizes are attributes, not inline styles, which the page's CSP forbids."""
    if v.total is None:
        return ""
    below, above = scale
    span = max(1, below + above)
    zero = 100.0 * below / span
    rects = []
    ends = {True: zero, False: zero}
    for name, score, weight in v.parts:
        points = score * weight
        width = 100.0 * abs(points) / span
        positive = points >= 0
        x = ends[positive] if positive else ends[positive] - width
        ends[positive] = x + width if positive else x
        rects.append(
            f'<rect class="p{colors[name] % PALETTE}{"" if positive else " neg"}" x="{x:.3f}" y="0" '
            f'width="{width:.3f}" height="10" data-prioritizer="{esc(name)}" data-score="{score}" '
            f'data-weight="{weight}"><title>{esc(name)}: {score} × {weight}</title></rect>'
        )
    return (
        f'<svg class="bar" viewBox="0 0 100 10" preserveAspectRatio="none" role="img" '
        f'aria-label="score {v.total}">{"".join(rects)}'
        f'<line class="zero" x1="{zero:.3f}" y1="0" x2="{zero:.3f}" y2="10"></line></svg>'
    )


def verdict_table(verdicts: Sequence[ClusterVerdict]) -> str:
    colors: dict[str, int] = {}
    below = above = 0
    for v in verdicts:
        for part in v.parts:
            colors.setdefault(part[0], len(colors))
        above = max(above, sum(max(0, s * w) for _, s, w in v.parts))
        below = max(below, sum(max(0, -s * w) for _, s, w in v.parts))
    scale = (below, above)
    legend = "".join(f'<span class="swatch p{i % PALETTE}"></span>{esc(name)}' for name, i in colors.items())
    # A multi-line reason (a CEL compile error with its caret line) is the same for every cluster
    # it filters: shown once above the table, in monospace so the caret sits under its column.
    errors: list[str] = []
    for v in verdicts:
        if "\n" in v.why and v.why not in errors:
            errors.append(v.why)
    rows = []
    for v in verdicts:
        parts = ", ".join(f"{esc(n)} {s}×{w}" for n, s, w in v.parts)
        why = f'<span class="muted">{esc(v.why)}</span>' if v.why else ""
        if v.why in errors:
            which = "the error above" if len(errors) == 1 else f"error {errors.index(v.why) + 1} above"
            why = f'<span class="muted">{esc(v.why.partition(":")[0])}: {which}</span>'
        if v.joined:
            joined = '<span class="badge" title="not in the fleet at this decision">joined since; as evaluated now</span>'
            why = f"{joined} {why}" if why else joined
        total = "" if v.total is None else str(v.total)
        rows.append(
            f'<tr data-cluster="{esc(v.cluster)}" data-verdict="{v.verdict}" data-total="{total}"'
            f"{' data-joined' if v.joined else ''}>"
            f'<td><a href="/fleet?q={esc(quote(v.cluster))}">{esc(v.cluster)}</a></td>'
            f'<td class="verdict-{v.verdict}">{v.verdict}</td><td class="num">{total}</td>'
            f'<td>{_bar(v, scale, colors)}</td><td class="why">{parts}{" · " if parts and why else ""}{why}</td></tr>'
        )
    counts = {k: sum(1 for v in verdicts if v.verdict == k) for k in ("selected", "outranked", "filtered")}
    summary = ", ".join(f"{n} {k}" for k, n in counts.items())
    shown_errors = "".join(
        f'<pre class="error code" data-error="{i + 1}">{esc(e)}</pre>' for i, e in enumerate(errors)
    )
    return (
        f'<p class="legend muted">{summary}. Score by prioritizer (score × weight): {legend}</p>{shown_errors}'
        '<div class="scroll"><table class="verdicts"><thead><tr><th>Cluster</th><th>Verdict</th>'
        '<th class="num">Score</th><th>Breakdown</th><th class="why">Prioritizers / filtered by</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _timeline(diffs: Sequence[DecisionRecord], shown_seq: int | None) -> str:
    rows = []
    for d in reversed(diffs):
        kind = str(d.trigger.get("kind", ""))
        current = ' class="current" aria-current="true"' if d.seq == shown_seq else ""
        added = _clusters(d.value.get("added") or (), "added", "+")
        removed = _clusters(d.value.get("removed") or (), "removed", "−")
        rows.append(
            f'<tr data-seq="{d.seq}" data-trigger="{esc(kind)}"{current}>'
            f'<td class="num"><a href="{esc(placement_url(d.key, d.seq))}" aria-label="explanation of seq {d.seq}">{d.seq}</a></td>'
            f"<td>{time_tag(d.evaluated_at)}</td>"
            f"<td>{esc(trigger_text(d))}</td><td>{added}</td><td>{removed}</td></tr>"
        )
    return (
        '<div class="scroll"><table><thead><tr><th class="num">Seq</th><th>Evaluated</th><th>Trigger</th>'
        f"<th>Added</th><th>Removed</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _tolerations(expiries: Sequence[TolerationExpiry], has_tolerations: bool) -> str:
    if not expiries:
        return (
            '<p class="muted">'
            + ("No tainted cluster matches its tolerations." if has_tolerations else "No tolerations.")
            + "</p>"
        )
    rows = []
    for e in expiries:
        if e.deadline is None:
            runs_out = '<span class="muted">never</span>'
        else:
            at = iso(e.deadline)
            runs_out = f'<time datetime="{esc(at)}" title="{esc(at)}" class="countdown" data-deadline="{esc(at)}">{esc(when(at))}</time>'
        rows.append(
            f"<tr><td>{esc(e.toleration)}</td><td>{esc(e.cluster)}{' (decided)' if e.decided else ''}</td>"
            f"<td>{esc(e.taint)}</td><td>{runs_out}</td></tr>"
        )
    return (
        '<div class="scroll"><table><thead><tr><th>Toleration</th><th>Cluster</th><th>Taint</th>'
        f"<th>Runs out</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _spec(spec: str) -> str:
    if not spec:
        return '<p class="muted">The placement does not exist now: no spec.</p>'
    return (
        '<details id="spec"><summary>The Placement it explains (YAML)</summary>'
        f'<pre class="code">{esc(spec)}</pre></details>'
    )


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
) -> str:
    """`rollouts`: the rollouts whose placementRefs name this placement; `spec`: its Placement
    now, as YAML ("" once deleted)."""
    wanted = "all" if row.wanted is None else str(row.wanted)
    latest = diffs[-1] if diffs else None
    groups = []
    for g in (latest.value.get("groups") or ()) if latest is not None else ():
        name = group_label(str(g.get("groupName") or ""), int(g.get("groupIndex") or 0))
        groups.append(f"<tr><td>{esc(name)}</td><td>{_clusters(g.get('clusters') or ())}</td></tr>")
    decision = (
        '<div class="scroll"><table><thead><tr><th>Group</th><th>Clusters</th></tr></thead>'
        f"<tbody>{''.join(groups)}</tbody></table></div>"
        if groups
        else '<p class="muted">No clusters decided.</p>'
    )
    at_text, why = requeue
    next_requeue = (
        f'{time_tag(at_text)} <span class="countdown" data-deadline="{esc(at_text)}"></span> — {esc(why)}'
        if at_text
        else esc(why)
    )
    head = (
        f"<p><strong>{row.selected} / {wanted}</strong> selected · {condition_badges(row.conditions, row.deleted)}</p>"
        f"<p>Last change: {time_tag(row.changed_at)} ({esc(row.trigger)}, seq {row.seq}) · "
        f"Next requeue: {next_requeue}</p>"
    )
    if rollouts:
        links = ", ".join(f'<a href="{esc(rollout_url(k))}">{esc(k)}</a>' for k in rollouts)
        head += f"<p>Rolled out by: {links}</p>"
    if shown is None or explanation is None:
        explained = '<p class="muted">No decision was published for this placement yet.</p>'
    else:
        then = "now" if latest is not None and shown.seq == latest.seq else "then"
        reproduced = (
            '<span class="badge ok">reproduces from the topics</span>'
            if explanation.reproduced
            else f'<span class="badge bad">does not reproduce: {esc(", ".join(explanation.differs))} differ</span>'
        )
        meta = (
            f"<p>seq <strong>{shown.seq}</strong>, evaluated {time_tag(shown.evaluated_at)}, trigger "
            f"{esc(trigger_text(shown))}, record {esc(shown.where)} by {esc(shown.source or '?')} "
            f"{reproduced}</p>"
        )
        if shown.deleted:
            body = '<p class="muted">The placement was deleted: no clusters.</p>'
        elif explanation.result is None:
            body = '<p class="muted">No explanation: the placement did not exist then.</p>'
        else:
            body = condition_badges(explanation.result.get("conditions") or ()) + verdict_table(verdicts)
        latest_link = (
            f' · <a href="{esc(placement_url(row.key))}">back to the decision now</a>'
            if then == "then"
            else ""
        )
        explained = f"<h2>Why: every cluster, as it was {then}{latest_link}</h2>{meta}{body}"
    return (
        f'<h1>{esc(row.key)}</h1><p class="muted">'
        f'<a href="/what-if?placement={esc(quote(row.key, safe=""))}">what if its spec changed?</a></p>'
        f'<div id="summary" data-live>{head}</div>{_spec(spec)}'
        f'<div class="grid2"><section aria-labelledby="h-decision"><h2 id="h-decision">Decision now, by group</h2>'
        f'<div id="decision" data-live>{decision}</div></section>'
        f'<section aria-labelledby="h-tol"><h2 id="h-tol">Tolerations</h2>'
        f'<div id="tolerations" data-live>{_tolerations(expiries, has_tolerations)}</div></section></div>'
        f'<section aria-labelledby="h-timeline"><h2 id="h-timeline">Timeline ({plural(len(diffs), "diff")})</h2>'
        f'<div id="timeline" data-live>{_timeline(diffs, shown.seq if shown is not None else None)}</div></section>'
        f'<section id="explanation" aria-label="Explanation"><div id="explained" data-live>{explained}</div></section>'
    )


# ---- fleet ------------------------------------------------------------------------------------


def _pairs(mapping: Mapping[str, Any]) -> str:
    return (
        "<br>".join(f"{esc(k)}={esc(v)}" for k, v in sorted(mapping.items()))
        or '<span class="muted">—</span>'
    )


def fleet_page(clusters: Sequence[Mapping[str, Any]], total: int, query: str, page: int, pages: int) -> str:
    rows = []
    for c in clusters:
        taints = "<br>".join(esc(t) for t in c["taints"]) or '<span class="muted">—</span>'
        scores = (
            "<br>".join(
                f"{esc(s['resource'])}: {esc(', '.join(f'{k} {v}' for k, v in s['scores'].items()))}"
                + (
                    f' <span class="muted">valid until {time_tag(s["validUntil"])}</span>'
                    if s["validUntil"]
                    else ""
                )
                for s in c["scores"]
            )
            or '<span class="muted">—</span>'
        )
        rows.append(
            f'<tr data-cluster="{esc(c["name"])}"><td>{esc(c["name"])}</td><td>{_pairs(c["labels"])}</td>'
            f'<td class="wide-only">{_pairs(c["claims"])}</td><td>{taints}</td>'
            f"<td>{_pairs(c['allocatable'])}</td><td>{scores}</td>"
            f'<td class="num">{c["placements"]}</td></tr>'
        )
    form = (
        '<form class="filters" method="get" action="/fleet" role="search">'
        f'<label>Search <input type="search" name="q" value="{esc(query)}" placeholder="press /"></label>'
        '<button type="submit">Filter</button> <a href="/fleet/matrix">clusters × placements matrix</a></form>'
    )
    table = (
        '<div class="scroll"><table><thead><tr><th>Cluster</th><th>Labels</th><th class="wide-only">Claims</th>'
        '<th>Taints</th><th>Allocatable</th><th>AddOn scores</th><th class="num">Placements</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
    params = {"q": query} if query else {}
    return (
        f'<h1>Fleet</h1>{form}<div id="fleet" data-live><p class="muted">{len(clusters)} shown of {total}</p>'
        f"{table}{_pager('/fleet', params, page, pages)}</div>"
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

    def sort_link(param: str, value: str, label: str) -> str:
        current = params.get(param, "name") == value
        href = f"/fleet/matrix?{urlencode({**params, param: value, 'page': 1, 'cols': 1})}"
        mark = ' aria-current="true"' if current else ""
        return f'<a href="{esc(href)}"{mark}>{label}</a>'

    head = "".join(
        f'<th class="cell" scope="col"><a href="{esc(placement_url(p))}" title="{esc(p)} ({n} clusters)">'
        f"{esc(p.rpartition('/')[2])}</a></th>"
        for p, n in placements
    )
    rows = []
    for cluster, n in clusters:
        cells = "".join(
            f'<td class="cell{" cell-on" if cluster in decided.get(p, ()) else ""}">'
            f"{'●' if cluster in decided.get(p, ()) else ''}</td>"
            for p, _ in placements
        )
        rows.append(
            f'<tr data-cluster="{esc(cluster)}"><th scope="row">{esc(cluster)} <span class="muted">({n})</span></th>{cells}</tr>'
        )
    sorts = (
        f"<p>Clusters by {sort_link('sort', 'name', 'name')} · {sort_link('sort', 'uses', 'placements using them')}"
        f" — placements by {sort_link('psort', 'name', 'name')} · {sort_link('psort', 'size', 'clusters used')}</p>"
    )
    table = (
        f'<div class="scroll"><table class="matrix"><thead><tr><th>Cluster (placements)</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
    return (
        f'<h1>Clusters × placements</h1>{sorts}<div id="matrix" data-live>{table}'
        f"{_pager('/fleet/matrix', {**params, 'cols': str(col_page)}, page, pages)}"
        f"{_pager('/fleet/matrix', {**params, 'page': str(page)}, col_page, col_pages, 'cols')}</div>"
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
    options = "".join(
        f'<option value="{esc(k)}"{" selected" if k == key else ""}>{esc(k)}</option>' for k in keys
    )
    pick = (
        '<form class="filters" method="get" action="/what-if"><label>Start from '
        f'<select name="placement">{options}</select></label><button type="submit">Load</button></form>'
    )
    form = (
        f'<form method="post" action="/what-if"><input type="hidden" name="placement" value="{esc(key)}">'
        '<label for="spec">Placement (YAML or JSON): nothing is published, the current fleet is used</label>'
        f'<textarea id="spec" name="spec" spellcheck="false">{esc(text)}</textarea>'
        '<p><button type="submit">Evaluate</button></p></form>'
    )
    out = ""
    if error:
        out = f'<p class="error" role="alert">{esc(error)}</p>'
    elif result is not None:
        picked = list(result.get("decisions") or ())
        before = set(today or ())
        added = [c for c in picked if c not in before]
        removed = sorted(before - set(picked))
        status = (
            "a new placement" if today is None else f"today {len(before)}: {', '.join(sorted(before)) or '—'}"
        )
        out = (
            f'<h2>Would pick {len(picked)}</h2><p id="what-if-picked">{_clusters(picked)}</p>'
            f"<p>Against today ({esc(status)}): added {_clusters(added, 'added', '+')} · "
            f"removed {_clusters(removed, 'removed', '−')}</p>"
            + condition_badges(result.get("conditions") or ())
            + verdict_table(verdicts)
        )
    return (
        f'<h1>What-if</h1>{pick}<div class="what-if"><div>{form}</div>'
        f'<div id="what-if-result">{out}</div></div>'
    )


def not_found(message: str) -> str:
    return f'<h1>Not found</h1><p>{esc(message)}</p><p><a href="/placements">All placements</a></p>'
