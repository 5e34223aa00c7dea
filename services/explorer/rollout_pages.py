"""The Rollouts pages' HTML: the list and one rollout, every value escaped on the way in.

A status is shown by its colour, a glyph and its name (the colour alone does not say it). Numbers
tests read back are in data attributes (`data-counts`, `data-status`, `data-seq`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fleetplace.services.explorer.pages import esc, placement_url, plural, rollout_url, time_tag
from fleetplace.services.rollout.listing import STATUSES, ClusterLine, group_label
from fleetplace.services.rollout.overview import (
    RolloutPlacement,
    RolloutRow,
    diff_trigger,
    rollout_state,
    strategy_text,
    what_next,
)

GLYPHS = {"ToApply": "○", "Progressing": "◐", "Succeeded": "✓", "Failed": "✗", "TimeOut": "⚠", "Skip": "–"}
NONE = '<span class="muted">—</span>'


def _counts_attr(counts: Mapping[str, int]) -> str:
    return ",".join(f"{s}:{counts.get(s, 0)}" for s in STATUSES)


def _status(status: str) -> str:
    return f'<span class="st st-{esc(status)}">{GLYPHS.get(status, "?")} {esc(status)}</span>'


def progress(counts: Mapping[str, int]) -> str:
    """A bar of the placed clusters by status (an SVG in percent of its width: no inline
    styles), and the counts in words."""
    total = sum(counts.values())
    parts = []
    x = 0.0
    for s in STATUSES:
        n = counts.get(s, 0)
        if n and total:
            width = 100.0 * n / total
            parts.append(
                f'<rect class="st-{s}" x="{x:.3f}" y="0" width="{width:.3f}" height="10">'
                f"<title>{n} {s}</title></rect>"
            )
            x += width
    words = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts.get(s)) or "no clusters placed"
    return (
        f'<svg class="progress" viewBox="0 0 100 10" preserveAspectRatio="none" role="img" '
        f'aria-label="{esc(words)}">{"".join(parts)}</svg>'
        f'<span class="muted">{esc(words)}</span>'
    )


STATE_CLASSES = {"Deleted": "bad", "Error": "bad", "Breached": "bad", "Complete": "ok"}


def state_badge(row: RolloutRow) -> str:
    """The rollout's one state (services/rollout/overview.py), its reason on hover."""
    state = rollout_state(row)
    cls = STATE_CLASSES.get(state.word, "")
    return (
        f'<span class="badge {cls}" data-state="{esc(state.word)}" title="{esc(state.reason)}">'
        f"{esc(state.word)}</span>"
    )


def _legend() -> str:
    return '<p class="legend muted">' + " ".join(_status(s) for s in STATUSES) + "</p>"


# ---- the list -------------------------------------------------------------------------------------


def rollouts_page(rows: Sequence[RolloutRow], query: str, topic_note: str | None) -> str:
    form = (
        '<form class="filters" method="get" action="/rollouts" role="search">'
        f'<label>Search <input type="search" name="q" value="{esc(query)}" placeholder="press /"></label>'
        '<button type="submit">Filter</button></form>'
    )
    body = []
    for r in rows:
        ns = r.namespace
        placements = ", ".join(
            f'<a href="{esc(placement_url(f"{ns}/{p.name}"))}">{esc(p.name)}</a>' for p in r.placements
        )
        when = time_tag(r.changed_at)
        body.append(
            f'<tr data-rollout="{esc(r.key)}" data-counts="{_counts_attr(r.counts)}" '
            f'data-complete="{int(r.complete)}" data-breach="{int(r.breach)}">'
            f'<td>{esc(ns)}</td><td><a href="{esc(rollout_url(r.key))}">{esc(r.name)}</a></td>'
            f"<td>{esc(r.revision or '—')}</td><td>{placements or NONE}</td>"
            f"<td>{progress(r.counts)}</td><td>{state_badge(r)}</td>"
            f'<td>{when}<br><span class="muted">{esc(r.trigger)} · seq {r.seq}</span></td></tr>'
        )
    if rows:
        listing = (
            '<div class="scroll"><table><thead><tr><th>Namespace</th><th>Rollout</th><th>Revision</th>'
            "<th>Placements</th><th>Progress</th><th>State</th><th>Last change</th></tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table></div>"
        )
    else:
        listing = '<p class="note">No rollouts' + (" match." if query else ".") + "</p>"
    note = f'<p class="muted">{esc(topic_note)}</p>' if topic_note else ""
    return f'<h1>Rollouts</h1>{form}{_legend()}<div id="rollouts" data-live>{listing}{note}</div>'


# ---- one rollout ----------------------------------------------------------------------------------


def _countdown(at: str | None) -> str:
    if not at:
        return NONE
    return f'{time_tag(at)}<br><span class="countdown" data-deadline="{esc(at)}"></span>'


def _groups(lines: Sequence[ClusterLine]) -> str:
    """The placed clusters as chips, one row per decision group."""
    groups: dict[tuple[int, str], list[ClusterLine]] = {}
    for line in lines:
        if line.listed != "removed":
            groups.setdefault((line.group_index, line.group_name), []).append(line)
    rows = []
    for (index, name), members in sorted(groups.items()):
        chips = "".join(
            f'<li class="chip st-{esc(m.status)}" title="{esc(m.cluster)}: {esc(m.status)}'
            f'{" since " + esc(m.since) if m.since else ""}{": " + esc(m.message) if m.message else ""}">'
            f"{GLYPHS.get(m.status, '?')} {esc(m.cluster)}</li>"
            for m in members
        )
        rows.append(
            f'<div class="group" data-group="{esc(name)}"><span class="group-name">'
            f'{esc(group_label(name, index))}</span><ul class="chips">{chips}</ul></div>'
        )
    return "".join(rows) or '<p class="muted">No clusters placed.</p>'


