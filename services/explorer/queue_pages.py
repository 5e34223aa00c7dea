"""The Queues page: the queue tree per partition, the placements recorded (newest first) and the
queue rules what-if as a form; shaped here, rendered by a Jinja2 template
(services/explorer/templates/queues.html) with autoescaping on.

Numbers tests read back are in data attributes (`data-queue`, `data-app`, `data-summary-*`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fleetplace.services.auditor.queue_whatif import QueueWhatIf
from fleetplace.services.explorer.queue_book import PartitionTree
from fleetplace.services.explorer.templating import render
from fleetplace.shared.queueing import ConfigProblem

# A config change can move every application recorded: the page lists the first ones, the counts
# cover them all.
CHANGES_SHOWN = 200


def queues_page(
    trees: Sequence[PartitionTree],
    placements: Sequence[Mapping[str, Any]],
    total: int,
    text: str,
    partition: str,
    topic_note: str | None,
    result: QueueWhatIf | None = None,
    problems: Sequence[ConfigProblem] = (),
    error: str | None = None,
) -> str:
    """`placements`: the newest recorded placements as the API lists them, newest first, of
    `total`; `text`, `partition`: the what-if form's config and partition; `result`: its answer,
    or `problems` (the config does not load) or `error` (it loads but cannot be used)."""
    partitions = sorted({t.name for t in trees if t.configured} | ({partition} if partition else set()))
    return render(
        "queues.html",
        trees=trees,
        placements=placements,
        total=total,
        text=text,
        partition=partition,
        partitions=partitions,
        topic_note=topic_note,
        result=result,
        summary=result.summary() if result is not None else {},
        changes_shown=CHANGES_SHOWN,
        problems=problems,
        error=error,
    )
