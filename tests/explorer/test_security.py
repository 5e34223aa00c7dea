"""The explorer's guard rails, over real HTTP on 127.0.0.1 with the topics of an empty history:
redirects stay on this server, the token header follows RFC 9110, only the Host names it serves
are answered, cross-origin writes are refused, and every response carries the browser's
security headers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping

import pytest

from fleetplace.services.explorer import Explorer
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.settings import KafkaSettings, Settings

pytestmark = pytest.mark.integration

TOKEN = "s3cret"


def _settings(broker: str, topics: Topics) -> Settings:
    return Settings(kafka=KafkaSettings(bootstrap_servers=broker), topic_prefix=topics.prefix)


@pytest.fixture
async def guarded(broker: str, topics: Topics) -> AsyncIterator[Explorer]:
    async with Explorer(_settings(broker, topics), port=0, token=TOKEN) as running:
        await running.wait_caught_up(30)
        yield running


@pytest.fixture
async def open_explorer(broker: str, topics: Topics) -> AsyncIterator[Explorer]:
    async with Explorer(_settings(broker, topics), port=0) as running:
        await running.wait_caught_up(30)
        yield running


async def raw(
    explorer: Explorer, target: str, headers: Mapping[str, str] = {}, method: str = "GET", body: bytes = b""
) -> tuple[int, dict[str, str]]:
    """The status and headers (lower-case names) of one request sent as written: no client
    normalises the target or fills in a Host header."""
    reader, writer = await asyncio.open_connection("127.0.0.1", explorer.port)
    try:
        given = {"Host": f"127.0.0.1:{explorer.port}", **headers}
        if body:
            given["Content-Length"] = str(len(body))
        head = f"{method} {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in given.items())
        writer.write(head.encode() + b"Connection: close\r\n\r\n" + body)
        await writer.drain()
        status_line = await reader.readline()
        received: dict[str, str] = {}
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            received[name.strip().lower()] = value.strip()
        return int(status_line.split()[1]), received
    finally:
        writer.close()
        await writer.wait_closed()


async def test_the_token_redirect_stays_on_this_server(guarded: Explorer) -> None:
    for target in ("//localhost:8091/fleet", "/\\evil.example/fleet", "///evil.example/fleet"):
        status, headers = await raw(guarded, f"{target}?token={TOKEN}&q=a")
        assert status == 302, target
        location = headers["location"]
        assert location.startswith("/") and not location.startswith(("//", "/\\")), (target, location)
        assert "token" not in location and location.endswith("?q=a")
    status, headers = await raw(guarded, f"/fleet?token={TOKEN}")
    assert (status, headers["location"]) == (302, "/fleet")


async def test_the_bearer_scheme_is_case_insensitive_and_required(guarded: Explorer) -> None:
    for header in (f"Bearer {TOKEN}", f"bearer {TOKEN}", f"BEARER  {TOKEN}"):
        status, _ = await raw(guarded, "/api/version", {"Authorization": header})
        assert status == 200, header
    for header in (TOKEN, f"Basic {TOKEN}", "Bearer", f"Bearer{TOKEN}", "Bearer wrong"):
        status, _ = await raw(guarded, "/api/version", {"Authorization": header})
        assert status == 401, header


async def test_only_the_host_names_it_serves_are_answered(broker: str, topics: Topics) -> None:
    settings = _settings(broker, topics).model_copy(update={"explorer_hosts": "env.example, Other.example"})
    async with Explorer(settings, port=0, allowed_hosts=["fleet.example"]) as explorer:
        await explorer.wait_caught_up(30)
        port = explorer.port
        for host in ("127.0.0.1", "localhost", "LOCALHOST", "[::1]", "fleet.example", "env.example"):
            for given in (f"{host}:{port}", host):
                status, _ = await raw(explorer, "/api/fleet", {"Host": given})
                assert status == 200, given
        status, _ = await raw(explorer, "/api/fleet", {"Host": "other.example"})
        assert status == 200
        for given in (f"attacker.example:{port}", "attacker.example", "127.0.0.1.attacker.example", ""):
            status, _ = await raw(explorer, "/api/fleet", {"Host": given})
            assert status == 403, given
            status, _ = await raw(explorer, "/placements", {"Host": given})
            assert status == 403, given


async def test_cross_origin_posts_are_refused(open_explorer: Explorer) -> None:
    port = open_explorer.port
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    body = b"placement=apps%2Fweb&spec=kind%3A+Nope"
    for headers in (
        {"Origin": "http://attacker.example"},
        {"Origin": f"http://attacker.example:{port}"},
        {"Origin": f"http://127.0.0.1:{port + 1}"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site", "Origin": f"http://localhost:{port + 1}"},
    ):
        status, _ = await raw(open_explorer, "/what-if", {**form, **headers}, "POST", body)
        assert status == 403, headers
    # the page's own form, and a client that sends no Origin: evaluated (the spec is refused)
    for headers in (
        {"Origin": f"http://127.0.0.1:{port}", "Sec-Fetch-Site": "same-origin"},
        {"Origin": "null", "Sec-Fetch-Site": "same-origin"},  # a browser's form under no-referrer
        {"Origin": f"http://localhost:{port}", "Host": f"localhost:{port}"},
        {},
    ):
        status, _ = await raw(open_explorer, "/what-if", {**form, **headers}, "POST", body)
        assert status == 400, headers


async def test_every_response_carries_the_security_headers(guarded: Explorer) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    answers = [
        await raw(guarded, "/placements", auth),
        await raw(guarded, "/api/version", auth),
        await raw(guarded, "/static/explorer.css", auth),
        await raw(guarded, "/placements/apps/nothing", auth),
        await raw(guarded, "/no-such-page", auth),
        await raw(guarded, "/placements"),  # 401
        await raw(guarded, "/placements", {**auth, "Host": "attacker.example"}),  # 403
        await raw(guarded, f"/fleet?token={TOKEN}"),  # 302
    ]
    assert sorted({status for status, _ in answers}) == [200, 302, 401, 403, 404]
    for status, headers in answers:
        assert headers["x-frame-options"] == "DENY", status
        assert headers["x-content-type-options"] == "nosniff", status
        assert headers["referrer-policy"] == "no-referrer", status
        policy = dict(
            part.strip().partition(" ")[::2] for part in headers["content-security-policy"].split(";")
        )
        assert policy["default-src"] == "'none'" and policy["frame-ancestors"] == "'none'", status
        assert policy["script-src"] == policy["style-src"] == "'self'", status
