"""Run score workers against the embedded broker: a Prometheus stand-in that answers
/api/v1/query from a dict (for the worker's own rules), and a reader of what the worker publishes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from aiohttp import web

from fleetplace.services.http import bind
from fleetplace.services.scores.worker import ScoreWorker
from fleetplace.shared.bus.codec import decode_object
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.settings import KafkaSettings, Settings
from tests.bus_harness import BusHarness, running_worker
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


class Outputs(BusHarness):
    """Every record on scores, score-source-status and deadletter, in order, as (key, value)."""

    def __init__(self, bootstrap: str, topics: Topics) -> None:
        super().__init__(bootstrap, topics)
        self.scores: list[tuple[str, dict[str, Any] | None]] = []
        self.status: list[tuple[str, dict[str, Any] | None]] = []
        self.deadletters: list[dict[str, Any]] = []

    def read_topics(self) -> list[str]:
        t = self.topics
        return [t.scores, t.score_source_status, t.deadletter]

    def on_record(self, record: Record) -> None:
        value = decode_object(record.value)
        key = str(record.key)
        if record.topic == self.topics.scores:
            self.scores.append((key, value))
        elif record.topic == self.topics.score_source_status:
            self.status.append((key, value))
        elif value is not None:
            self.deadletters.append(value)

    def describe(self) -> str:
        return f"status: {self.status[-3:]}"

    async def send(self, topic: str, key: str, value: dict[str, Any] | None) -> None:
        await self.send_json(topic, key, value)

    async def publish_source(self, doc: dict[str, Any]) -> None:
        await self.send("score-sources", f"{doc['metadata']['namespace']}/{doc['metadata']['name']}", doc)

    def statuses(self, key: str) -> list[dict[str, Any]]:
        return [v for k, v in self.status if k == key and v is not None]

    async def wait_for(
        self, check: Callable[[], bool], what: str = "condition", timeout: float = 30.0
    ) -> None:
        await super().wait_for(check, timeout, what)


@contextlib.asynccontextmanager
async def running(settings: Settings, instance: str = "scores") -> AsyncIterator[ScoreWorker]:
    worker = ScoreWorker(settings, instance=instance)
    # a graceful stop finishes the evaluation in flight and leaves the group: on a loaded machine
    # that has taken longer than 30 s once
    async with running_worker(worker, lambda: worker.runtime.ready, what="score worker", stop_timeout_s=90):
        yield worker


def metric(worker: ScoreWorker, name: str, **labels: str) -> float:
    value = worker.registry.get_sample_value(name, labels)
    return 0.0 if value is None else float(value)
