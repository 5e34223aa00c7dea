"""A stopping score worker cancels its evaluator; the evaluator must end whatever it was waiting for.

The hang this guards against: on Python 3.11 `asyncio.wait_for` returns normally when the awaited
event fires in the same few loop turns as the cancel, and an evaluator looping on it never ended
(a worker's stop then waited forever for its background jobs)."""

from __future__ import annotations

import asyncio

import pytest

from fleetplace.services.scores.worker import ScoreWorker
from tests.cancel import ends_when_cancelled
from tests.scores.harness import settings_for


@pytest.mark.parametrize("turns_between", range(5))
async def test_the_evaluator_ends_when_cancelled_as_it_is_woken(turns_between: int) -> None:
    worker = ScoreWorker(settings_for("127.0.0.1:9", "stop."))
    evaluator = asyncio.create_task(worker._evaluator())
    await asyncio.sleep(0.01)  # waiting for a wake-up
    worker._wake.set()
    assert await ends_when_cancelled(evaluator, after_turns=turns_between)
