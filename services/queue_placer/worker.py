"""The queue-placer worker: YuniKorn placement rules on the bus.

Sources: `queue-configs` (global table: one record per partition, the YuniKorn partition entry),
`app-placements` (global table: every placement made so far, by any instance — how an instance
learns which applications are placed and which dynamic queues exist), and `applications`
through a consumer group. Sink: `app-placements`, one record per application.

Guarantees: an application's offset is committed only after its placement is acknowledged by the
broker, so a crash re-delivers it; an application already in `app-placements` is never placed
again (at-least-once input, exactly one placement record per application). A config update that
fails validation is rejected whole: the last good rule set stays active, and a dead letter and a
log line say why.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import signal
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import orjson
from aiohttp import web
from aiokafka import TopicPartition
from prometheus_client import CollectorRegistry, Counter, Gauge
from pydantic import ValidationError

from fleetplace.services.http import HttpServer
from fleetplace.shared.api.queues import ApplicationSubmission
from fleetplace.shared.bus.codec import DecodeLimits, decode_record, encode_json
from fleetplace.shared.bus.envelope import dead_letter, format_time, new_envelope
from fleetplace.shared.bus.errors import DecodeError
from fleetplace.shared.bus.kafka import (
    BroadcastReader,
    make_consumer,
    make_producer,
    partitions_of,
    poll,
    send_all,
    start_client,
    stop_with_leave,
)
from fleetplace.shared.bus.records import OutgoingRecord, Record
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.failpoints import Failpoint
from fleetplace.shared.logging import get_logger
from fleetplace.shared.queueing import ConfigError, QueuePlacer, parse_config
from fleetplace.shared.settings import Settings

log = get_logger("fleetplace.queues")
SCHEMA_VERSION = 1


class QueueProcessor:
    """The processor: rule set, placer and the applications already placed. No I/O."""

    def __init__(self) -> None:
        self.partitions: dict[str, Mapping[str, Any]] = {}
        self.placer = QueuePlacer()
        self.version = "default"
        self.placed: dict[str, Mapping[str, Any]] = {}

    def apply_config(self, key: str, value: Mapping[str, Any] | None) -> None:
        """One partition's entry changed; raises ConfigError (nothing changes) when the result is invalid."""
        partitions = dict(self.partitions)
        if value is None:
            partitions.pop(key, None)
        else:
            partitions[key] = value
        doc = {"partitions": [partitions[k] for k in sorted(partitions)]} if partitions else None
        config = parse_config(doc)
        self.placer.reload(config)
        self.partitions = partitions
        self.version = hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]

    def mirror(self, record: Mapping[str, Any]) -> None:
        """A placement published by any instance: remember it, and replay its submission so the
        queues it created exist here too."""
        app_id = record.get("applicationID")
        if not isinstance(app_id, str) or app_id in self.placed:
            return
        self.placed[app_id] = record
        submission = record.get("application")
        if isinstance(submission, Mapping) and not record.get("rejected"):
            with contextlib.suppress(ValidationError):
                self.placer.place(ApplicationSubmission.model_validate(submission))

    def place(
        self, app: ApplicationSubmission, now: datetime, inputs: Mapping[str, int]
    ) -> dict[str, Any] | None:
        """The app-placements record for a new application, or None if it was placed before."""
        if app.application_id in self.placed:
            return None
        outcome = self.placer.place(app)
        record = {
            "schemaVersion": SCHEMA_VERSION,
            **outcome.to_json(),
            "evaluatedAt": format_time(now),
            "ruleSetVersion": self.version,
            "inputs": dict(inputs),
            "application": app.model_dump(mode="json", by_alias=True),
        }
        if outcome.rejected and outcome.detail:
            record["detail"] = outcome.detail
        self.placed[app.application_id] = record
        return record


