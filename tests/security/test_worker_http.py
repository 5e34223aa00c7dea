"""The scheduler worker's real HTTP server: loopback by default, debug routes closed beyond loopback
unless a bearer token is set, and then only with it. (tests/scheduler/test_http.py covers the token on
loopback with a live placement; tests/bus/test_http.py the server on its own.)"""

from __future__ import annotations

import socket

import aiohttp
import pytest

from fleetplace.shared.bus.topics import Topics
from tests.scheduler.harness import running, settings_for

pytestmark = pytest.mark.integration

TOKEN = "tok-3b7f0e1d"


def _non_loopback_address() -> str | None:
    """An address of this machine that is not loopback, if it has one (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: only picks the outgoing interface
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if address.startswith("127.") or address == "0.0.0.0" else address


async def test_the_worker_listens_on_loopback_only_by_default(broker: str, topics: Topics) -> None:
    async with running(settings_for(broker, topics.prefix)) as worker:
        assert worker.http is not None
        assert worker.settings.http_host == "127.0.0.1"
        assert worker.http._runner is not None
        assert [a[0] for a in worker.http._runner.addresses] == ["127.0.0.1"]
        outside = _non_loopback_address()
        if outside is not None:
            with pytest.raises(OSError):
                socket.create_connection((outside, worker.http.port), timeout=1).close()
        async with aiohttp.ClientSession(worker.http.url) as http, http.get("/debug/placements/ns1/p") as r:
            assert r.status == 404  # open on loopback without a token; nothing by that name


async def test_beyond_loopback_debug_routes_are_closed_without_a_token(broker: str, topics: Topics) -> None:
    settings = settings_for(broker, topics.prefix, http_host="0.0.0.0")
    async with running(settings) as worker:
        assert worker.http is not None
        async with aiohttp.ClientSession(f"http://127.0.0.1:{worker.http.port}") as http:
            async with http.get("/debug/placements/ns1/p") as r:
                assert r.status == 403
                assert "FLEETPLACE_DEBUG_TOKEN" in (await r.json())["error"]
            for path in ("/healthz", "/metrics"):
                async with http.get(path) as r:
                    assert r.status == 200, path
            # open without a token too; its answer is the readiness of the moment (503 while a
            # rebalance moves partitions, as Apache Kafka's group may do right after the start)
            async with http.get("/readyz") as r:
                assert r.status in (200, 503) and "FLEETPLACE_DEBUG_TOKEN" not in await r.text()


async def test_beyond_loopback_with_a_token_debug_routes_need_exactly_that_bearer(
    broker: str, topics: Topics
) -> None:
    settings = settings_for(broker, topics.prefix, http_host="0.0.0.0", debug_token=TOKEN)
    async with running(settings) as worker:
        assert worker.http is not None
        async with aiohttp.ClientSession(f"http://127.0.0.1:{worker.http.port}") as http:
            for headers in (
                {},
                {"Authorization": "Bearer wrong"},
                {"Authorization": TOKEN},
                {"X-Token": TOKEN},
            ):
                async with http.get("/debug/placements/ns1/p", headers=headers) as r:
                    assert r.status == 401, headers
                    assert r.headers["WWW-Authenticate"].startswith("Bearer")
            async with http.get("/debug/placements/ns1/p", headers={"Authorization": f"Bearer {TOKEN}"}) as r:
                assert r.status == 404  # through the guard: the placement does not exist
