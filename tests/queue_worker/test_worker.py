"""The queue-placer worker against the embedded broker, over TCP."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from fleetplace.services.queue_placer.worker import QueueWorker
from fleetplace.shared.bus.codec import decode_object, encode_json
from fleetplace.shared.bus.kafka import BroadcastReader, make_producer, send_all, start_client
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.settings import KafkaSettings, Settings
from tests.proc import stop_process

pytestmark = pytest.mark.integration


def partition(rules: list[dict[str, Any]], queues: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "name": "default",
        "queues": [{"name": "root", "submitacl": "*", "queues": queues or []}],
        "placementrules": rules,
    }


def app(app_id: str, user: str = "alice", queue: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "applicationID": app_id,
        "partition": "default",
        "user": user,
        "groups": [],
        "tags": {},
        "queue": queue,
        **extra,
    }


class Bus:
    def __init__(self, bootstrap: str, topics: Topics) -> None:
        self.bootstrap, self.topics = bootstrap, topics
        self.placements: list[dict[str, Any]] = []
        self.deadletters: list[dict[str, Any]] = []

    async def __aenter__(self) -> Bus:
        self.producer = make_producer(self.bootstrap)
        await start_client(self.producer)
        self.reader = BroadcastReader(self.bootstrap, [self.topics.app_placements, self.topics.deadletter])
        await self.reader.start()
        self.task = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        await self.reader.stop()
        await self.producer.stop()

    async def _read(self) -> None:
        while True:
            for r in (await self.reader.poll()).records:
                value = decode_object(r.value)
                if value is not None:
                    (self.placements if r.topic == self.topics.app_placements else self.deadletters).append(
                        value
                    )

    async def config(self, doc: dict[str, Any] | bytes, key: str = "default") -> None:
        value = doc if isinstance(doc, bytes) else encode_json(doc)
        await send_all(self.producer, [OutgoingRecord(self.topics.queue_configs, key, value)])

    async def submit(self, *apps: dict[str, Any]) -> None:
        await send_all(
            self.producer,
            [OutgoingRecord(self.topics.applications, a["applicationID"], encode_json(a)) for a in apps],
        )

    def by_app(self) -> dict[str, dict[str, Any]]:
        return {p["applicationID"]: p for p in self.placements}

    async def wait_for(self, check: Callable[[], bool], what: str, timeout: float = 40.0) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out waiting for {what}: {self.placements[-5:]} {self.deadletters[-3:]}"
                )
            await asyncio.sleep(0.05)


def settings_for(bootstrap: str, prefix: str) -> Settings:
    return Settings(
        kafka=KafkaSettings(bootstrap_servers=bootstrap),
        topic_prefix=prefix,
        queue_placer_group_id=f"{prefix}queues",
        http_port=0,
    )


@contextlib.asynccontextmanager
async def running(settings: Settings) -> AsyncIterator[QueueWorker]:
    worker = QueueWorker(settings)
    task = asyncio.create_task(worker.run())
    try:
        while not worker.ready:
            if task.done():
                task.result()
            await asyncio.sleep(0.05)
        yield worker
    finally:
        worker.stop()
        await asyncio.wait_for(task, 30)


USER_RULE = [{"name": "user", "create": True}]
FIXED_RULE = [{"name": "fixed", "value": "root.batch", "create": True}]


async def test_applications_are_placed_and_a_reload_takes_effect(broker: str, topics: Topics) -> None:
    async with Bus(broker, topics) as bus:
        await bus.config(partition(USER_RULE))
        async with running(settings_for(broker, topics.prefix)) as worker:
            await bus.submit(app("a1", "alice"), app("a2", "bob"))
            await bus.wait_for(lambda: len(bus.placements) == 2, "two placements")
            got = bus.by_app()
            assert (got["a1"]["queue"], got["a1"]["rule"], got["a1"]["created"]) == (
                "root.alice",
                "user",
                True,
            )
            assert got["a2"]["queue"] == "root.bob"
            assert got["a1"]["ruleSetVersion"] and got["a1"]["evaluatedAt"].endswith("Z")
            assert any(k.startswith("queue-configs/") for k in got["a1"]["inputs"])
            version = got["a1"]["ruleSetVersion"]

            await bus.config(partition(FIXED_RULE))
            # the reload and the applications come through different topics, in no set order: a3
            # is submitted once the worker holds the new rules (a fixed pause raced it on a busy
            # machine); a reload that never takes effect still times out here
            await bus.wait_for(lambda: worker.state.version != version, "the reloaded rules")
            await bus.submit(app("a3", "alice"))
            await bus.wait_for(lambda: "a3" in bus.by_app(), "a3")
            a3 = bus.by_app()["a3"]
            assert (a3["queue"], a3["rule"]) == ("root.batch", "fixed")
            assert a3["ruleSetVersion"] != version


async def test_a_broken_reload_is_rejected_whole_and_the_last_good_rules_stay(
    broker: str, topics: Topics
) -> None:
    async with Bus(broker, topics) as bus:
        await bus.config(partition(USER_RULE))
        async with running(settings_for(broker, topics.prefix)) as worker:
            await bus.config(
                {"name": "default", "queues": [{"name": "root"}], "placementrules": [{"name": "nosuchrule"}]}
            )
            await bus.config(b"{not json")
            await bus.wait_for(lambda: len(bus.deadletters) == 2, "two dead letters")
            assert (
                "placementrules" in bus.deadletters[0]["error"] or "nosuchrule" in bus.deadletters[0]["error"]
            )
            await bus.submit(app("b1", "carol"))
            await bus.wait_for(lambda: "b1" in bus.by_app(), "b1")
            assert bus.by_app()["b1"]["queue"] == "root.carol"  # still the user rule
            assert worker.config_rejections._value.get() == 2


async def test_bad_applications_go_to_deadletter_and_the_rest_are_placed(broker: str, topics: Topics) -> None:
    async with Bus(broker, topics) as bus:
        await bus.config(partition(USER_RULE))
        async with running(settings_for(broker, topics.prefix)):
            await bus.submit(app("ok1", "dave"))
            await send_all(
                bus.producer,
                [OutgoingRecord(topics.applications, "bad1", b'{"applicationID": "bad1", "user": 7}')],
            )
            await send_all(
                bus.producer, [OutgoingRecord(topics.applications, "wrongkey", encode_json(app("other")))]
            )
            await bus.submit(app("ok2", "erin"))
            await bus.wait_for(
                lambda: {"ok1", "ok2"} <= bus.by_app().keys() and len(bus.deadletters) == 2,
                "placements and dead letters",
            )
            assert "bad1" not in bus.by_app() and "other" not in bus.by_app()


def start_worker(
    broker: str, topics: Topics, extra_env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "FLEETPLACE_LOG_LEVEL": "warning",
        "FLEETPLACE_LOG_FORMAT": "console",
        **(extra_env or {}),
    }
    cmd = [
        sys.executable,
        "-m",
        "fleetplace.services.cli",
        "worker",
        "queues",
        "--bootstrap",
        broker,
        "--prefix",
        topics.prefix,
        "--group",
        f"{topics.prefix}queues",
        "--http-port",
        "0",
    ]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def test_a_killed_worker_restarts_placing_nothing_twice_and_losing_nothing(
    broker: str, topics: Topics
) -> None:
    apps = [app(f"app{i:03d}", f"user{i % 7}") for i in range(300)]
    async with Bus(broker, topics) as bus:
        await bus.config(partition(USER_RULE))
        worker = start_worker(broker, topics)
        try:
            await bus.submit(*apps[:150])
            await bus.wait_for(lambda: len(bus.placements) >= 20, "some placements", timeout=120)
            worker.send_signal(signal.SIGKILL)
            worker.wait(10)
            await bus.submit(*apps[150:])
            worker = start_worker(broker, topics)
            await bus.wait_for(lambda: len(bus.by_app()) == 300, "all 300 placed", timeout=150)
            await asyncio.sleep(1.0)  # anything placed twice would arrive now
        finally:
            stop_process(worker)
        counts = Counter(p["applicationID"] for p in bus.placements)
        assert max(counts.values()) == 1, [a for a, n in counts.items() if n > 1][:5]
        assert all(bus.by_app()[a["applicationID"]]["queue"] == f"root.{a['user']}" for a in apps)
