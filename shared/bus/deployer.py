"""`RolloutDeployer`: the deployer's side of a rollout — apply where the rollout says, report back.

The rollout worker says which clusters to roll out to *now* (`rollout-state`, the compacted
current answer of each rollout); a deployer applies the revision there and reports how it went on
`rollout-status`, which is what moves the rollout on (docs/rollouts.md, "Writing a deployer").
This loop does the deployer's part for one rollout, with the user's two callables:

- `apply(cluster)` — put the rollout's current revision on the cluster. Returning means applied:
  the loop reports `Progressing`. Raising means it could not: the loop reports `Failed` with the
  exception as the message.
- `healthy(cluster)` — asked every `poll_interval` seconds for each applied cluster still
  `Progressing`: `True` (or `Health.SUCCEEDED`) reports `Succeeded`, `Health.FAILED` reports
  `Failed`, `False` (or `Health.PROGRESSING`) means not yet. An exception is logged and counts as
  not yet.

Both may be plain functions (run in a thread, so they may block) or coroutine functions.

    async def apply(cluster: str) -> None: ...
    def healthy(cluster: str) -> bool: ...

    deployer = RolloutDeployer("127.0.0.1:9092", "apps/web", apply, healthy)
    final = await deployer.run(until=settled)      # or run() until deployer.stop()

Each report carries the revision of the state it answers, and goes to the rollout's partition
(a status key has a third segment, the cluster: see `OutgoingRecord.partition_key`).

It keeps no state of its own: on start it reads the rollout's partition of `rollout-status` and
`rollout-state` to the end before acting, so after a restart a cluster that already has a report
of the current revision is not applied again; one still `Progressing` is polled again. `Failed`
is final for a revision (the rollout times it out or counts it against maxFailures); a new
revision starts every cluster over.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import inspect
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from aiokafka import TopicPartition
from pydantic import ValidationError

from fleetplace.shared.api.rollouts import (
    ReportedStatus,
    RolloutState,
    RolloutStatusReport,
    rollout_key_of_status,
    status_key,
)
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeLimits, decode_object, encode_json
from fleetplace.shared.bus.envelope import new_envelope
from fleetplace.shared.bus.errors import DecodeError
from fleetplace.shared.bus.kafka import (
    caught_up,
    make_consumer,
    make_producer,
    partitions_of,
    poll,
    seek_to_beginning,
    send_all,
    start_client,
)
from fleetplace.shared.bus.records import OutgoingRecord, Record
from fleetplace.shared.bus.topics import DEFAULT_PREFIX, Topics, rollout_partition
from fleetplace.shared.logging import get_logger
from fleetplace.shared.settings import KafkaSettings

log = get_logger("fleetplace.deployer")

STATUS_TYPE = "io.fleetplace.rollout-status"


class Health(enum.StrEnum):
    """What `healthy(cluster)` may say besides a bool."""

    PROGRESSING = "Progressing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


_REPORTED: dict[Health, ReportedStatus] = {
    Health.PROGRESSING: "Progressing",
    Health.SUCCEEDED: "Succeeded",
    Health.FAILED: "Failed",
}

Apply = Callable[[str], Awaitable[None] | None]
Healthy = Callable[[str], Awaitable[Health | bool] | Health | bool]


def settled(state: RolloutState) -> bool:
    """Nothing more will happen for this revision without a change: complete, or maxFailures breached."""
    return state.complete or state.max_failure_breach


@dataclass(frozen=True, slots=True)
class Reported:
    """The last report of a cluster this deployer knows of (its own, or read back on start)."""

    revision: str
    status: ReportedStatus


async def _call(fn: Callable[[str], Any], cluster: str) -> Any:
    if inspect.iscoroutinefunction(fn):
        return await fn(cluster)
    result = await asyncio.to_thread(fn, cluster)
    return await result if inspect.isawaitable(result) else result


def _health(answer: Health | bool) -> Health:
    if isinstance(answer, Health):
        return answer
    if answer is True:
        return Health.SUCCEEDED
    if answer is False:
        return Health.PROGRESSING
    raise TypeError(f"healthy() must return a bool or a Health, not {answer!r}")


class RolloutDeployer:
    """Follows one rollout's current answer, applies, polls health and reports. See the module
    docstring."""

    def __init__(
        self,
        kafka: KafkaSettings | str,
        rollout: str,
        apply: Apply,
        healthy: Healthy,
        *,
        prefix: str = DEFAULT_PREFIX,
        poll_interval: float = 1.0,
        source: str = "/fleetplace/deployer",
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        limits: DecodeLimits = DEFAULT_LIMITS,
    ) -> None:
        parts = rollout.split("/")
        if len(parts) != 2 or not all(parts):
            raise ValueError(f"rollout must be <namespace>/<name>, got {rollout!r}")
        self.rollout = rollout
        self._kafka = kafka
        self._topics = Topics(prefix)
        self._apply = apply
        self._healthy = healthy
        self._poll_interval = poll_interval
        self._source = source
        self._clock = clock
        self._limits = limits
        self._state: RolloutState | None = None
        self._reported: dict[str, Reported] = {}
        self._stop = asyncio.Event()
        self._next_poll = 0.0  # monotonic time of the next round of health checks
        self.applied = 0  # apply() calls made by this instance

    # ---- what it knows ---------------------------------------------------------------------
    @property
    def state(self) -> RolloutState | None:
        """The rollout's current answer as last read (None before the first, or once deleted)."""
        return self._state

    @property
    def reported(self) -> Mapping[str, Reported]:
        """Cluster -> its last known report, of any revision. Read-only."""
        return MappingProxyType(self._reported)

    def stop(self) -> None:
        """Return from `run()` after the step under way (an apply or a health poll) is reported."""
        self._stop.set()

    # ---- the loop --------------------------------------------------------------------------
    async def run(self, *, until: Callable[[RolloutState], bool] | None = None) -> RolloutState | None:
        """Follow the rollout until `stop()` or until `until(state)` holds after a step; returns the
        last state read."""
        consumer = make_consumer(self._kafka)
        await start_client(consumer)
        producer = make_producer(self._kafka)
        try:
            await start_client(producer)
            tps = await self._assign(consumer)
            await self._catch_up(consumer, tps)
            log.info("deployer caught up", rollout=self.rollout, reported=len(self._reported))
            while not self._stop.is_set():
                await self._step(producer)
                if until is not None and self._state is not None and until(self._state):
                    break
                self._consume(await self._wait(consumer))
        finally:
            with contextlib.suppress(Exception):
                await producer.stop()
            await consumer.stop()
        return self._state

    async def _assign(self, consumer: Any) -> list[tuple[str, int]]:
        """This rollout's partition of `rollout-status` and `rollout-state`, from the beginning."""
        topics = [self._topics.rollout_status, self._topics.rollout_state]
        counts: dict[str, int] = {}
        for topic, _ in await partitions_of(consumer, topics):
            counts[topic] = counts.get(topic, 0) + 1
        tps = [(t, rollout_partition(self.rollout, counts[t])) for t in topics]
        parts = [TopicPartition(t, p) for t, p in tps]
        consumer.assign(parts)
        await seek_to_beginning(consumer, *parts)
        return tps

    async def _catch_up(self, consumer: Any, tps: list[tuple[str, int]]) -> None:
        while True:
            records = await poll(consumer, timeout_ms=100, max_records=5_000)
            if records:
                self._consume(records, reports=True)
            elif await caught_up(consumer, tps):
                return

    async def _wait(self, consumer: Any) -> list[Record]:
        """The state records that arrive within a poll interval (or sooner), unless stopped."""
        polled = asyncio.create_task(poll(consumer, timeout_ms=int(self._poll_interval * 1000)))
        stopped = asyncio.create_task(self._stop.wait())
        done, _ = await asyncio.wait((polled, stopped), return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if polled in done:
            return polled.result()
        polled.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await polled
        return []

    def _consume(self, records: list[Record], *, reports: bool = False) -> None:
        """Apply state records of this rollout; on start (`reports`) also its status records. Once
        running, its own reports are already known and later ones are not read."""
        for record in records:
            if record.key is None:
                continue
            try:
                if record.topic == self._topics.rollout_state and record.key == self.rollout:
                    value = decode_object(record.value, self._limits)
                    self._state = None if value is None else RolloutState.model_validate(value)
                elif reports and record.topic == self._topics.rollout_status:
                    rollout, cluster = rollout_key_of_status(record.key)
                    if rollout != self.rollout:
                        continue
                    value = decode_object(record.value, self._limits)
                    if value is None:
                        self._reported.pop(cluster, None)
                    else:
                        report = RolloutStatusReport.model_validate(value)
                        self._reported[cluster] = Reported(report.revision, report.status)
            except (DecodeError, ValidationError, ValueError) as e:
                log.warning(
                    "record skipped", topic=record.topic, offset=record.offset, error=str(e).splitlines()[0]
                )

    async def _step(self, producer: Any) -> None:
        """Apply the clusters that entered the roll-out-now set, then poll the applied ones."""
        state = self._state
        if state is None:
            return
        revision = state.revision
        fresh = [c for c in state.clusters if self._reported_status(c, revision) is None]
        if fresh:
            outcomes = await asyncio.gather(*(self._apply_one(c) for c in fresh))
            self.applied += len(fresh)
            await self._report(producer, revision, dict(zip(fresh, outcomes, strict=True)))
        if time.monotonic() < self._next_poll:
            return
        self._next_poll = time.monotonic() + self._poll_interval
        waiting = [c for c in state.clusters if self._reported_status(c, revision) == "Progressing"]
        if waiting:
            answers = await asyncio.gather(*(self._health_of(c) for c in waiting))
            changed = {c: (h, None) for c, h in zip(waiting, answers, strict=True) if h != Health.PROGRESSING}
            await self._report(producer, revision, changed)

    def _reported_status(self, cluster: str, revision: str) -> str | None:
        found = self._reported.get(cluster)
        return found.status if found is not None and found.revision == revision else None

    async def _apply_one(self, cluster: str) -> tuple[Health, str | None]:
        try:
            await _call(self._apply, cluster)
        except Exception as e:  # the user's apply failed: that is the report, not our error
            log.warning("apply failed", rollout=self.rollout, cluster=cluster, error=str(e))
            return Health.FAILED, f"apply failed: {e}"
        return Health.PROGRESSING, None

    async def _health_of(self, cluster: str) -> Health:
        try:
            return _health(await _call(self._healthy, cluster))
        except Exception as e:  # a health check that cannot tell yet
            log.warning("health check failed", rollout=self.rollout, cluster=cluster, error=str(e))
            return Health.PROGRESSING

    async def _report(
        self, producer: Any, revision: str, outcomes: Mapping[str, tuple[Health, str | None]]
    ) -> None:
        if not outcomes:
            return
        records = []
        for cluster, (health, message) in sorted(outcomes.items()):
            report = RolloutStatusReport(
                revision=revision,
                status=_REPORTED[health],
                last_transition_time=self._clock(),
                message=message,
            )
            records.append(status_record(self._topics, self.rollout, cluster, report, self._source))
        await send_all(producer, records)
        for cluster, (health, _) in outcomes.items():
            self._reported[cluster] = Reported(revision, _REPORTED[health])


def status_record(
    topics: Topics, rollout: str, cluster: str, report: RolloutStatusReport, source: str
) -> OutgoingRecord:
    """One `rollout-status` record, on the partition of its rollout (not of its own key)."""
    headers = new_envelope(STATUS_TYPE, source).to_headers()
    return OutgoingRecord(
        topics.rollout_status,
        status_key(rollout, cluster),
        encode_json(report.to_value()),
        headers,
        partition_key=rollout,
    )


__all__ = ["Apply", "Health", "Healthy", "Reported", "RolloutDeployer", "settled", "status_record"]
