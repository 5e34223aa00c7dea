"""The Rollouts pages: the list and one rollout, shaped here and rendered by Jinja2 templates
(services/explorer/templates/rollouts.html, rollout.html) with autoescaping on.

A status is shown by its colour, a glyph and its name (the colour alone does not say it). Numbers
tests read back are in data attributes (`data-counts`, `data-status`, `data-seq`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fleetplace.services.explorer.templating import ENV, render
from fleetplace.services.rollout.listing import STATUSES, ClusterLine
from fleetplace.services.rollout.overview import (
    RolloutPlacement,
    RolloutRow,
    diff_trigger,
    rollout_state,
    strategy_text,
    what_next,
)

GLYPHS = {"ToApply": "○", "Progressing": "◐", "Succeeded": "✓", "Failed": "✗", "TimeOut": "⚠", "Skip": "–"}
STATE_CLASSES = {"Deleted": "bad", "Error": "bad", "Breached": "bad", "Complete": "ok"}
ENV.globals.update(
    glyphs=GLYPHS,
    statuses=STATUSES,
    state_classes=STATE_CLASSES,
    state_of=rollout_state,
    diff_trigger=diff_trigger,
)


def rollouts_page(rows: Sequence[RolloutRow], query: str, topic_note: str | None) -> str:
    return render("rollouts.html", rows=rows, query=query, topic_note=topic_note)


@dataclass(frozen=True, slots=True)
class PlacementSection:
    placement: RolloutPlacement
    strategy: str
    next: list[str]
    groups: list[tuple[int, str, list[ClusterLine]]]  # the placed clusters by decision group


def _section(p: RolloutPlacement) -> PlacementSection:
    groups: dict[tuple[int, str], list[ClusterLine]] = {}
    for line in p.lines:
        if line.listed != "removed":
            groups.setdefault((line.group_index, line.group_name), []).append(line)
    by_group = [(index, name, members) for (index, name), members in sorted(groups.items())]
    return PlacementSection(p, strategy_text(p.strategy), what_next(p), by_group)


def rollout_page(row: RolloutRow, diffs: Sequence[Mapping[str, Any]]) -> str:
    return render(
        "rollout.html",
        row=row,
        state=rollout_state(row),
        placements=[_section(p) for p in row.placements],
        diffs=diffs,
    )
