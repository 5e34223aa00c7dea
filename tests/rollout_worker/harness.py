"""Drive rollout workers against a real broker: publish inputs, read diffs, move the clock."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from fleetplace.services.rollout.worker import RolloutWorker
from fleetplace.shared.bus.codec import decode_object
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import Topics, rollout_of
from fleetplace.shared.settings import KafkaSettings, Settings
from tests.bus_harness import BusHarness, running_worker


def settings_for(bootstrap: str, prefix: str, **extra: Any) -> Settings:
    return Settings(
        kafka=KafkaSettings(bootstrap_servers=bootstrap),
        topic_prefix=prefix,
        rollout_group_id=f"{prefix}rollout",
        http_port=0,
        **extra,
    )


class RolloutBus(BusHarness):
    """A producer of test inputs and a reader of the diffs, the state and the dead letters."""

    def __init__(self, bootstrap: str, topics: Topics) -> None:
        super().__init__(bootstrap, topics)
        self.diffs: list[dict[str, Any]] = []
        self.state: dict[str, dict[str, Any] | None] = {}
        self.deadletters: list[dict[str, Any]] = []

    def read_topics(self) -> list[str]:
        return [self.topics.rollout_decisions, self.topics.rollout_state, self.topics.deadletter]

    def on_record(self, record: Record) -> None:
        value = decode_object(record.value)
        if record.topic == self.topics.rollout_state:
            self.state[str(record.key)] = value
        elif value is None:
            return
        elif record.topic == self.topics.rollout_decisions:
            self.diffs.append(value)
        else:
            self.deadletters.append(value)

    def describe(self) -> str:
        return f"diffs: {self.diffs[-5:]}"

    async def send(
        self,
        topic: str,
        key: str,
        value: dict[str, Any] | None,
        by_rollout: bool = False,
        partition_of: str | None = None,
    ) -> None:
        """`by_rollout`: on the partition of the key's rollout; `partition_of`: of that key."""
        partition_key = partition_of or (rollout_of(key) if by_rollout else None)
        await self.send_json(topic, key, value, partition_key=partition_key)

    async def report(self, key: str, value: dict[str, Any] | None) -> None:
        await self.send("rollout-status", key, value, by_rollout=True)

    async def set_clock(self, now: str, group: str) -> None:
        await self.send("clock", group, {"now": now})

    def of(self, key: str) -> list[dict[str, Any]]:
        return [d for d in self.diffs if d["rollout"] == key]

    def last(self, key: str) -> dict[str, Any] | None:
        mine = self.of(key)
        return max(mine, key=lambda d: int(d["seq"])) if mine else None


@contextlib.asynccontextmanager
async def running(settings: Settings, instance: str = "rollout") -> AsyncIterator[RolloutWorker]:
    worker = RolloutWorker(settings, instance=instance)
    async with running_worker(worker, lambda: worker.ready):
        yield worker
