"""Drive rollout workers against a real broker: publish inputs, read diffs, move the clock."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from fleetplace.services.rollout.worker import RolloutWorker
from fleetplace.shared.bus.codec import decode_object, encode_json
from fleetplace.shared.bus.kafka import BroadcastReader, make_producer, send_all, start_client
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.bus.topics import Topics, rollout_of
from fleetplace.shared.settings import KafkaSettings, Settings


def settings_for(bootstrap: str, prefix: str, **extra: Any) -> Settings:
    return Settings(
        kafka=KafkaSettings(bootstrap_servers=bootstrap),
        topic_prefix=prefix,
        rollout_group_id=f"{prefix}rollout",
        http_port=0,
        **extra,
    )


class RolloutBus:
    """A producer of test inputs and a reader of the diffs, the state and the dead letters."""

    def __init__(self, bootstrap: str, topics: Topics) -> None:
        self.bootstrap = bootstrap
        self.topics = topics
        self.diffs: list[dict[str, Any]] = []
        self.state: dict[str, dict[str, Any] | None] = {}
        self.deadletters: list[dict[str, Any]] = []
        self._producer: Any = None
        self._reader: BroadcastReader | None = None
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> RolloutBus:
        self._producer = make_producer(self.bootstrap)
        await start_client(self._producer)
        self._reader = BroadcastReader(
            self.bootstrap, [self.topics.rollout_decisions, self.topics.rollout_state, self.topics.deadletter]
        )
        await self._reader.start()
        self._task = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._reader is not None:
            await self._reader.stop()
        await self._producer.stop()

    async def _read(self) -> None:
        assert self._reader is not None
        while True:
            batch = await self._reader.poll()
            for r in batch.records:
                value = decode_object(r.value)
                if r.topic == self.topics.rollout_state:
                    self.state[str(r.key)] = value
                elif value is None:
                    continue
                elif r.topic == self.topics.rollout_decisions:
                    self.diffs.append(value)
                else:
                    self.deadletters.append(value)

    async def send(
        self,
        topic: str,
        key: str,
        value: dict[str, Any] | None,
        by_rollout: bool = False,
        partition_of: str | None = None,
    ) -> None:
        """`by_rollout`: on the partition of the key's rollout; `partition_of`: of that key."""
        record = OutgoingRecord(
            self.topics.name(topic),
            key,
            None if value is None else encode_json(value),
            partition_key=partition_of or (rollout_of(key) if by_rollout else None),
        )
        await send_all(self._producer, [record])

    async def report(self, key: str, value: dict[str, Any] | None) -> None:
        await self.send("rollout-status", key, value, by_rollout=True)

    async def set_clock(self, now: str, group: str) -> None:
        await self.send("clock", group, {"now": now})

    def of(self, key: str) -> list[dict[str, Any]]:
        return [d for d in self.diffs if d["rollout"] == key]

    def last(self, key: str) -> dict[str, Any] | None:
        mine = self.of(key)
        return max(mine, key=lambda d: int(d["seq"])) if mine else None

    async def wait_for(
        self, check: Callable[[], bool], timeout: float = 30.0, what: str = "condition"
    ) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; diffs: {self.diffs[-5:]}")
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def running(settings: Settings, instance: str = "rollout") -> AsyncIterator[RolloutWorker]:
    worker = RolloutWorker(settings, instance=instance)
    task = asyncio.create_task(worker.run())
    try:
        deadline = time.monotonic() + 30
        while not worker.ready:
            if task.done():
                task.result()
            if time.monotonic() > deadline:
                raise AssertionError("worker never became ready")
            await asyncio.sleep(0.05)
        yield worker
    finally:
        worker.stop()
        await asyncio.wait_for(task, 30)
