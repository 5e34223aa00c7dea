"""BroadcastReader.stuck: which partitions count as not handed out by the broker.

The broker's side cannot be made to misbehave on demand (the real case, Tansu on s3 after a hard
restart, is exercised by `make faults`), so this drives the reader's bookkeeping with a stand-in
that answers only the questions it asks: the high watermark, the last stable offset and the position.
"""

from __future__ import annotations

from typing import Any

import pytest

from fleetplace.shared.bus.kafka import BroadcastReader


class Offsets:
    def __init__(self) -> None:
        self.hw: dict[Any, int] = {}
        self.lso: dict[Any, int] = {}
        self.pos: dict[Any, int] = {}

    def highwater(self, tp: Any) -> int | None:
        return self.hw.get((tp.topic, tp.partition))

    def last_stable_offset(self, tp: Any) -> int | None:
        return self.lso.get((tp.topic, tp.partition))

    async def position(self, tp: Any) -> int:
        return self.pos[(tp.topic, tp.partition)]


@pytest.fixture
def reader() -> tuple[BroadcastReader, Offsets]:
    r = BroadcastReader("127.0.0.1:9", ["clusters"])
    offsets = Offsets()
    r._consumer = offsets
    r._tps = [("clusters", 0), ("clusters", 1)]
    offsets.hw = {("clusters", 0): 10, ("clusters", 1): 5}
    offsets.pos = {("clusters", 0): 10, ("clusters", 1): 3}
    return r, offsets


async def test_a_partition_that_does_not_move_below_its_high_watermark_is_stuck(
    reader: tuple[BroadcastReader, Offsets],
) -> None:
    r, _ = reader
    for _ in range(25):
        await r._track_progress()
    assert r.stuck(polls=20, seconds=0) == [("clusters", 1)]
    assert r.stuck(polls=20, seconds=3600) == []  # not for long enough yet
    assert r.stuck(polls=30, seconds=0) == []  # not for enough polls yet


async def test_progress_or_reaching_the_end_clears_it(reader: tuple[BroadcastReader, Offsets]) -> None:
    r, offsets = reader
    for _ in range(25):
        await r._track_progress()
    offsets.pos[("clusters", 1)] = 4  # moved: a busy reader is not a stuck one
    await r._track_progress()
    assert r.stuck(polls=20, seconds=0) == []
    for _ in range(25):
        await r._track_progress()
    assert r.stuck(polls=20, seconds=0) == [("clusters", 1)]
    offsets.pos[("clusters", 1)] = 5  # at the end
    await r._track_progress()
    assert r.stuck(polls=1, seconds=0) == []


async def test_held_up_from_a_stuck_partition_until_caught_up_again(
    reader: tuple[BroadcastReader, Offsets],
) -> None:
    r, offsets = reader
    for _ in range(25):
        await r._track_progress()
    r._update_held_up()
    assert not r.held_up  # stuck() counts 5 s too: not yet
    r._behind = {tp: (pos, n, since - 10) for tp, (pos, n, since) in r._behind.items()}
    r._update_held_up()
    assert r.held_up
    offsets.pos[("clusters", 1)] = 4  # moving again, but not at the end: still held up
    await r._track_progress()
    r._update_held_up()
    assert r.held_up
    offsets.pos[("clusters", 1)] = 5
    r._mark_caught_up(await r._track_progress())
    r._update_held_up()
    assert not r.held_up


async def test_a_partition_held_at_an_open_transaction_is_at_its_end_not_stuck(
    reader: tuple[BroadcastReader, Offsets],
) -> None:
    """A read_committed reader cannot pass the first offset of a transaction still open (the last
    stable offset): there it has read all it can, so it is caught up, not stuck."""
    r, offsets = reader
    offsets.lso = {("clusters", 1): 3}
    for _ in range(25):
        assert await r._track_progress()
    assert r.stuck(polls=20, seconds=0) == []
