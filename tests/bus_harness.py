"""The one bus harness of the workers' tests: a producer of test inputs and a reader of what the
workers publish, on whichever broker the `broker` fixture gives (tests/conftest.py).

Each worker's harness (tests/scheduler/harness.py, tests/rollout_worker/harness.py,
tests/scores/harness.py) subclasses `BusHarness`, names the topics it reads and sorts each record
into its own lists in `on_record`; `running_worker` runs a worker until the block ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from typing import Any, Protocol, Self

from fleetplace.shared.bus.codec import encode_json
from fleetplace.shared.bus.kafka import BroadcastReader, make_producer, send_all, start_client, stop_client
from fleetplace.shared.bus.records import OutgoingRecord, Record
from fleetplace.shared.bus.topics import Topics


class BackgroundReader:
    """A `BroadcastReader` followed from the beginning in a background task, handing each
    non-empty batch to `on_batch`. `reader_options` go to the BroadcastReader."""

    def __init__(
        self,
        bootstrap: str,
        topics: Sequence[str],
        on_batch: Callable[[Sequence[Record]], None],
        **reader_options: Any,
    ) -> None:
        self.reader = BroadcastReader(bootstrap, list(topics), **reader_options)
        self._on_batch = on_batch
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Self:
        await self.reader.start()
        self._task = asyncio.create_task(self._follow())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.reader.stop()

    async def _follow(self) -> None:
        while True:
            batch = await self.reader.poll()
            if batch.records:
                self._on_batch(batch.records)

    def raise_if_failed(self) -> None:
        """Re-raise what stopped the background task, if it stopped."""
        if self._task is not None and self._task.done() and not self._task.cancelled():
            self._task.result()


class BusHarness:
    """Produces to the catalogue under `topics` and reads `read_topics()` from the beginning in a
    background task, handing every record to `on_record`."""

    def __init__(self, bootstrap: str, topics: Topics) -> None:
        self.bootstrap = bootstrap
        self.topics = topics
        self._producer: Any = None
        self._reader: BackgroundReader | None = None

    def read_topics(self) -> Sequence[str]:
        """The full names of the topics to read."""
        raise NotImplementedError

    def on_record(self, record: Record) -> None:
        """One record read, in order per partition."""
        raise NotImplementedError

    def describe(self) -> str:
        """What a timed-out wait reports of what was read."""
        return ""

    def _on_batch(self, records: Sequence[Record]) -> None:
        for record in records:
            self.on_record(record)

    async def __aenter__(self) -> Self:
        self._producer = make_producer(self.bootstrap)
        await start_client(self._producer)
        self._reader = BackgroundReader(self.bootstrap, self.read_topics(), self._on_batch)
        await self._reader.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._reader is not None:
            await self._reader.__aexit__(*exc)
        if self._producer is not None:
            await stop_client(self._producer)

    async def send_raw(
        self, topic: str, key: str | bytes | None, value: bytes | None, *, partition_key: str | None = None
    ) -> None:
        """One record to the catalogue topic `topic` (its short name), as bytes."""
        record = OutgoingRecord(self.topics.name(topic), key, value, partition_key=partition_key)
        await send_all(self._producer, [record])

    async def send_json(
        self, topic: str, key: str, value: dict[str, Any] | None, *, partition_key: str | None = None
    ) -> None:
        """One record whose value is `value` as JSON (None: a tombstone)."""
        raw = None if value is None else encode_json(value)
        await self.send_raw(topic, key, raw, partition_key=partition_key)

    async def send_records(self, records: Sequence[OutgoingRecord]) -> None:
        await send_all(self._producer, list(records))

    async def wait_for(
        self, check: Callable[[], bool], timeout: float = 30.0, what: str = "condition"
    ) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if self._reader is not None:
                self._reader.raise_if_failed()
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; {self.describe()}")
            await asyncio.sleep(0.05)


class Worker(Protocol):
    def run(self) -> Coroutine[Any, Any, Any]: ...

    def stop(self) -> None: ...


@contextlib.asynccontextmanager
async def running_worker(
    worker: Worker, ready: Callable[[], bool], *, what: str = "worker", stop_timeout_s: float = 30.0
) -> AsyncIterator[None]:
    """Run `worker` until the block ends; the block starts once `ready()` holds (30 s at most)."""
    task = asyncio.create_task(worker.run())
    try:
        deadline = time.monotonic() + 30
        while not ready():
            if task.done():
                task.result()
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} never became ready")
            await asyncio.sleep(0.05)
        yield
    finally:
        worker.stop()
        async with asyncio.timeout(stop_timeout_s):
            await task
