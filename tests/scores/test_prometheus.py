"""One evaluation over HTTP: where the query goes, and every way it can give nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import aiohttp

from fleetplace.services.scores.prometheus import evaluate
from fleetplace.shared.api.score_sources import ScoreSource
from tests.scores.harness import QueryServer
from tests.scoring.builders import source, source_doc

NOW = datetime(2026, 11, 28, 10, 0, tzinfo=UTC)


def _by_endpoint(name: str) -> ScoreSource:
    doc = source_doc()
    doc["spec"]["prometheus"] = {"endpoint": name}
    return ScoreSource.model_validate(doc)


async def test_a_named_endpoint_is_looked_up_in_the_settings() -> None:
    async with QueryServer() as prom, aiohttp.ClientSession() as session:
        prom.values = {"c1": 64}
        got = await evaluate(session, _by_endpoint("main"), NOW, endpoints={"main": prom.url + "/"})
        assert got.error is None and dict(got.scores) == {"c1": 100}
        missing = await evaluate(session, _by_endpoint("other"), NOW, endpoints={"main": prom.url})
        assert missing.error is not None and missing.error.reason == "endpoint"
        assert "'other'" in missing.error.message and "known: main" in missing.error.message
        assert prom.queries == 1


async def test_a_prometheus_slower_than_the_interval_is_a_timeout() -> None:
    async with QueryServer() as prom, aiohttp.ClientSession() as session:
        prom.values, prom.delay = {"c1": 1}, 3.0
        got = await evaluate(session, source(url=prom.url, interval="1s", valid_for="5s"), NOW)
        assert got.error is not None and got.error.reason == "timeout"
        assert not got.scores


async def test_a_wrong_url_is_an_http_error_not_a_crash() -> None:
    async with QueryServer() as prom, aiohttp.ClientSession() as session:
        got = await evaluate(session, source(url=prom.url + "/not-prometheus"), NOW)
        assert got.error is not None and got.error.reason == "http" and "404" in got.error.message
