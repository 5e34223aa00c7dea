"""Re-derive every published decision from the topics and report the ones that do not reproduce.

For each batch (see `batches`): restore the instance's state to the batch's watermark
(`replay`), then for each diff in key order: make the placement's previous decision the one the
worker diffed against (seq - 1), evaluate the placement at `evaluatedAt` with the worker's own
engine, compare what the diff would hold (`check`), and commit the recorded diff before the next
one. With several jobs the walk is cut into stretches checked in parallel (`parallel`), and
`audit_topics` checks the first stretch while the rest is still being read (`early`).

Layers, each importing only those below it: `audit` (this module: the whole history, the
report) → `early` (the first stretch, read and checked in a process of its own) and `parallel`
(stretches in processes) → `walk` (batch after batch) and `check` (one diff) → `replay` (a
worker instance's state) → `history` and `batches`. The rollout diffs
are checked beside them (`rollouts`: its own walk, check and report section).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from datetime import datetime

from fleetplace.services.auditor.check import Checker
from fleetplace.services.auditor.early import FirstStretch, checking_first_stretch
from fleetplace.services.auditor.history import DecisionRecord, History, read_history
from fleetplace.services.auditor.history import Progress as HistoryProgress
from fleetplace.services.auditor.parallel import check_in_parallel
from fleetplace.services.auditor.queues import audit_app_placements
from fleetplace.services.auditor.report import AuditReport, SeqProblem
from fleetplace.services.auditor.rollouts import audit_rollouts
from fleetplace.services.auditor.walk import Auditor, Progress, collection_off
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


def _check(auditor: Auditor, checker: Checker, jobs: int, progress: Progress | None, start: int = 0) -> None:
    """Check the batches from `start` on into `checker.report`, in `jobs` processes or here."""
    if not check_in_parallel(auditor, checker, jobs, progress, start=start):
        if start:
            auditor.fast_forward(auditor.batches[:start])
        auditor.walk(checker.visit, checker.select, progress=progress, batches=auditor.batches[start:])
        checker.took(auditor.warnings, auditor.rebuilds)


def audit(
    history: History,
    *,
    placement: str | None = None,
    since: datetime | None = None,
    limits: DecodeLimits = DEFAULT_LIMITS,
    engine: EngineOptions = DEFAULT_OPTIONS,
    progress: Progress | None = None,
    jobs: int = 1,
    first: FirstStretch | None = None,
) -> AuditReport:
    """Check every decision of the history (or of one placement, or evaluated since a time).

    `engine` must be the options the workers ran with (FLEETPLACE_PREFER_NO_SELECT): they are
    not recorded in the decisions. `jobs` > 1 checks contiguous stretches of the history in
    that many processes (same result, see `parallel`); `first`, the first stretch being checked
    elsewhere already (`early`: same result)."""
    auditor = Auditor(history, limits, engine)
    total = len(history.decisions)
    start = 0 if first is None else first.length(history, auditor.batches)

    def checked(done: int, _total: int) -> None:  # the rest's progress, with the first stretch's
        if progress is not None:
            progress(min(total, done + (first.done if first is not None and start else 0)), total)

    with collection_off():
        checker = Checker(placement, since)
        _check(auditor, checker, jobs - 1 if start else jobs, checked, start)  # `first` is one of the jobs
        if start:
            assert first is not None
            head = Checker(placement, since)
            early = first.report(auditor.batches[:start])
            if early is None:  # it checked other batches: check them here
                _check(Auditor(history, limits, engine, batches=auditor.batches[:start]), head, jobs, None)
            else:
                head.report = early
            head.merge(checker.report)
            checker = head
    if progress is not None:
        progress(total, total)
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
    """`read_history` then `audit` (what `fleetplace
    audit` runs), with the first stretch checked during the read when there are several jobs.
    Call it with no event loop running: it forks, and runs its own loops."""

    with checking_first_stretch(
        kafka, topics, jobs=jobs, limits=limits, engine=engine, placement=placement, since=since
    ) as first:
        history = asyncio.run(read_history(kafka, topics, limits=limits, progress=reading))
        report = audit(
            history,
            placement=placement,
            since=since,
            limits=limits,
            engine=engine,
            progress=progress,
            jobs=jobs,
            first=first,
        )
    return history, report
