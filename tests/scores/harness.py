"""Run score workers against the embedded broker: a Prometheus stand-in that answers
/api/v1/query from a dict (for the worker's own rules), and a reader of what the worker publishes."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from aiohttp import web

from fleetplace.services.http import bind
from fleetplace.services.scores.worker import ScoreWorker
from fleetplace.shared.bus.codec import decode_object, encode_json
from fleetplace.shared.bus.kafka import BroadcastReader, make_producer, send_all, start_client
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.settings import KafkaSettings, Settings
from tests.scoring.builders import vector_answer


class QueryServer:
    """Answers `POST /api/v1/query` with one series per cluster of `values` (or with `answer`,
    a (status, body) pair, when set); counts the queries it was asked."""

    def __init__(self) -> None:
        self.values: dict[str, str | float] = {}
        self.answer: tuple[int, bytes] | None = None
        self.queries = 0
        self.delay = 0.0  # seconds before each answer
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def _query(self, request: web.Request) -> web.Response:
        self.queries += 1
        form = await request.post()
        assert form.get("query"), "the worker sends the PromQL as the form field `query`"
        if self.delay:
            await asyncio.sleep(self.delay)
        status, body = self.answer if self.answer is not None else (200, vector_answer(self.values))
        return web.Response(status=status, body=body, content_type="application/json")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> QueryServer:
        app = web.Application()
        app.router.add_post("/api/v1/query", self._query)
        self._runner = await bind(app, "127.0.0.1", 0)
        self.port = int(self._runner.addresses[0][1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


def settings_for(bootstrap: str, prefix: str, **extra: Any) -> Settings:
    return Settings(
        kafka=KafkaSettings(bootstrap_servers=bootstrap),
        topic_prefix=prefix,
        score_group_id=f"{prefix}scores",
        scheduler_group_id=f"{prefix}scheduler",
        http_port=0,
        **extra,
    )


class Outputs:
    """Every record on scores, score-source-status and deadletter, in order, as (key, value)."""

    def __init__(self, bootstrap: str, topics: Topics) -> None:
        self.bootstrap = bootstrap
        self.topics = topics
        self.scores: list[tuple[str, dict[str, Any] | None]] = []
        self.status: list[tuple[str, dict[str, Any] | None]] = []
        self.deadletters: list[dict[str, Any]] = []
        self._producer: Any = None
        self._reader: BroadcastReader | None = None
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Outputs:
        self._producer = make_producer(self.bootstrap)
        await start_client(self._producer)
        t = self.topics
        self._reader = BroadcastReader(self.bootstrap, [t.scores, t.score_source_status, t.deadletter])
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
            for r in (await self._reader.poll()).records:
                value = decode_object(r.value)
                key = str(r.key)
                if r.topic == self.topics.scores:
                    self.scores.append((key, value))
                elif r.topic == self.topics.score_source_status:
                    self.status.append((key, value))
                elif value is not None:
                    self.deadletters.append(value)

    async def send(self, topic: str, key: str, value: dict[str, Any] | None) -> None:
        record = OutgoingRecord(self.topics.name(topic), key, None if value is None else encode_json(value))
        await send_all(self._producer, [record])

    async def send_raw(self, topic: str, key: str | None, value: bytes | None) -> None:
        await send_all(self._producer, [OutgoingRecord(self.topics.name(topic), key, value)])

    async def publish_source(self, doc: dict[str, Any]) -> None:
        await self.send("score-sources", f"{doc['metadata']['namespace']}/{doc['metadata']['name']}", doc)

    def statuses(self, key: str) -> list[dict[str, Any]]:
        return [v for k, v in self.status if k == key and v is not None]

    async def wait_for(self, check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; status: {self.status[-3:]}")
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def running(settings: Settings, instance: str = "scores") -> AsyncIterator[ScoreWorker]:
    worker = ScoreWorker(settings, instance=instance)
    task = asyncio.create_task(worker.run())
    try:
        deadline = time.monotonic() + 30
        while not worker.runtime.ready:
            if task.done():
                task.result()
            if time.monotonic() > deadline:
                raise AssertionError("score worker never became ready")
            await asyncio.sleep(0.05)
        yield worker
    finally:
        worker.stop()
        # a graceful stop finishes the evaluation in flight and leaves the group: on a loaded
        # machine that has taken longer than 30 s once
        await asyncio.wait_for(task, 90)


def metric(worker: ScoreWorker, name: str, **labels: str) -> float:
    value = worker.registry.get_sample_value(name, labels)
    return 0.0 if value is None else float(value)
