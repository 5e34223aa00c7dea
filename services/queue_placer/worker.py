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

import contextlib
import hashlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
from aiohttp import web
from aiokafka import TopicPartition
from prometheus_client import CollectorRegistry, Counter
from pydantic import ValidationError

from fleetplace.services.lifecycle import RunsOnRuntime, Topology, Turn, WorkerRuntime, run_until_signalled
from fleetplace.shared.api.queues import ApplicationSubmission
from fleetplace.shared.bus.codec import DecodeLimits, decode_record, encode_json
from fleetplace.shared.bus.delivery import Output
from fleetplace.shared.bus.envelope import dead_letter, format_time, new_envelope
from fleetplace.shared.bus.errors import DecodeError
from fleetplace.shared.bus.kafka import Batch
from fleetplace.shared.bus.records import OutgoingRecord, Record
from fleetplace.shared.bus.topics import Topics
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

    def withdraw(self, application_id: str) -> None:
        """A placement made here was never published (fenced): forget it, so that whoever places
        the application next, this instance or another, is not taken for a duplicate."""
        record = self.placed.pop(application_id, None)
        if record is not None and not record.get("rejected"):
            self.placer.release(application_id, str(record["application"].get("partition", "")))

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


class QueueWorker(RunsOnRuntime):
    """One queue-placer instance, run by `WorkerRuntime`: `await worker.run()` until `worker.stop()`."""

    def __init__(self, settings: Settings, *, instance: str = "queues") -> None:
        self.settings = settings
        self.topics = Topics(settings.topic_prefix)
        self.source = f"fleetplace/{instance}"
        self.instance = instance
        self.limits = DecodeLimits.from_settings(settings)
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
        self._ready = False
        self._reader_stuck = False
        # the rule set and the placements so far are read before the first application is taken
        self.runtime = WorkerRuntime(
            settings,
            self,
            Topology(
                broadcast=[self.topics.queue_configs, self.topics.app_placements],
                group=[self.topics.applications],
                group_id=settings.queue_placer_group_id,
                subscribe_when_ready=True,
            ),
            name="queue placer",
            instance=instance,
            registry=self.registry,
            debug_routes=[web.get("/debug/queues/{partition}", self._debug_queues)],
            failpoints="queues",
        )

    @property
    def ready(self) -> bool:
        return self._ready and not self._reader_stuck

    @property
    def accepting(self) -> bool:
        # fail safe, as in the scheduler: while a queue-configs or app-placements partition
        # cannot be read to its end, placing could use an old rule set or place an app twice
        return self._ready and not self._reader_stuck

    def summary(self) -> Mapping[str, Any]:
        return {}

    async def on_broadcast(self, batch: Batch, turn: Turn) -> None:
        for record in batch.records:
            turn.outgoing.extend(self._broadcast(record))
        if batch.caught_up:
            self._ready = True
        self._reader_stuck = self.runtime.reader.held_up

    def _broadcast(self, record: Record) -> list[OutgoingRecord]:
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
            return [dead_letter(record, str(e), topic=self.topics.deadletter, source=self.source)]
        return []

    async def on_records(self, records: list[Record], turn: Turn) -> None:
        """Place a batch of applications; their offsets are committed once the placements are
        acknowledged (the runtime publishes, then commits)."""
        if not records:
            return
        now = datetime.now(UTC)
        inputs = self.runtime.reader.watermark.inputs([self.topics.queue_configs, self.topics.app_placements])
        for record in records:
            source, next_offset = (record.topic, record.partition), record.offset + 1
            turn.commits[TopicPartition(*source)] = next_offset
            placed = self._place(record, now, {**inputs, f"applications/{record.partition}": next_offset})
            turn.outputs.append(Output(placed, source=source, offsets={source: next_offset}))

    async def on_turn(self, turn: Turn) -> None:
        return None  # no timers: an application is placed when it arrives

    def on_fenced(self, outputs: Sequence[Output]) -> None:
        for output in outputs:
            for record in output.records:
                if record.topic == self.topics.app_placements and isinstance(record.key, str):
                    self.state.withdraw(record.key)

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
    """One queue placer until SIGTERM or SIGINT."""
    await run_until_signalled(QueueWorker(settings, instance=instance).runtime)


__all__ = ["QueueProcessor", "QueueWorker", "run_queue_worker"]
