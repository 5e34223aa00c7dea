"""Queue placements (`app-placements`) re-derived from `queue-configs` and `applications`."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from fleetplace.services.auditor import audit, read_history
from fleetplace.services.auditor.history import History
from fleetplace.services.auditor.queues import QueuePlacerReplay, audit_app_placements
from fleetplace.services.queue_placer.worker import QueueProcessor
from fleetplace.shared.api.decisions import AppPlacementRecord
from fleetplace.shared.api.queues import ApplicationSubmission
from fleetplace.shared.bus.codec import DecodeError, decode_record, encode_json
from fleetplace.shared.bus.envelope import new_envelope
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import Topics, partition_for_key, planned_partitions
from fleetplace.shared.queueing import ConfigError
from fleetplace.shared.testing import unique_topic_prefix
from tests.auditor.copying import at_least_once, copy_topics
from tests.queue_worker.test_worker import Bus, app, partition, running, settings_for

PREFIX = "q."
T0 = datetime(2026, 1, 1, tzinfo=UTC)
USER_RULE = [{"name": "user", "create": True}]
TAG_RULE = [{"name": "tag", "value": "team", "create": True}, {"name": "fixed", "value": "root.default"}]


class OfflineQueuePlacer:
    """The queue-placer worker's loop without Kafka: the records it reads and writes."""

    def __init__(self) -> None:
        self.log: list[Record] = []
        self._next: dict[tuple[str, int], int] = {}
        self.processor = QueueProcessor()
        self.config_next = 0

    def write(
        self, topic: str, key: str, value: bytes | None, headers: tuple[tuple[str, bytes], ...] = ()
    ) -> Record:
        p = partition_for_key(key, planned_partitions()[topic])
        offset = self._next.get((topic, p), 0)
        self._next[(topic, p)] = offset + 1
        record = Record(PREFIX + topic, p, offset, key, value, headers)
        self.log.append(record)
        return record

    def config(self, doc: dict[str, Any] | bytes) -> None:
        record = self.write("queue-configs", "default", doc if isinstance(doc, bytes) else encode_json(doc))
        self.config_next = record.offset + 1
        try:
            decoded = decode_record(record)
            self.processor.apply_config(decoded.key, decoded.value)
        except (DecodeError, ConfigError, ValueError):
            pass

    def submit(self, now: datetime, *apps: dict[str, Any]) -> None:
        records = [self.write("applications", a["applicationID"], encode_json(a)) for a in apps]
        for record in sorted(records, key=lambda r: (r.partition, r.offset)):
            submission = ApplicationSubmission.model_validate(orjson.loads(record.value or b"{}"))
            inputs = {
                "queue-configs/0": self.config_next,
                f"applications/{record.partition}": record.offset + 1,
            }
            result = self.processor.place(submission, now, inputs)
            assert result is not None
            env = new_envelope("io.fleetplace.app-placements", "fleetplace/queues", time=now)
            self.write("app-placements", submission.application_id, encode_json(result), env.to_headers())


def busy_queue_history() -> OfflineQueuePlacer:
    q = OfflineQueuePlacer()
    q.config(partition(USER_RULE))
    q.submit(T0, app("a1", "alice"), app("a2", "bob"), app("a3", "alice"))
    q.config({"name": "default", "queues": [{"name": "root"}], "placementrules": [{"name": "nosuchrule"}]})
    q.submit(T0 + timedelta(seconds=1), app("a4", "carol"))
    q.config(partition(TAG_RULE, [{"name": "default"}]))
    q.submit(
        T0 + timedelta(seconds=2),
        app("b1", "dave", tags={"team": "red"}),
        app("b2", "erin", tags={"team": "red"}),
        app("b3", "frank"),
    )
    return q


def placement_records(records: list[Record]) -> list[dict[str, Any]]:
    return [orjson.loads(r.value) for r in records if r.topic == PREFIX + "app-placements" and r.value]


def test_every_queue_placement_reproduces_through_config_changes_and_created_queues() -> None:
    q = busy_queue_history()
    placed = {p["applicationID"]: p for p in placement_records(q.log)}
    for record in placed.values():
        AppPlacementRecord.model_validate(record)  # the worker's records follow the published contract
    assert placed["a4"]["queue"] == "root.carol"  # the broken config was rejected whole
    # the first of b1/b2 in poll order created root.red: replay order matters
    assert {placed["b1"]["created"], placed["b2"]["created"]} == {True, False}
    report = audit_app_placements(History.of(q.log, prefix=PREFIX))
    assert (report.checked, report.reproduced, report.mismatches) == (7, 7, [])


