"""The broker watch: its log filter (aiokafka repeats the same few lines while a broker is gone),
and its end when its worker stops."""

from __future__ import annotations

import asyncio
import logging

import pytest

from fleetplace.shared.bus.health import BrokerWatch, RepeatedLogFilter
from tests.cancel import ends_when_cancelled


def _record(msg: str, *args: object, level: int = logging.ERROR, name: str = "aiokafka") -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, args, None)


def test_the_first_line_of_each_kind_passes_and_repeats_are_held_back_until_reset() -> None:
    now = [0.0]
    quiet = RepeatedLogFilter(window_s=60, clock=lambda: now[0])
    unable = "Unable connect to node with id %s: %s"
    assert quiet.filter(_record(unable, 111, "refused"))
    assert not any(quiet.filter(_record(unable, 111, "refused")) for _ in range(100))
    assert quiet.filter(_record("Unable to update metadata from %s", [111]))  # another kind
    assert quiet.filter(_record(unable, 111, "refused", name="aiokafka.conn"))  # another logger
    assert quiet.filter(_record("retrying", level=logging.INFO))  # below warning: untouched
    assert quiet.held_back == 100
    now[0] = 61
    assert quiet.filter(_record(unable, 111, "refused"))  # once a window in a long outage
    quiet.reset()  # the broker is back: the next outage shows its first lines again
    assert quiet.filter(_record("Unable to update metadata from %s", [111]))


class _AnsweringClient:
    """A client whose metadata answers come when the test says so."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.answer: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def fetch_all_metadata(self) -> None:
        self.asked.set()
        await self.answer


@pytest.mark.parametrize("turns_between", range(5))
async def test_the_watch_ends_when_cancelled_as_the_broker_answers(turns_between: int) -> None:
    # on Python 3.11 asyncio.wait_for swallows a cancel that comes with the answer; the watch
    # then kept probing after its worker had stopped, and the stop waited for it forever
    client = _AnsweringClient()
    watch = asyncio.create_task(BrokerWatch(client, bootstrap="b:9092", interval_s=60).run())
    await client.asked.wait()
    client.answer.set_result(None)
    assert await ends_when_cancelled(watch, after_turns=turns_between)
