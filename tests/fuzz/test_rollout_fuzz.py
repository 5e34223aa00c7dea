"""Hostile records into a real rollout worker process (tests/fuzz/rollout_run.py): it never stops,
every bad record is in `deadletter` with a reason, every good rollout is answered, the main
rollout ends where the rollout function puts it for the final inputs, and the reports built to
change nothing are counted by reason.

The short run is part of `make test`; `make fuzz` runs 50,000 records (`-m slow`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from tests.fuzz.rollout_run import fuzz_rollout_worker

pytestmark = [pytest.mark.integration]


@pytest.mark.timeout(180)
async def test_two_thousand_hostile_rollout_records_with_good_ones_interleaved(tmp_path: Path) -> None:
    report = await fuzz_rollout_worker(2000, tmp_path, drain_timeout=90)
    sys.stdout.write(orjson.dumps(report.figures()).decode() + "\n")
    assert report.ok, report.explain()
    assert report.deadletters == report.bad > 600
    assert report.answered_good == report.good_rollouts > 30
    assert report.main_matches
    assert report.ignored_counted == report.ignored_expected
    assert set(report.ignored_expected) == {"unchanged", "no-rollout", "other-revision", "not-placed"}
    assert report.healthz_max_s != float("inf")  # /healthz answered every probe


@pytest.mark.slow
@pytest.mark.timeout(1800)
async def test_fifty_thousand_hostile_rollout_records(tmp_path: Path) -> None:
    report = await fuzz_rollout_worker(50_000, tmp_path, max_big=60, drain_timeout=1200)
    sys.stdout.write(orjson.dumps(report.figures()).decode() + "\n")
    assert report.ok, report.explain()
    assert report.deadletters == report.bad
    assert report.answered_good == report.good_rollouts
    assert report.main_matches
    assert report.ignored_counted == report.ignored_expected
    assert report.healthz_max_s != float("inf")  # /healthz answered every probe
    # memory stays bounded: 50,000 records (a third of them floods of one report) cost the worker
    # about 150 MB at peak; a leak per record would show as several times that
    assert report.worker_peak_rss_mb < 400