class QueueWorker:
    def __init__(self, settings: Settings, *, instance: str = "queues") -> None:
        self.settings = settings
        self.topics = Topics(settings.topic_prefix)
        self.source = f"fleetplace/{instance}"
        self.instance = instance
        self.limits = DecodeLimits(
            max_record_bytes=settings.max_record_bytes, max_depth=settings.max_json_depth
        )
        self.state = QueueProcessor()
        self.registry = CollectorRegistry()
        self.placed_total = Counter(
            "fleetplace_apps_placed_total", "Applications placed", ["outcome"], registry=self.registry
        )
        self.deadletters = Counter(
            "fleetplace_deadletters_total", "Records dead-lettered", ["topic"], registry=self.registry
        )
        self.config_rejections = Counter(
            "fleetplace_config_rejections_total", "Queue config updates rejected", registry=self.registry
        )
        self.lag = Gauge(
            "fleetplace_broadcast_lag_records", "Broadcast records behind", registry=self.registry
        )
        self._stop = asyncio.Event()
        self._ready = False
        self._reader_stuck = False
        self.http: HttpServer | None = None
        self._failpoint = Failpoint.from_env()

    def stop(self) -> None:
        self._stop.set()

    @property
    def ready(self) -> bool:
        return self._ready and not self._reader_stuck

    async def run(self) -> None:
        kafka = self.settings.kafka
        producer = make_producer(kafka)
        await start_client(producer)
        reader = BroadcastReader(
            kafka, [self.topics.queue_configs, self.topics.app_placements], prefix=self.settings.topic_prefix
        )
        group: Any = None
        try:
            await reader.start()
            group = make_consumer(
                kafka,
                group_id=self.settings.queue_placer_group_id,
                session_timeout_ms=6000,
                max_poll_records=5000,
            )
            await start_client(group)
            await partitions_of(group, [self.topics.applications])
            self.http = HttpServer.from_settings(
                self.settings,
                ready=lambda: self.ready,
                registry=self.registry,
                debug_routes=[web.get("/debug/queues/{partition}", self._debug_queues)],
            )
            await self.http.start()
            # the rule set and the placements so far, before the first application
            while not reader.caught_up:
                for record in (await reader.poll()).records:
                    await self._broadcast(record, producer)
            self._ready = True
            group.subscribe([self.topics.applications])
            log.info("queue placer started", http=self.http.url, instance=self.instance)
            await self._loop(reader, group, producer)
        finally:
            if self.http is not None:
                await self.http.stop()
            if group is not None:
                with contextlib.suppress(Exception):
                    await stop_with_leave(group, self.settings.queue_placer_group_id, kafka)
            await reader.stop()
            await producer.stop()
            log.info("queue placer stopped", instance=self.instance)

    async def _broadcast(self, record: Record, producer: Any) -> None:
        topic = self.topics.unprefixed(record.topic)
        try:
            decoded = decode_record(record, self.limits)
            if topic == "queue-configs":
                self.state.apply_config(decoded.key, decoded.value)
                log.info("queue config active", partition=decoded.key, version=self.state.version)
            elif decoded.value is not None:
                self.state.mirror(decoded.value)
        except (DecodeError, ConfigError, ValueError) as e:
            if topic == "queue-configs":
                self.config_rejections.inc()
                log.warning(
                    "queue config rejected; the previous rule set stays active",
                    partition=record.key,
                    error=str(e),
                )
            self.deadletters.labels(topic).inc()
            await send_all(
                producer, [dead_letter(record, str(e), topic=self.topics.deadletter, source=self.source)]
            )

    async def _loop(self, reader: BroadcastReader, group: Any, producer: Any) -> None:
        while not self._stop.is_set():
            batch = await reader.poll()
            for record in batch.records:
                await self._broadcast(record, producer)
            # fail safe, as in the scheduler: while a queue-configs or app-placements partition
            # cannot be read to its end, placing could use an old rule set or place an app twice
            self._reader_stuck = reader.held_up
            if self._reader_stuck:
                continue
            records = await poll(group, timeout_ms=100, max_records=5000)
            if not records:
                continue
            now = datetime.now(UTC)
            inputs = reader.watermark.inputs([self.topics.queue_configs, self.topics.app_placements])
            outgoing: list[OutgoingRecord] = []
            offsets: dict[TopicPartition, int] = {}
            for record in records:
                offsets[TopicPartition(record.topic, record.partition)] = record.offset + 1
                outgoing.extend(
                    self._place(
                        record, now, {**inputs, f"applications/{record.partition}": record.offset + 1}
                    )
                )
            await send_all(producer, outgoing)  # acknowledged before the offsets are committed
            self._failpoint.reach("queues.before-commit")
            await group.commit(offsets)

    def _place(self, record: Record, now: datetime, inputs: Mapping[str, int]) -> list[OutgoingRecord]:
        try:
            decoded = decode_record(record, self.limits)
            if decoded.value is None:
                return []  # a tombstone withdraws nothing: placements are final
            app = ApplicationSubmission.model_validate(decoded.value)
            if app.application_id != decoded.key:
                raise ValueError(f"key {decoded.key!r} does not match applicationID {app.application_id!r}")
        except (DecodeError, ValidationError, ValueError) as e:
            self.deadletters.labels("applications").inc()
            log.warning("application dead-lettered", offset=record.offset, error=str(e))
            return [dead_letter(record, str(e), topic=self.topics.deadletter, source=self.source)]
        result = self.state.place(app, now, inputs)
        if result is None:
            return []  # placed before (a re-delivery after a crash): not placed twice
        self.placed_total.labels("rejected" if result.get("rejected") else "placed").inc()
        env = new_envelope("io.fleetplace.app-placements", self.source, time=now)
        return [
            OutgoingRecord(
                self.topics.app_placements, app.application_id, encode_json(result), env.to_headers()
            )
        ]

    async def _debug_queues(self, request: web.Request) -> web.Response:
        queues = self.state.placer.queues(request.match_info["partition"])
        body = {
            path: {
                "leaf": q.leaf,
                "dynamic": q.dynamic,
                "draining": q.draining,
                "applications": q.applications,
            }
            for path, q in queues.items()
        }
        return web.json_response(body, dumps=lambda v: encode_json(v).decode())


async def run_queue_worker(settings: Settings, instance: str = "queues") -> None:
    worker = QueueWorker(settings, instance=instance)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, worker.stop)
    await worker.run()


__all__ = ["QueueProcessor", "QueueWorker", "run_queue_worker"]
