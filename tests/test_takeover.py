"""The runtime's takeover of newly assigned partitions, step by step with stand-ins for the group
consumer, the sink and the worker: the group's callback only pauses and notes the partitions;
the loop then starts their producers, lets the worker place its reading, and resumes them, in
that order; a partition revoked meanwhile is released, not resumed. (The same on real brokers:
tests/faults, tests/queue_worker, tests/scores.)"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aiokafka import TopicPartition

from fleetplace.services.lifecycle import PartitionOwnership, SinkOwnership
from fleetplace.services.queue_placer.worker import QueueWorker
from fleetplace.shared.bus.delivery import Delivery
from fleetplace.shared.settings import KafkaSettings, Settings

A, B = TopicPartition("p.applications", 0), TopicPartition("p.applications", 1)


class _Steps:
    def __init__(self) -> None:
        self.done: list[tuple[str, Any]] = []


class _Group:
    def __init__(self, steps: _Steps) -> None:
        self.steps = steps
        self.assigned: set[TopicPartition] = set()
        self.paused: set[TopicPartition] = set()

    def assignment(self) -> set[TopicPartition]:
        return set(self.assigned)

    def pause(self, *tps: TopicPartition) -> None:
        self.paused |= set(tps)
        self.steps.done.append(("pause", sorted(tps)))

    def resume(self, *tps: TopicPartition) -> None:
        self.paused -= set(tps)
        self.steps.done.append(("resume", sorted(tps)))


class _Sink:
    delivery = Delivery(transactions=True, idempotence=True, reason="test")

    def __init__(self, steps: _Steps, group: _Group, revoke_during_own: set[TopicPartition]) -> None:
        self.steps, self.group, self.revoke_during_own = steps, group, revoke_during_own
        self.callbacks: SinkOwnership | None = None

    async def own(self, partitions: Iterable[tuple[str, int]]) -> None:
        self.steps.done.append(("own", sorted(partitions)))
        if self.revoke_during_own and self.callbacks is not None:
            gone, self.revoke_during_own = self.revoke_during_own, set()
            self.group.assigned -= gone  # a rebalance meanwhile takes these away
            await self.callbacks.on_partitions_revoked(gone)

    async def release(self, partitions: Iterable[tuple[str, int]]) -> None:
        self.steps.done.append(("release", sorted(partitions)))


def _runtime(
    revoke_during_own: frozenset[TopicPartition] = frozenset(),
) -> tuple[Any, _Steps, SinkOwnership, _Group]:
    steps = _Steps()
    worker = QueueWorker(Settings(kafka=KafkaSettings(bootstrap_servers="127.0.0.1:9"), topic_prefix="p."))
    runtime = worker.runtime
    group = _Group(steps)
    runtime.group = group

    async def flush() -> None:
        steps.done.append(("flush", None))

    def revoke(partitions: set[tuple[str, int]]) -> None:
        steps.done.append(("worker revoke", sorted(partitions)))

    async def assign(partitions: set[tuple[str, int]]) -> None:
        assert group.paused >= {TopicPartition(*tp) for tp in partitions}, "taken over while fetchable"
        steps.done.append(("worker assign", sorted(partitions)))

    runtime.rebalance_listener = PartitionOwnership(flush, revoke, assign)
    callbacks = SinkOwnership(runtime, runtime.rebalance_listener)
    sink = _Sink(steps, group, set(revoke_during_own))
    sink.callbacks = callbacks
    runtime.sink = sink  # type: ignore[assignment]
    return runtime, steps, callbacks, group


async def test_the_callback_only_pauses_and_the_loop_takes_over_in_order() -> None:
    runtime, steps, callbacks, group = _runtime()
    group.assigned = {A, B}
    await callbacks.on_partitions_assigned({A, B})
    assert steps.done == [("pause", [A, B])]  # nothing that waits on the network
    await runtime.take_over()
    assert steps.done[1:] == [
        ("own", [tuple(A), tuple(B)]),
        ("worker assign", [tuple(A), tuple(B)]),
        ("resume", [A, B]),
    ]
    assert group.paused == set()
    await runtime.take_over()  # nothing left to do
    assert len(steps.done) == 4


async def test_a_partition_revoked_before_the_takeover_is_never_taken_over() -> None:
    runtime, steps, callbacks, group = _runtime()
    group.assigned = {A, B}
    await callbacks.on_partitions_assigned({A, B})
    group.assigned = {A}
    await callbacks.on_partitions_revoked({B})
    await runtime.take_over()
    assert ("own", [tuple(A)]) in steps.done
    assert steps.done[-1] == ("resume", [A])
    assert not any(step == "worker assign" and tuple(B) in arg for step, arg in steps.done)


async def test_a_partition_revoked_during_the_takeover_is_released_again_and_not_resumed() -> None:
    runtime, steps, callbacks, group = _runtime(revoke_during_own=frozenset({B}))
    group.assigned = {A, B}
    await callbacks.on_partitions_assigned({A, B})
    await runtime.take_over()
    # the worker took B over after the revocation's callback: it gives B up again
    assert steps.done[-3:] == [
        ("worker revoke", [tuple(B)]),
        ("release", [tuple(B)]),
        ("resume", [A]),
    ]
    assert group.paused == {B}  # B is another instance's now; this one never fetches it