def _cluster_table(lines: Sequence[ClusterLine]) -> str:
    rows = []
    for line in lines:
        group = esc(group_label(line.group_name, line.group_index))
        since = time_tag(line.since)
        message = f'<span class="message">{esc(line.message)}</span>' if line.message else NONE
        rows.append(
            f'<tr data-cluster="{esc(line.cluster)}" data-status="{esc(line.status)}" data-listed="{esc(line.listed)}">'
            f"<td>{group}</td><td>{esc(line.cluster)}</td><td>{_status(line.status)}</td>"
            f"<td>{since}</td><td>{_countdown(line.until)}</td><td>{esc(line.next)}</td><td>{message}</td></tr>"
        )
    return (
        '<div class="scroll"><table><thead><tr><th>Group</th><th>Cluster</th><th>Status</th><th>Since</th>'
        "<th>Soak end / deadline</th><th>Next</th><th>Deployer's message</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _placement(index: int, p: RolloutPlacement) -> str:
    heading = (
        f'<h2 id="h-p{index}">Placement <a href="{esc(placement_url(p.key))}">{esc(p.name)}</a></h2>'
        f'<p class="muted">{esc(strategy_text(p.strategy))}</p>'
    )
    steps = "".join(f"<li>{esc(s)}</li>" for s in what_next(p))
    return (
        f'<section aria-labelledby="h-p{index}" data-placement="{esc(p.key)}" '
        f'data-counts="{_counts_attr(p.counts)}">{heading}'
        f'<div id="placement-{index}" data-live><h3>What next</h3><ul class="next">{steps}</ul>'
        f"<h3>Decision groups</h3>{_groups(p.lines)}{progress(p.counts)}"
        f"<h3>Clusters</h3>{_cluster_table(p.lines)}</div></section>"
    )


def _flags(diff: Mapping[str, Any]) -> str:
    out = []
    if diff.get("deleted"):
        out.append('<span class="badge bad">deleted</span>')
    if diff.get("maxFailureBreach"):
        out.append('<span class="badge bad">breach</span>')
    if diff.get("complete"):
        out.append('<span class="badge ok">complete</span>')
    for p in diff.get("placements") or ():
        for label, field in (("timed out", "clustersTimeOut"), ("removed", "clustersRemoved")):
            names = [str(c.get("clusterName")) for c in p.get(field) or ()]
            if names:
                out.append(f"{esc(p.get('name'))} {label}: {esc(', '.join(names))}")
        if p.get("error"):
            out.append(f'<span class="error">{esc(p.get("name"))}: {esc(p["error"])}</span>')
    if diff.get("nextRecheckAt"):
        out.append(f'<span class="muted">recheck {time_tag(diff["nextRecheckAt"])}</span>')
    return " ".join(out) or NONE


def _names(names: Sequence[str], cls: str, sign: str) -> str:
    return " ".join(f'<span class="{cls}">{sign}{esc(n)}</span>' for n in names) or NONE


def timeline(diffs: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for d in reversed(diffs):
        kind = str((d.get("trigger") or {}).get("kind", ""))
        rows.append(
            f'<tr id="seq-{esc(d.get("seq"))}" data-seq="{esc(d.get("seq"))}" data-trigger="{esc(kind)}">'
            f'<td class="num">{esc(d.get("seq"))}</td>'
            f"<td>{time_tag(d.get('evaluatedAt'))}</td>"
            f"<td>{esc(diff_trigger(d))}</td><td>{esc(d.get('revision'))}</td>"
            f"<td>{_names(d.get('added') or (), 'added', '+')}</td>"
            f"<td>{_names(d.get('removed') or (), 'removed', '−')}</td><td>{_flags(d)}</td></tr>"
        )
    return (
        '<div class="scroll"><table><thead><tr><th class="num">Seq</th><th>Evaluated</th><th>Trigger</th>'
        "<th>Revision</th><th>Added</th><th>Removed</th><th>Notes</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def rollout_page(row: RolloutRow, diffs: Sequence[Mapping[str, Any]]) -> str:
    recheck = (
        f"{time_tag(row.next_recheck_at)} "
        f'<span class="countdown" data-deadline="{esc(row.next_recheck_at)}"></span>'
        if row.next_recheck_at
        else "none: the next evaluation waits for a report or a change"
    )
    state = rollout_state(row)
    summary = (
        f'<p data-counts="{_counts_attr(row.counts)}">Revision <strong>{esc(row.revision or "—")}</strong> · '
        f"{state_badge(row)} {esc(state.reason)} · {row.placed} clusters placed</p>{progress(row.counts)}"
        f"<p>Last change: {time_tag(row.changed_at)} ({esc(row.trigger or '—')}, seq {row.seq}) · "
        f"Next recheck: {recheck}</p>"
    )
    sections = "".join(_placement(i, p) for i, p in enumerate(row.placements))
    if not row.placements:
        sections = '<p class="muted">The rollout references no placement (it was deleted).</p>'
    return (
        f'<h1>Rollout {esc(row.key)}</h1><p class="muted"><a href="/rollouts">all rollouts</a></p>'
        f'{_legend()}<div id="rollout-summary" data-live>{summary}</div>{sections}'
        f'<section aria-labelledby="h-timeline"><h2 id="h-timeline">Timeline ({plural(len(diffs), "diff")})</h2>'
        f'<div id="rollout-timeline" data-live>{timeline(diffs)}</div></section>'
    )
