"""Stopping a Kafka client whose `stop()` re-raises the cancellation of aiokafka's own retry pause
(what its consumer does after a failed fetch): the rest of the stop is done, whoever stops it."""

from __future__ import annotations

import asyncio

from fleetplace.shared.bus.kafka import stop_client


class _Inner:
    def __init__(self) -> None:
        self.closed = False

    async def close(self) -> None:
        self.closed = True


class _Fetcher:
    def __init__(self) -> None:
        self._pending_tasks: set[asyncio.Task[None]] = set()


class _LeftoverCancel:
    """A consumer whose stop ends with the CancelledError of a task of its own."""

    def __init__(self, hang: bool = False) -> None:
        self._client = _Inner()
        self._fetcher = _Fetcher()
        self.hang = hang

    async def stop(self) -> None:
        if self.hang:
            await asyncio.Event().wait()
        raise asyncio.CancelledError


async def test_the_leftover_cancel_is_absorbed_and_the_connections_closed() -> None:
    client = _LeftoverCancel()
    await stop_client(client)
    assert client._client.closed


async def test_a_caller_closing_after_its_own_cancel_still_closes_the_connections() -> None:
    client = _LeftoverCancel()

    async def worker() -> bool:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:  # cancelled, and closing its clients before it ends
            await stop_client(client)
        return client._client.closed

    task = asyncio.create_task(worker())
    await asyncio.sleep(0)
    task.cancel()
    assert await task


async def test_a_stop_that_never_ends_is_abandoned_after_its_timeout() -> None:
    client = _LeftoverCancel(hang=True)
    await asyncio.wait_for(stop_client(client, timeout_s=0.05), 2.0)
    assert not client._client.closed
