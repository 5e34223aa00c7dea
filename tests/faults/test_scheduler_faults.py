"""Fault injection on real processes: scheduler workers SIGKILLed and paused, the broker paused and
restarted, during a steady stream of fleet changes.

Every run ends with the same checks (tests/faults/outputs.py): each placement's last decision equals
a fault-free, from-scratch evaluation of the final objects; `seq` runs 1, 2, 3, … per placement with
no gap and no repeat; no state is published twice in a row; `placement-decisions` ends on the last
seq; nothing the driver had acknowledged is missing from the broker; `fleetplace audit` reproduces
every decision. The figures are printed as one JSON line per run (`make faults` shows them).

`test_short_run_of_worker_kills_and_a_broker_pause` is the short version that `make test` runs;
the rest are `slow` and run with `make faults`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.scenario import Plan, Report, run

pytestmark = [pytest.mark.integration, pytest.mark.faults]

BROKER_STALL = (
    "Tansu on s3:// after a hard restart stops serving part of a partition it holds: consumers sit "
    "below the high watermark with nothing to fetch (the worker's broadcast lag stays > 0), so the "
    "worker cannot see the records; not a scheduler fault. See docs/operations.md, 'Known limits'."
)


def check(report: Report) -> None:
    if report.ok:
        return
    if report.plan.storage == "s3" and report.broker_stalled and not report.verdict.seq_repeats_conflicting:
        pytest.xfail(BROKER_STALL + "\n" + report.explain())
    raise AssertionError(report.explain())


@pytest.mark.timeout(240)
async def test_short_run_of_worker_kills_and_a_broker_pause(tmp_path: Path) -> None:
    report = await run(
        Plan("short", seconds=16, rate=20, kill_every=6, broker_pause=(8, 4), converge_timeout=60),
        tmp_path,
    )
    check(report)
    assert report.faults["worker_sigkill"] >= 2 and report.faults["broker_sigstop"] == 1


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_worker_sigkilled_every_few_seconds_and_restarted(tmp_path: Path) -> None:
    report = await run(Plan("worker-sigkill", seconds=90, kill_every=4, restart_after=1.0), tmp_path)
    check(report)
    assert report.faults["worker_sigkill"] >= 15


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_broker_paused_for_twenty_seconds(tmp_path: Path) -> None:
    report = await run(Plan("broker-sigstop-20s", seconds=60, broker_pause=(15, 20)), tmp_path)
    check(report)


@pytest.mark.slow
@pytest.mark.timeout(900)
async def test_broker_restarted_with_durable_storage_while_workers_run(tmp_path: Path) -> None:
    report = await run(
        Plan("broker-restart-s3", seconds=60, storage="s3", broker_restarts=(15, 35), converge_timeout=180),
        tmp_path,
    )
    check(report)
    assert report.faults["broker_restart"] == 2


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_worker_paused_past_its_session_timeout_comes_back_as_a_zombie(tmp_path: Path) -> None:
    """SIGSTOP one worker for 15 s (> the 6 s session timeout): the other takes its partitions; when
    the paused one resumes it must not publish for placements it no longer owns."""
    report = await run(Plan("worker-sigstop-15s", seconds=50, worker_pause=(10, 15), rate=30), tmp_path)
    check(report)


@pytest.mark.slow
@pytest.mark.timeout(900)
async def test_everything_at_once_on_durable_storage(tmp_path: Path) -> None:
    report = await run(
        Plan(
            "all-faults-s3",
            seconds=90,
            storage="s3",
            kill_every=6,
            broker_pause=(20, 20),
            broker_restarts=(55,),
            worker_pause=(70, 10),
            converge_timeout=180,
        ),
        tmp_path,
    )
    check(report)
