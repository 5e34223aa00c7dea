"""Checking contiguous stretches of a history in several processes.

The walk is sequential by nature — each batch's state follows from the one before — but a
stretch can start anywhere: `Auditor.fast_forward` builds the state at its first batch in one
coalesced pass (the last record per key up to that watermark, then the latest own diff per
placement), which costs about as much as applying one record per key. So the batches are cut
into `jobs` stretches of about the same number of diffs; the first is checked here and each
other one in a process of a fork-context `ProcessPoolExecutor`, and the partial reports are
merged in replay order: the result is the one a single walk gives (a test holds them equal).

Fork only: the processes inherit the history copy-on-write (it is never pickled), and only the
small partial reports come back. Where fork is not available, or the history is small, the
caller walks it alone.
"""

from __future__ import annotations

import itertools
import multiprocessing
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fleetplace.services.auditor.batches import DecisionBatch
from fleetplace.services.auditor.check import Checker
from fleetplace.services.auditor.report import AuditReport
from fleetplace.services.auditor.walk import Auditor, Progress

# Below this many diffs the fork costs more than it saves.
MIN_DIFFS = 2_000
_PROGRESS_EVERY_S = 0.2


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


@dataclass(frozen=True)
class _Inherited:
    """What the forked processes take from this one by fork, not by pickling: the history (in
    an auditor that has walked nothing) and a shared counter per stretch for the progress bar."""

    auditor: Auditor
    placement: str | None
    since: datetime | None
    done: Any  # multiprocessing Array of diffs walked, one slot per stretch


_inherited: _Inherited | None = None  # set while a pool forks: read by `_check_stretch` in the child


def _check_stretch(slot: int, start: int, stop: int) -> AuditReport:
    """In a forked process: check batches [start, stop) of the inherited history."""
    assert _inherited is not None, "runs only in a process forked by check_in_parallel"
    fresh = _inherited.auditor
    auditor = Auditor(fresh.history, fresh.limits, fresh.engine, batches=fresh.batches)
    auditor.fast_forward(auditor.batches[:start])
    history = fresh.history
    checker = Checker(
        _inherited.placement,
        _inherited.since,
        compacted_inputs=lambda record: history.compacted_inputs(record.inputs),
    )
    done = _inherited.done

    def walked(count: int, _total: int) -> None:
        done[slot] = count

    auditor.walk(checker.visit, checker.select, progress=walked, batches=auditor.batches[start:stop])
    checker.took(auditor.warnings, auditor.rebuilds)
    return checker.report


def check_in_parallel(auditor: Auditor, checker: Checker, jobs: int, progress: Progress | None) -> bool:
    """Check the whole history in `jobs` processes into `checker.report`; False (nothing done)
    when a single walk is the better choice. `auditor` must not have walked yet."""
    global _inherited
    batches = auditor.batches
    total = sum(len(b.diffs) for b in batches)
    if jobs < 2 or total < MIN_DIFFS or "fork" not in multiprocessing.get_all_start_methods():
        return False
    ranges = stretches(batches, jobs)
    if len(ranges) < 2:
        return False
    context = multiprocessing.get_context("fork")
    done = context.Array("q", len(ranges), lock=False)
    _inherited = _Inherited(auditor, checker.placement, checker.since, done)
    try:
        with ProcessPoolExecutor(len(ranges) - 1, mp_context=context) as pool:
            others = [pool.submit(_check_stretch, slot, a, b) for slot, (a, b) in enumerate(ranges) if slot]

            def walked(count: int = -1, _total: int = 0) -> None:
                if count >= 0:
                    done[0] = count
                if progress is not None:
                    progress(sum(done), total)

            # the first stretch here, while the others run
            first, stop = ranges[0]
            auditor.walk(checker.visit, checker.select, progress=walked, batches=batches[first:stop])
            checker.took(auditor.warnings, auditor.rebuilds)
            pending: set[Future[AuditReport]] = set(others)
            while pending:
                finished, pending = wait(pending, timeout=_PROGRESS_EVERY_S, return_when=FIRST_EXCEPTION)
                if any(f.exception() is not None for f in finished):
                    break
                walked()
            for future in others:  # merged in replay order
                try:
                    checker.merge(future.result())
                except Exception as e:
                    raise RuntimeError(f"audit process failed: {e!r}") from e
    finally:
        _inherited = None
    if progress is not None:
        progress(total, total)
    return True
