"""The worker HTTP surface: health, readiness, per-worker metrics, token-guarded debug routes."""

from __future__ import annotations

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry, Counter

from fleetplace.services.http import HttpServer, create_app
from fleetplace.shared.settings import Settings


async def _debug_placement(request: web.Request) -> web.Response:
    return web.json_response({"placement": f"{request.match_info['ns']}/{request.match_info['name']}"})


DEBUG_ROUTES = [web.get("/debug/placements/{ns}/{name}", _debug_placement)]


async def test_health_is_200_and_readiness_follows_the_callable() -> None:
    ready = False
    async with (
        HttpServer(ready=lambda: ready, registry=CollectorRegistry()) as server,
        aiohttp.ClientSession(server.url) as http,
    ):
        assert server.port > 0 and server.url == f"http://127.0.0.1:{server.port}"
        async with http.get("/healthz") as response:
            assert response.status == 200
        async with http.get("/readyz") as response:
            assert response.status == 503
            assert await response.json() == {"ready": False}
        ready = True
        async with http.get("/readyz") as response:
            assert response.status == 200


async def test_each_worker_exposes_only_its_own_registry() -> None:
    registries = [CollectorRegistry(), CollectorRegistry()]
    Counter("fleetplace_records_consumed", "records", registry=registries[0]).inc(3)
    Counter("fleetplace_diffs_published", "diffs", registry=registries[1]).inc()
    async with (
        HttpServer(ready=lambda: True, registry=registries[0]) as first,
        HttpServer(ready=lambda: True, registry=registries[1]) as second,
        aiohttp.ClientSession() as http,
    ):
        assert first.port != second.port
        async with http.get(first.url + "/metrics") as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/plain")
            text = await response.text()
        assert "fleetplace_records_consumed_total 3.0" in text
        assert "fleetplace_diffs_published" not in text


async def test_debug_routes_require_the_bearer_token_when_one_is_set() -> None:
    settings = Settings(http_port=0, debug_token="s3cret-token")  # type: ignore[arg-type]
    server = HttpServer.from_settings(
        settings, ready=lambda: True, registry=CollectorRegistry(), debug_routes=DEBUG_ROUTES
    )
    async with server, aiohttp.ClientSession(server.url) as http:
        async with http.get("/debug/placements/ns1/demo") as response:
            assert response.status == 401
            assert response.headers["WWW-Authenticate"].startswith("Bearer")
        async with http.get(
            "/debug/placements/ns1/demo", headers={"Authorization": "Bearer wrong"}
        ) as response:
            assert response.status == 401
        async with http.get(
            "/debug/placements/ns1/demo", headers={"Authorization": "Bearer s3cret-token"}
        ) as response:
            assert response.status == 200
            assert await response.json() == {"placement": "ns1/demo"}
        async with http.get("/healthz") as response:  # only debug routes are guarded
            assert response.status == 200


async def test_debug_routes_are_open_on_loopback_without_a_token_and_closed_elsewhere() -> None:
    async with (
        HttpServer(ready=lambda: True, registry=CollectorRegistry(), debug_routes=DEBUG_ROUTES) as server,
        aiohttp.ClientSession(server.url) as http,
        http.get("/debug/placements/ns1/demo") as response,
    ):
        assert response.status == 200
    app = create_app(
        ready=lambda: True,
        registry=CollectorRegistry(),
        debug_routes=DEBUG_ROUTES,
        debug_open_without_token=False,
    )
    async with TestClient(TestServer(app)) as client:
        response = await client.get("/debug/placements/ns1/demo")
        assert response.status == 403
        assert "FLEETPLACE_DEBUG_TOKEN" in (await response.json())["error"]


async def test_extra_routes_are_mounted_unguarded() -> None:
    async def version(_request: web.Request) -> web.Response:
        return web.json_response({"version": "0.1.0"})

    async with (
        HttpServer(
            ready=lambda: True,
            registry=CollectorRegistry(),
            debug_token="t",
            routes=[web.get("/version", version)],
        ) as server,
        aiohttp.ClientSession(server.url) as http,
        http.get("/version") as response,
    ):
        assert response.status == 200


async def test_port_zero_reports_the_bound_port_which_is_freed_on_stop() -> None:
    server = HttpServer(ready=lambda: True, registry=CollectorRegistry(), port=0)
    await server.start()
    port = server.port
    await server.stop()
    # The port can be bound again: nothing is left listening.
    again = HttpServer(ready=lambda: True, registry=CollectorRegistry(), port=port)
    async with again:
        assert again.port == port
