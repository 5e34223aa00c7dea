"""The runtime's publish in exactly-once mode, as the queue placer uses it: each application's
placement goes out as an output of its `applications` partition with the offset after it; an
output another instance has fenced is not published and its offset is not committed (the
partition's owner places the application), and the instance asks to rejoin its group."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from aiokafka import TopicPartition

from fleetplace.services.lifecycle import Topology, Turn, WorkerRuntime
from fleetplace.services.queue_placer.worker import QueueWorker
from fleetplace.shared.api.queues import ApplicationSubmission
from fleetplace.shared.bus.delivery import Delivery, Output, OutputFencedError
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.settings import KafkaSettings, Settings
from tests.queue_worker.test_worker import USER_RULE, app, partition

SOURCE = ("p.applications", 3)
NOW = datetime(2026, 1, 1, tzinfo=UTC)


class _Sink:
    delivery = Delivery(transactions=True, idempotence=True, reason="test")
    producer = None

    def __init__(self, fenced: bool) -> None:
        self.fenced = fenced
        self.published: list[Output] = []

    async def publish(self, outputs: Sequence[Output]) -> None:
        if self.fenced and any(o.source == SOURCE for o in outputs):
            raise OutputFencedError([SOURCE])
        self.published.extend(outputs)


class _Coordinator:
    rejoins = 0

    def request_rejoin(self) -> None:
        self.rejoins += 1


class _Group:
    def __init__(self) -> None:
        self._coordinator = _Coordinator()
        self.commits: list[Any] = []

    async def commit(self, offsets: Any) -> None:
        self.commits.append(offsets)


def _runtime(sink: _Sink) -> tuple[WorkerRuntime, _Group]:
    settings = Settings(kafka=KafkaSettings(bootstrap_servers="127.0.0.1:9"), topic_prefix="p.")
    worker = QueueWorker(settings)
    runtime = worker.runtime
    runtime.sink = sink  # type: ignore[assignment]
    group = _Group()
    runtime.group = group
    return runtime, group


def _placer(sink: _Sink) -> tuple[WorkerRuntime, QueueWorker]:
    """The runtime and its queue placer, with one rule: each user's own queue."""
    runtime, _ = _runtime(sink)
    worker = runtime.logic
    assert isinstance(worker, QueueWorker)
    worker.state.apply_config("default", partition(USER_RULE))
    return runtime, worker


def _turn() -> Turn:
    turn = Turn()
    record = OutgoingRecord("p.app-placements", "app-1", b"{}")
    turn.commits[TopicPartition(*SOURCE)] = 8
    turn.outputs.append(Output([record], source=SOURCE, offsets={SOURCE: 8}))
    turn.outgoing.append(OutgoingRecord("p.deadletter", "bad", b"{}"))
    return turn


async def test_outputs_and_their_offsets_go_to_the_sink_together_and_the_group_commits_nothing() -> None:
    sink = _Sink(fenced=False)
    runtime, group = _runtime(sink)
    await runtime.publish(_turn())
    assert [(o.source, o.offsets, [r.key for r in o.records]) for o in sink.published] == [
        (None, {}, ["bad"]),
        (SOURCE, {SOURCE: 8}, ["app-1"]),
    ]
    assert group.commits == []  # the offsets were in the transaction
    assert group._coordinator.rejoins == 0


async def test_a_fenced_output_is_dropped_uncommitted_and_the_instance_rejoins() -> None:
    sink = _Sink(fenced=True)
    runtime, group = _runtime(sink)
    await runtime.publish(_turn())  # no exception: the worker goes on
    assert sink.published == []
    assert group.commits == []
    assert group._coordinator.rejoins == 1


def test_the_source_of_a_worker_is_its_first_group_topic() -> None:
    assert Topology(broadcast=[], group=["a", "b"], group_id="g").source == "a"


async def test_a_fenced_placement_is_forgotten_so_the_application_is_placed_again_not_as_a_duplicate() -> (
    None
):
    # the placement was made here, but never published: the partition's next owner (this instance
    # again, after it rejoined, or another) must place the application as new
    sink = _Sink(fenced=True)
    runtime, worker = _placer(sink)
    submission = ApplicationSubmission.model_validate(app("app-1"))
    first = worker.state.place(submission, NOW, {})
    assert first is not None and not first.get("rejected")
    await runtime.publish(_turn())
    assert "app-1" not in worker.state.placed
    again = worker.state.place(submission, NOW, {})
    assert again is not None and not again.get("rejected"), again
    assert again["queue"] == first["queue"]


async def test_a_published_placement_stays_and_a_second_submission_is_a_duplicate() -> None:
    sink = _Sink(fenced=False)
    runtime, worker = _placer(sink)
    submission = ApplicationSubmission.model_validate(app("app-1"))
    assert worker.state.place(submission, NOW, {}) is not None
    await runtime.publish(_turn())
    assert worker.state.place(submission, NOW, {}) is None  # placed before: not placed twice
