"""Hostile records into a real scheduler worker process (tests/fuzz/run.py): it never stops, every
bad record is in `deadletter` with a reason, every good placement in between is decided.

The short run is part of `make test`; `make fuzz` runs 100,000 records (`-m slow`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from tests.fuzz.run import fuzz_worker

pytestmark = [pytest.mark.integration]


@pytest.mark.timeout(180)
async def test_two_thousand_hostile_records_with_good_placements_interleaved(tmp_path: Path) -> None:
    report = await fuzz_worker(2000, tmp_path, drain_timeout=90)
    sys.stdout.write(orjson.dumps(report.figures()).decode() + "\n")
    assert report.ok, report.explain()
    assert report.deadletters == report.bad > 1000
    assert report.decided_good == report.good_placements > 150


@pytest.mark.slow
@pytest.mark.timeout(1800)
async def test_one_hundred_thousand_hostile_records(tmp_path: Path) -> None:
    report = await fuzz_worker(100_000, tmp_path, expensive_cel=5, max_big=60, drain_timeout=1200)
    sys.stdout.write(orjson.dumps(report.figures()).decode() + "\n")
    assert report.ok, report.explain()
    assert report.deadletters == report.bad
    assert report.decided_good == report.good_placements
