"""Re-derive every published decision from the topics and report the ones that do not reproduce.

For each batch (see `batches`): restore the instance's state to the batch's watermark
(`replay`), then for each diff in key order: make the placement's previous decision the one the
worker diffed against (seq - 1), evaluate the placement at `evaluatedAt` with the worker's own
engine, compare what the diff would hold (`check`), and commit the recorded diff before the next
one. With several jobs the walk is cut into stretches checked in parallel (`parallel`).

Layers, each importing only those below it: `audit` (this module: the whole history, the
report) → `parallel` (stretches in processes) → `walk` (batch after batch) and `check`
(one diff) → `replay` (a worker instance's state) → `history` and `batches`. The rollout diffs
are checked beside them (`rollout_check`, with its own replay, walk and report section).
"""

from __future__ import annotations

import asyncio
import gc
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime

from fleetplace.services.auditor.check import Checker
from fleetplace.services.auditor.history import DecisionRecord, History, read_history
from fleetplace.services.auditor.history import Progress as HistoryProgress
from fleetplace.services.auditor.parallel import check_in_parallel
from fleetplace.services.auditor.queues import audit_app_placements
from fleetplace.services.auditor.report import AuditReport, SeqProblem
from fleetplace.services.auditor.rollout_check import audit_rollouts
from fleetplace.services.auditor.walk import Auditor, Progress
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeLimits
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.placement.options import DEFAULT_OPTIONS, EngineOptions
from fleetplace.shared.settings import KafkaSettings


def _seq_problems(history: History, wanted: Callable[[str], bool]) -> list[SeqProblem]:
    problems: list[SeqProblem] = []
    seqs: dict[str, dict[int, list[DecisionRecord]]] = {}
    for record in history.decisions:
        if wanted(record.key):
            seqs.setdefault(record.key, {}).setdefault(record.seq, []).append(record)
    for key, by_seq in sorted(seqs.items()):
        highest = max(by_seq)
        missing = [s for s in range(1, highest) if s not in by_seq]
        if missing:
            shown = ", ".join(map(str, missing[:10])) + (" …" if len(missing) > 10 else "")
            problems.append(SeqProblem(key, missing[0], f"seq missing: {shown}"))
        for seq, records in sorted(by_seq.items()):
            if len(records) > 1:
                contents = {
                    tuple(sorted((k, repr(v)) for k, v in r.value.items() if k != "inputs")) for r in records
                }
                if len(contents) > 1:
                    where = ", ".join(r.where for r in records)
                    problems.append(
                        SeqProblem(key, seq, f"published {len(records)} times, differently: {where}")
                    )
    return problems


@contextmanager
def _collection_off() -> Iterator[None]:
    """No cyclic GC during the walk (and in the processes it forks). The history is frozen out of
    it (long-lived, and fork-friendly: collections would touch every page), and the walk leaves
    no cyclic garbage — its state lives to the end, the rest is freed by reference counts — so
    collections would only rescan the growing replay state (docs/performance.md#audit).
    Whatever the walk might leave is collected once it is over."""
    enabled = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()


def audit(
    history: History,
    *,
    placement: str | None = None,
    since: datetime | None = None,
    limits: DecodeLimits = DEFAULT_LIMITS,
    engine: EngineOptions = DEFAULT_OPTIONS,
    progress: Progress | None = None,
    jobs: int = 1,
) -> AuditReport:
    """Check every decision of the history (or of one placement, or evaluated since a time).

    `engine` must be the options the workers ran with (FLEETPLACE_PREFER_NO_SELECT): they are
    not recorded in the decisions. `jobs` > 1 checks contiguous stretches of the history in
    that many processes (same result, see `parallel`)."""
    checker = Checker(
        placement,
        since,
        reasons=history.recorded_reasons(limits),
        compacted_inputs=lambda record: history.compacted_inputs(record.inputs),
    )
    auditor = Auditor(history, limits, engine)
    with _collection_off():
        if not check_in_parallel(auditor, checker, jobs, progress):
            auditor.walk(checker.visit, checker.select, progress=progress)
            checker.took(auditor.warnings, auditor.rebuilds)
    report = checker.report
    report.records = history.records_read
    report.batches = len(auditor.batches)
    report.invalid = [i for i in history.invalid if i.key is None or checker.wanted_key(i.key)]
    report.seq_problems = _seq_problems(history, checker.wanted_key)
    warnings = Counter(report.warnings)
    report.warnings = [w if n == 1 else f"{w} (×{n})" for w, n in warnings.items()]
    for (topic, partition), first_missing in sorted(history.gaps().items()):
        report.warnings.append(
            f"{topic}/{partition}: offsets are not contiguous from {first_missing} (compacted or deleted): "
            "decisions before that point may not reproduce"
        )
    if history.app_placements and placement is None:
        report.queues = audit_app_placements(history, limits)
    if placement is None:
        report.rollouts = audit_rollouts(history, since=since, limits=limits)
    return report


def audit_topics(
    kafka: KafkaSettings | str,
    topics: Topics,
    *,
    placement: str | None = None,
    since: datetime | None = None,
    limits: DecodeLimits = DEFAULT_LIMITS,
    engine: EngineOptions = DEFAULT_OPTIONS,
    jobs: int = 1,
    reading: HistoryProgress | None = None,
    progress: Progress | None = None,
) -> tuple[History, AuditReport]:
    """`read_history` then `audit` (what `fleetplace audit` runs). Call it with no event loop
    running: it runs its own for the read."""

    history = asyncio.run(read_history(kafka, topics, limits=limits, progress=reading))
    report = audit(
        history, placement=placement, since=since, limits=limits, engine=engine, progress=progress, jobs=jobs
    )
    return history, report
