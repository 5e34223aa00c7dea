"""The HTTP surface every worker serves: /healthz, /readyz, /metrics, and debug routes.

Each worker passes its own prometheus `CollectorRegistry` (no global registry,
so several workers can run in one test process) and a readiness callable
(ready = caught up on broadcast state). Debug routes are mounted by the worker;
when a debug token is set they require `Authorization: Bearer <token>`. With no
token they are served only on a loopback address, since they show the fleet.
"""

from __future__ import annotations

import errno
import hmac
import ipaddress
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from pydantic import SecretStr

from fleetplace.shared.settings import Settings

ReadyCheck = Callable[[], bool]


class HttpPortInUseError(OSError):
    """The HTTP port is taken. The message names the setting that moves it."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        super().__init__(
            errno.EADDRINUSE,
            f"HTTP port {port} on {host} is already in use (another worker?); choose another with "
            f"--http-port or FLEETPLACE_HTTP_PORT (0 picks a free one)",
        )

    def __str__(self) -> str:
        return str(self.strerror)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _guard(handler: Handler, token: SecretStr | None, open_without_token: bool) -> Handler:
    async def guarded(request: web.Request) -> web.StreamResponse:
        if token is None:
            if not open_without_token:
                return web.json_response(
                    {"error": "debug routes need FLEETPLACE_DEBUG_TOKEN when not bound to loopback"},
                    status=403,
                )
            return await handler(request)
        expected = f"Bearer {token.get_secret_value()}".encode()
        given = request.headers.get("Authorization", "").encode()
        if not hmac.compare_digest(given, expected):
            return web.json_response(
                {"error": "unauthorized"},
                status=401,
                headers={"WWW-Authenticate": 'Bearer realm="fleetplace"'},
            )
        return await handler(request)

    return guarded


def create_app(
    *,
    ready: ReadyCheck,
    registry: CollectorRegistry,
    debug_token: SecretStr | str | None = None,
    routes: Sequence[web.RouteDef] = (),
    debug_routes: Sequence[web.RouteDef] = (),
    debug_open_without_token: bool = True,
) -> web.Application:
    """The aiohttp app: health, readiness, metrics, `routes` as given, `debug_routes` behind the token."""
    token = SecretStr(debug_token) if isinstance(debug_token, str) else debug_token

    async def healthz(_request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def readyz(_request: web.Request) -> web.Response:
        is_ready = bool(ready())
        return web.json_response({"ready": is_ready}, status=200 if is_ready else 503)

    async def metrics(_request: web.Request) -> web.Response:
        response = web.Response(body=generate_latest(registry))
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    app.router.add_routes(routes)
    app.router.add_routes(
        [
            web.route(r.method, r.path, _guard(r.handler, token, debug_open_without_token), **r.kwargs)
            for r in debug_routes
        ]
    )
    return app


async def bind(
    app: web.Application, host: str, port: int, *, shutdown_timeout: float = 60.0
) -> web.AppRunner:
    """Serve `app` on host:port (0: any free port) and return its runner, to clean up; when
    binding fails nothing is left set up."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=shutdown_timeout)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port, reuse_address=True).start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner


class HttpServer:
    """Serves `create_app(...)` on host:port (port 0 picks a free one; `port` then reports it).

    async with HttpServer(ready=lambda: reader.initial_load_done, registry=registry) as http:
        log.info("http", url=http.url)
    """

    def __init__(
        self,
        *,
        ready: ReadyCheck,
        registry: CollectorRegistry,
        host: str = "127.0.0.1",
        port: int = 0,
        debug_token: SecretStr | str | None = None,
        routes: Sequence[web.RouteDef] = (),
        debug_routes: Sequence[web.RouteDef] = (),
    ) -> None:
        self.host = host
        self._requested_port = port
        self.app = create_app(
            ready=ready,
            registry=registry,
            debug_token=debug_token,
            routes=routes,
            debug_routes=debug_routes,
            debug_open_without_token=_is_loopback(host),
        )
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        ready: ReadyCheck,
        registry: CollectorRegistry,
        routes: Sequence[web.RouteDef] = (),
        debug_routes: Sequence[web.RouteDef] = (),
    ) -> HttpServer:
        return cls(
            ready=ready,
            registry=registry,
            host=settings.http_host,
            port=settings.http_port,
            debug_token=settings.debug_token,
            routes=routes,
            debug_routes=debug_routes,
        )

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("HTTP server not started")
        return self._port

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        """Bind and serve; `HttpPortInUseError` when the port is taken (another worker, say)."""
        try:
            runner = await bind(self.app, self.host, self._requested_port)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise HttpPortInUseError(self.host, self._requested_port) from None
            raise
        self._runner = runner
        self._port = int(runner.addresses[0][1])

    async def stop(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def __aenter__(self) -> HttpServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()
