"""Checking contiguous stretches of a history in several processes.

The walk is sequential by nature — each batch's state follows from the one before — but a
stretch can start anywhere: `Auditor.fast_forward` builds the state at its first batch in one
coalesced pass (the last record per key up to that watermark, then the latest own diff per
placement), which costs about as much as applying one record per key. So the batches are cut
into `jobs` stretches of about the same number of diffs; the first is checked here and each
other one in a forked process that shares the history copy-on-write, and the partial reports
are merged in replay order: the result is the one a single walk gives (a test holds them equal).

Fork only: the history is not pickled, only the small partial reports come back. Where fork is
not available, or the history is small, the caller walks it alone.
"""

from __future__ import annotations

import itertools
import multiprocessing
import traceback
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from services.auditor.batches import DecisionBatch

if TYPE_CHECKING:
    from services.auditor.audit import AuditReport, Checker
    from services.auditor.walk import Auditor, Progress

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


def _check_stretch(
    auditor: Auditor,
    checker: Checker,
    start: int,
    stop: int,
    done: Any,  # a shared ctypes integer: diffs walked so far
    out: Connection,
) -> None:
    try:
        batches = auditor.batches
        auditor.fast_forward(batches[:start])

        def progress(count: int, total: int) -> None:
            done.value = count

        auditor.walk(checker.visit, checker.select, progress=progress, batches=batches[start:stop])
        checker.took(auditor)
        out.send(("ok", checker.report))
    except BaseException:
        out.send(("error", traceback.format_exc()))
    finally:
        out.close()


def check_in_parallel(auditor: Auditor, checker: Checker, jobs: int, progress: Progress | None) -> bool:
    """Check the whole history in `jobs` processes into `checker.report`; False (nothing done)
    when a single walk is the better choice."""
    from services.auditor.audit import Checker

    batches = auditor.batches
    total = sum(len(b.diffs) for b in batches)
    if jobs < 2 or total < MIN_DIFFS or "fork" not in multiprocessing.get_all_start_methods():
        return False
    ranges = stretches(batches, jobs)
    if len(ranges) < 2:
        return False
    ctx = multiprocessing.get_context("fork")
    running = []
    for start, stop in ranges[1:]:
        receive, send = ctx.Pipe(duplex=False)
        done = ctx.Value("q", 0, lock=False)
        part = Checker(checker.placement, checker.since)
        process = ctx.Process(
            target=_check_stretch, args=(auditor, part, start, stop, done, send), daemon=True
        )
        process.start()
        send.close()
        running.append((process, receive, done))
    results: list[AuditReport] = []
    try:
        # the first stretch here, while the others run (they were forked before it moved anything)
        first_start, first_stop = ranges[0]
        mine = 0

        def walked(count: int, _total: int = 0) -> None:
            nonlocal mine
            mine = count
            if progress is not None:
                progress(mine + sum(d.value for _, _, d in running), total)

        auditor.walk(checker.visit, checker.select, progress=walked, batches=batches[first_start:first_stop])
        checker.took(auditor)
        for process, receive, _ in running:
            while not receive.poll(0.2):
                walked(mine)
                if not process.is_alive() and not receive.poll(0):
                    raise RuntimeError(f"audit process {process.pid} died with exit code {process.exitcode}")
            status, payload = receive.recv()
            if status != "ok":
                raise RuntimeError(f"audit process failed:\n{payload}")
            results.append(payload)
    finally:
        for process, receive, _ in running:
            receive.close()
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join()
    for part_report in results:
        checker.merge(part_report)
    if progress is not None:
        progress(total, total)
    return True
