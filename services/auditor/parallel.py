"""Checking contiguous stretches of a history in several processes.

The walk is sequential by nature — each batch's state follows from the one before — but a
stretch can start anywhere: `Auditor.fast_forward` builds the state at its first batch in one
coalesced pass (the last record per key up to that watermark, then the latest own diff per
placement), which costs about as much as applying one record per key. So the batches are cut
into `jobs` stretches of about the same number of diffs; the first is checked here and each
other one in a forked process that shares the history copy-on-write, and the partial reports
are merged in replay order: the result is the one a single walk gives (a test holds them equal).
When `fleetplace audit` reads the topics itself, the first stretch is taken by a process that
started during the read (`early`), and the rest is cut as above among the remaining jobs.

Fork only: the history is not pickled, only the small partial reports come back. Where fork is
not available, or the history is small, the caller walks it alone.
"""

from __future__ import annotations

import itertools
import multiprocessing
import traceback
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from fleetplace.services.auditor.batches import DecisionBatch
from fleetplace.services.auditor.early import EarlyStretch, batch_key
from fleetplace.services.auditor.forked import fork, next_message

if TYPE_CHECKING:
    from fleetplace.services.auditor.audit import AuditReport, Checker
    from fleetplace.services.auditor.walk import Auditor, Progress

# Below this many diffs the fork costs more than it saves.
MIN_DIFFS = 2_000


def stretches(batches: list[DecisionBatch], jobs: int) -> list[tuple[int, int]]:
    """[start, stop) batch ranges with about the same number of diffs each."""
    total = sum(len(b.diffs) for b in batches)
    cuts = [0]
    done = 0
    for i, batch in enumerate(batches):
        done += len(batch.diffs)
        if len(cuts) < jobs and done >= total * len(cuts) / jobs and i + 1 < len(batches):
            cuts.append(i + 1)
    cuts.append(len(batches))
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]


def walk_part(auditor: Auditor, checker: Checker, batches: list[DecisionBatch], done: Any) -> AuditReport:
    """Check `batches` (the state is at their start) in a process of their own, counting the
    diffs walked in the shared integer `done`; the partial report."""

    def progress(count: int, total: int) -> None:
        done.value = count

    auditor.walk(checker.visit, checker.select, progress=progress, batches=batches)
    checker.took(auditor)
    return checker.report


def _check_stretch(
    auditor: Auditor,
    checker: Checker,
    start: int,
    stop: int,
    out: Connection,
    done: Any,  # a shared ctypes integer: diffs walked so far
) -> None:
    try:
        batches = auditor.batches
        auditor.fast_forward(batches[:start])
        out.send(("ok", walk_part(auditor, checker, batches[start:stop], done)))
    except BaseException:
        out.send(("error", traceback.format_exc()))
    finally:
        out.close()


def check_in_parallel(
    auditor: Auditor,
    checker: Checker,
    jobs: int,
    progress: Progress | None,
    early: EarlyStretch | None = None,
) -> bool:
    """Check the whole history in `jobs` processes into `checker.report`; False (nothing done)
    when a single walk is the better choice. `early`: a process already checking the first
    stretch (see `early`); its batches are taken only if they are exactly this history's first."""
    from fleetplace.services.auditor.audit import Checker

    batches = auditor.batches
    total = sum(len(b.diffs) for b in batches)
    start = 0
    if early is not None:
        keys = early.keys()
        if keys and [batch_key(b) for b in batches[: len(keys)]] == keys:
            start = len(keys)
            jobs -= 1
        else:
            early.stop()
            early = None
    if early is None and (
        jobs < 2 or total < MIN_DIFFS or "fork" not in multiprocessing.get_all_start_methods()
    ):
        return False
    ranges = [(a + start, b + start) for a, b in stretches(batches[start:], jobs)]
    if early is None and len(ranges) < 2:
        return False
    running = [
        fork(_check_stretch, auditor, Checker(checker.placement, checker.since), first, stop)
        for first, stop in ranges[1:]
    ]
    parts: list[AuditReport] = []  # in replay order
    try:
        mine = 0

        def walked(count: int, _total: int = 0) -> None:
            nonlocal mine
            mine = count
            if progress is not None:
                others = sum(d.value for _, _, d in running) + (early.done if early is not None else 0)
                progress(mine + others, total)

        own = Checker(checker.placement, checker.since)
        if ranges:
            # the first stretch here, while the others run (they were forked before it moved anything)
            first, stop = ranges[0]
            if first:
                auditor.fast_forward(batches[:first])
            auditor.walk(own.visit, own.select, progress=walked, batches=batches[first:stop])
            own.took(auditor)
        if early is not None:
            parts.append(_early_report(auditor, checker, early, start))
        if ranges:
            parts.append(own.report)
        for process, receive, _ in running:
            status, payload = next_message(process, receive, lambda: walked(mine))
            if status != "ok":
                raise RuntimeError(f"audit process failed:\n{payload}")
            parts.append(payload)
    finally:
        if early is not None:
            early.stop()
        for process, receive, _ in running:
            receive.close()
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join()
    checker.report = parts[0]
    for part_report in parts[1:]:
        checker.merge(part_report)
    checker.report.early_batches = start
    if progress is not None:
        progress(total, total)
    return True


def _early_report(auditor: Auditor, checker: Checker, early: EarlyStretch, count: int) -> AuditReport:
    """The early process's report on the first `count` batches; should it have failed, those
    batches checked here after all, from the start, with a walk of their own."""
    from fleetplace.services.auditor.audit import Checker
    from fleetplace.services.auditor.walk import Auditor

    try:
        return early.report()
    except RuntimeError as e:
        own = Checker(checker.placement, checker.since)
        again = Auditor(auditor.history, auditor.limits, auditor.engine)
        again.walk(own.visit, own.select, batches=auditor.batches[:count])
        own.took(again)
        own.report.warnings.append(f"the early audit process failed; its stretch was checked again: {e}")
        return own.report