def _rewrite(records: list[Record], topic: str, key: str, change: Any) -> list[Record]:
    out = []
    for r in records:
        if r.topic == PREFIX + topic and r.key == key:
            r = dataclasses.replace(r, value=orjson.dumps(change(orjson.loads(r.value or b"{}"))))
        out.append(r)
    return out


def test_a_forged_queue_and_an_altered_application_are_reported_on_their_own_record() -> None:
    q = busy_queue_history()
    forged = _rewrite(q.log, "app-placements", "a2", lambda v: {**v, "queue": "root.elsewhere"})
    report = audit_app_placements(History.of(forged, prefix=PREFIX))
    assert [(m.application, m.fields) for m in report.mismatches] == [("a2", ["queue"])]

    altered = _rewrite(q.log, "applications", "b3", lambda v: {**v, "user": "mallory"})
    report = audit_app_placements(History.of(altered, prefix=PREFIX))
    assert [(m.application, m.fields) for m in report.mismatches] == [("b3", ["application"])]
    assert "differs from the applications record" in report.mismatches[0].reason


@pytest.mark.integration
def test_the_queue_workers_placements_reproduce_and_a_forged_one_fails_the_audit(broker: str) -> None:
    prefix = unique_topic_prefix("queues")
    topics = Topics(prefix)

    async def run() -> None:
        from fleetplace.shared.bus.topics import ensure_topics

        await ensure_topics(broker, topics)
        async with Bus(broker, topics) as bus:
            await bus.config(partition(USER_RULE))
            async with running(at_least_once(settings_for(broker, prefix))):
                await bus.submit(app("a1", "alice"), app("a2", "bob"), app("a3", "alice"))
                await bus.wait_for(lambda: len(bus.placements) == 3, "three placements")
                await bus.config(partition(TAG_RULE, [{"name": "default"}]))
                await asyncio.sleep(0.5)
                await bus.submit(
                    app("b1", "dave", tags={"team": "red"}), app("b2", "erin", tags={"team": "red"})
                )
                await bus.wait_for(lambda: len(bus.placements) == 5, "five placements")

    asyncio.run(run())
    report = audit(asyncio.run(read_history(broker, topics)))
    assert (report.queues.checked, report.queues.reproduced) == (5, 5) and report.ok

    def forge(r: Record) -> bytes | None:
        if r.topic.endswith(".app-placements") and r.key == "b2" and r.value is not None:
            return encode_json({**orjson.loads(r.value), "queue": "root.forged"})
        return r.value

    target = unique_topic_prefix("forged")
    asyncio.run(copy_topics(broker, prefix, target, forge))
    report = audit(asyncio.run(read_history(broker, Topics(target))))
    assert [(m.application, m.fields) for m in report.queues.mismatches] == [("b2", ["queue"])]
    assert not report.ok


def _placer_state(processor: QueueProcessor) -> tuple[str, dict[str, Any]]:
    queues = {
        name: dict(processor.placer.queues(name)) for name in ("default", *processor.placer.config.partitions)
    }
    return processor.version, queues


@pytest.mark.parametrize("arrival", ["at once", "record by record", "placements late and reversed"])
def test_the_growing_replay_holds_the_placers_tree_and_rule_set(arrival: str) -> None:
    q = busy_queue_history()
    history = History()
    replay = QueuePlacerReplay(history)
    if arrival == "at once":
        batches = [q.log]
    elif arrival == "record by record":
        batches = [[r] for r in q.log]
    else:  # configs first, then the placements newest first: each one older than the last mirrored
        placements = [r for r in q.log if r.topic == PREFIX + "app-placements"]
        batches = [[r for r in q.log if r not in placements], *([r] for r in reversed(placements))]
    for batch in batches:
        for record in batch:
            history.add(record, PREFIX)
        history.seal()
        replay.advance()
    assert _placer_state(replay.processor) == _placer_state(q.processor)
    assert "root.red" in replay.processor.placer.queues("default")  # a queue a placement created
