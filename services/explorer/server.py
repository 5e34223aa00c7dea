"""The explorer running: its source task feeding the store, and the web server over it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from types import TracebackType

from aiohttp import web

from fleetplace.services.explorer.app import Clock, create_app, wall_clock
from fleetplace.services.explorer.hub_agreement import HubAgreement
from fleetplace.services.explorer.source import follow
from fleetplace.services.explorer.store import ExplorerStore
from fleetplace.services.http import _is_loopback, bind
from fleetplace.shared.bus.codec import DecodeLimits
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.placement.options import EngineOptions
from fleetplace.shared.settings import Settings


class TokenRequired(ValueError):
    """Bound off loopback without a token: the explorer shows the whole fleet."""


class Explorer:
    """`async with Explorer(settings, port=0) as explorer:` serves explorer.url until the block ends."""

    def __init__(
        self,
        settings: Settings,
        *,
        host: str = "127.0.0.1",
        port: int = 8090,
        token: str | None = None,
        clock: Clock = wall_clock,
        allowed_hosts: Iterable[str] = (),
    ) -> None:
        """`allowed_hosts`: the names it answers to besides loopback, `host` and
        FLEETPLACE_EXPLORER_HOSTS."""
        if token is None and settings.debug_token is not None:
            token = settings.debug_token.get_secret_value()
        if not token and not _is_loopback(host):
            raise TokenRequired(
                f"--host {host} is not a loopback address: give --token (or FLEETPLACE_DEBUG_TOKEN)"
            )
        engine = EngineOptions(
            prefer_no_select="penalize" if settings.prefer_no_select == "penalize" else "ignore"
        )
        self.settings = settings
        self.host = host
        self.store = ExplorerStore(settings.topic_prefix, DecodeLimits.from_settings(settings), engine)
        configured = [h for h in settings.explorer_hosts.split(",") if h.strip()]
        # shadow mode's agreement on the placement pages, only with a hub to ask (docs/hub.md)
        self.hub = (
            HubAgreement(settings.explorer_hub_kubeconfig, qps=settings.hub_qps, burst=settings.hub_burst)
            if settings.explorer_hub_kubeconfig
            else None
        )
        self.app = create_app(
            self.store,
            token=token or None,
            clock=clock,
            addon_resync_s=settings.addon_resync_interval_s,
            hosts=[host, *configured, *allowed_hosts],
            hub=self.hub,
        )
        self._requested_port = port
        self._runner: web.AppRunner | None = None
        self._source: asyncio.Task[None] | None = None
        self.port = 0

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def source(self) -> asyncio.Task[None]:
        """The task that consumes the topics (done only when it failed or was stopped)."""
        assert self._source is not None, "not started"
        return self._source

    async def start(self) -> None:
        """Serve; HubError when a hub kubeconfig is set and does not load."""
        if self.hub is not None:
            await self.hub.connect()
        self._source = asyncio.create_task(
            follow(self.store, self.settings.kafka, Topics(self.settings.topic_prefix))
        )
        try:
            runner = await bind(self.app, self.host, self._requested_port, shutdown_timeout=1.0)
        except BaseException:
            await self.stop()
            raise
        self._runner = runner
        self.port = int(runner.addresses[0][1])

    async def wait_caught_up(self, timeout: float) -> None:
        """Until the store has read every topic to its end once (the source's errors re-raised)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self.store.caught_up:
            if self.source.done():
                self.source.result()
            if loop.time() > deadline:
                raise TimeoutError("the explorer did not catch up with the topics")
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()
        if self._source is not None and not self._source.done():
            self._source.cancel()
            # a consumer cancelled while it starts can take long to give up: not the caller's wait
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                async with asyncio.timeout(10.0):
                    await self._source
        if self.hub is not None:
            await self.hub.close()

    async def __aenter__(self) -> Explorer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()
