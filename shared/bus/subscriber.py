"""`DecisionSubscriber`: fold the `decisions` topic into the current cluster list per placement.

For downstream deployers (GitOps tools, rollout controllers). It reads every partition of
`decisions` without a consumer group, hands out each *new* DecisionDiff once, and keeps:

- `view`: the current decision per placement (`view["ns1/web"] == ["c1", "c3"]`);
- dedup by `seq`: a diff whose seq was already applied is skipped (a worker takeover can publish
  a seq twice); a seq that jumps ahead is applied and reported in `gaps` (diffs carry the whole
  decision, so the view stays right — but the deployer missed intermediate steps);
- `position()`: the next offset per partition, the applied seq and the view, to store beside
  the deployer's own state and hand back to the constructor after a restart.

    async with DecisionSubscriber(kafka, prefix="fleetplace.", position=stored) as subscriber:
        async for diff in subscriber:
            deploy(diff.placement, diff.added, diff.removed)
            store(subscriber.position())   # ideally in the same transaction as the deploy

`position()` already counts the diff just handed out as applied: store it after acting on the
diff. A crash between acting and storing re-delivers that diff after the restart (at least
once); storing both together makes it exactly once.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType, TracebackType
from typing import Any

from aiokafka import TopicPartition
from pydantic import BaseModel, ConfigDict, Field

from fleetplace.shared.api.decisions import DecisionDiff, InvalidDecisionDiff
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeLimits, decode_object
from fleetplace.shared.bus.errors import DecodeError
from fleetplace.shared.bus.kafka import (
    caught_up,
    make_consumer,
    partitions_of,
    poll,
    seek_to_beginning,
    start_client,
)
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import DEFAULT_PREFIX, Topics
from fleetplace.shared.logging import get_logger
from fleetplace.shared.settings import KafkaSettings

log = get_logger("fleetplace.subscriber")


class SubscriberPosition(BaseModel):
    """Where a subscriber stands: store it (`to_json()`), pass it back (`from_json()`) to resume."""

    model_config = ConfigDict(frozen=True)

    offsets: dict[int, int] = Field(default_factory=dict, description="decisions partition -> next offset")
    applied: dict[str, int] = Field(default_factory=dict, description="placement -> last applied seq")
    view: dict[str, tuple[str, ...]] = Field(
        default_factory=dict, description="placement -> its current clusters"
    )

    def to_json(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def from_json(cls, data: bytes | str) -> SubscriberPosition:
        return cls.model_validate_json(data)


@dataclass(frozen=True, slots=True)
class SeqGap:
    """Diffs of a placement that were never seen (history expired, or a producer bug)."""

    placement: str
    expected: int
    got: int
    partition: int
    offset: int


class DecisionSubscriber:
    """An async iterator of new DecisionDiffs with a materialised view. See the module docstring."""

    def __init__(
        self,
        kafka: KafkaSettings | str,
        *,
        prefix: str = DEFAULT_PREFIX,
        position: SubscriberPosition | None = None,
        placements: Iterable[str] | None = None,
        follow: bool = True,
        limits: DecodeLimits = DEFAULT_LIMITS,
        poll_timeout_ms: int = 100,
        max_records: int = 5_000,
    ) -> None:
        self._kafka = kafka
        self.topic = Topics(prefix).decisions
        self._only = frozenset(placements) if placements is not None else None
        self._follow = follow
        self._limits = limits
        self._poll_timeout_ms = poll_timeout_ms
        self._max_records = max_records
        start = position or SubscriberPosition()
        self._start_offsets = dict(start.offsets)
        self._offsets: dict[int, int] = dict(start.offsets)
        self._applied: dict[str, int] = dict(start.applied)
        self._view: dict[str, list[str]] = {k: list(v) for k, v in start.view.items()}
        self._pending: deque[Record] = deque()
        self._consumer: Any = None
        self._tps: list[tuple[str, int]] = []
        self._caught_up = False
        self.gaps: list[SeqGap] = []
        self.duplicates = 0
        self.invalid = 0

    # ---- state ---------------------------------------------------------------------------
    @property
    def view(self) -> Mapping[str, list[str]]:
        """Placement -> its current clusters (deleted placements are absent). Read-only."""
        return MappingProxyType(self._view)

    def applied_seq(self, placement: str) -> int:
        """The last seq applied for a placement (0: none)."""
        return self._applied.get(placement, 0)

    def position(self) -> SubscriberPosition:
        """The state to store for a restart: next offsets, applied seqs and the view."""
        return SubscriberPosition(
            offsets=dict(self._offsets),
            applied=dict(self._applied),
            view={k: tuple(v) for k, v in self._view.items()},
        )

    @property
    def caught_up(self) -> bool:
        """Reached the end of every partition at the last empty poll."""
        return self._caught_up

    # ---- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        consumer = make_consumer(self._kafka)
        await start_client(consumer)
        try:
            self._tps = await partitions_of(consumer, [self.topic])
            parts = [TopicPartition(t, p) for t, p in self._tps]
            consumer.assign(parts)
            from_start = []
            for tp in parts:
                offset = self._start_offsets.get(tp.partition)
                if offset is None:
                    from_start.append(tp)
                else:
                    consumer.seek(tp, offset)
            await seek_to_beginning(consumer, *from_start)
        except BaseException:
            await consumer.stop()
            raise
        self._consumer = consumer

    async def stop(self) -> None:
        if self._consumer is not None:
            consumer, self._consumer = self._consumer, None
            await consumer.stop()

    async def __aenter__(self) -> DecisionSubscriber:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # ---- iteration -----------------------------------------------------------------------
    def __aiter__(self) -> AsyncIterator[DecisionDiff]:
        return self

    async def __anext__(self) -> DecisionDiff:
        """The next diff not applied before; with `follow=False`, stops once caught up."""
        if self._consumer is None:
            raise RuntimeError("DecisionSubscriber is not started (use `async with`)")
        while True:
            while self._pending:
                diff = self._take(self._pending.popleft())
                if diff is not None:
                    return diff
            records = await poll(
                self._consumer, timeout_ms=self._poll_timeout_ms, max_records=self._max_records
            )
            if records:
                self._caught_up = False
                self._pending.extend(records)
                continue
            self._caught_up = await caught_up(self._consumer, self._tps)
            if self._caught_up and not self._follow:
                raise StopAsyncIteration

    async def drain(self, timeout: float = 30.0) -> list[DecisionDiff]:
        """Every new diff up to the current end (for tools and tests), whatever `follow` says."""
        follow, self._follow = self._follow, False
        deadline = time.monotonic() + timeout
        out: list[DecisionDiff] = []
        try:
            async for diff in self:
                out.append(diff)
                if time.monotonic() > deadline:
                    raise TimeoutError(f"not caught up after {timeout} s")
        finally:
            self._follow = follow
        return out

    def _take(self, record: Record) -> DecisionDiff | None:
        """Advance past `record`; the diff if it is new (applied to the view), else None."""
        self._offsets[record.partition] = record.offset + 1
        key = record.key
        if key is None or (self._only is not None and key not in self._only):
            return None
        try:
            value = decode_object(record.value, self._limits)
            if value is None:
                return None  # tombstones mean nothing on an uncompacted log
            diff = DecisionDiff.from_value(value)
        except (DecodeError, InvalidDecisionDiff) as e:
            self.invalid += 1
            log.warning(
                "decision record skipped",
                partition=record.partition,
                offset=record.offset,
                placement=key,
                error=str(e).splitlines()[0],
            )
            return None
        last = self._applied.get(diff.placement, 0)
        if diff.seq <= last:
            self.duplicates += 1
            return None
        if diff.seq != last + 1:
            gap = SeqGap(diff.placement, last + 1, diff.seq, record.partition, record.offset)
            self.gaps.append(gap)
            log.warning("decision seq gap", placement=diff.placement, expected=gap.expected, got=gap.got)
        self._applied[diff.placement] = diff.seq
        if diff.deleted:
            self._view.pop(diff.placement, None)
        else:
            self._view[diff.placement] = list(diff.decisions)
        return diff


__all__ = ["DecisionSubscriber", "SeqGap", "SubscriberPosition"]
