"""The explorer's Rollouts pages over a known rollout history on the test broker
(tests/explorer/rollout_history.py): the numbers shown are what the rollout state says, the
timeline lists every rollout diff, and a new diff arrives live."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import aiohttp
import orjson
import pytest

from fleetplace.services.explorer import Explorer
from fleetplace.services.testing import running_scheduler
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.settings import KafkaSettings, Settings
from tests.explorer.pages import Elements
from tests.explorer.rollout_history import REPORTS, at, expected_statuses, play
from tests.rollout_worker.builders import report
from tests.rollout_worker.harness import RolloutBus, running, settings_for

pytestmark = pytest.mark.integration

T = datetime(2026, 1, 1, tzinfo=UTC)


async def _get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        return response.status, await response.text()


def counts_of(attr: str) -> dict[str, int]:
    return {s: int(n) for s, n in (part.split(":") for part in attr.split(",")) if int(n)}


@pytest.fixture
async def history(broker: str, topics: Topics) -> AsyncIterator[tuple[RolloutBus, Settings]]:
    """The rollout history, played; the bus keeps reading, the workers keep running."""
    worker_settings = settings_for(broker, topics.prefix, clock="topic")
    async with (
        running_scheduler(broker, topics.prefix),
        RolloutBus(broker, topics) as bus,
        running(worker_settings),
    ):
        await play(bus, worker_settings, T)
        yield bus, Settings(kafka=KafkaSettings(bootstrap_servers=broker), topic_prefix=topics.prefix)


async def test_rollout_pages_show_the_state_and_every_diff(history: tuple[RolloutBus, Settings]) -> None:
    bus, settings = history
    state = bus.state["apps/web"]
    assert state is not None
    expected = expected_statuses(state, REPORTS)
    assert expected == {
        "c1": "Succeeded",
        "c2": "Progressing",
        "c3": "Failed",
        "c4": "ToApply",
        "c5": "ToApply",
    }
    async with Explorer(settings, port=0) as explorer:
        await explorer.wait_caught_up(30)

        status, text = await _get(explorer.url + "/rollouts")
        assert status == 200
        rows = {a["data-rollout"]: a for a in Elements(text).with_attr("data-rollout")}
        assert set(rows) == {"apps/web", "apps/batch"}
        web = rows["apps/web"]
        assert counts_of(web["data-counts"]) == dict(Counter(expected.values()))
        assert web["data-complete"] == str(int(state["complete"]))
        assert web["data-breach"] == str(int(state["maxFailureBreach"]))
        assert "Deleted" in Elements(text).text

        status, text = await _get(explorer.url + "/rollouts/apps/web")
        assert status == 200
        page = Elements(text)
        shown = {a["data-cluster"]: a["data-status"] for a in page.with_attr("data-status")}
        assert shown == expected
        listed = {
            e["clusterName"]: e["timeOutTime"]
            for e in state["placements"][0]["clustersToRollout"]
            if e["timeOutTime"]
        }
        deadlines = {a["data-deadline"] for a in page.with_attr("data-deadline")}
        assert set(listed.values()) <= deadlines  # the soak ends and deadlines count down
        diffs = sorted(bus.of("apps/web"), key=lambda d: d["seq"])
        assert [d["seq"] for d in diffs] == list(range(1, len(diffs) + 1))
        timeline = [(int(a["data-seq"]), a["data-trigger"]) for a in page.with_attr("data-seq")]
        assert timeline == [(d["seq"], d["trigger"]["kind"]) for d in reversed(diffs)]
        assert "recheck" in {kind for _, kind in timeline}  # the soak ended on the timer
        assert "+c2" in page.text and "+c3" in page.text and "−c1" in page.text
        assert "/placements/apps/web" in {a["href"] for a in page.with_attr("href")}

        _, api = await _get(explorer.url + "/api/rollouts/apps/web")
        body = orjson.loads(api)
        assert body["state"] == state
        assert body["timeline"] == diffs
        assert {c["cluster"]: c["status"] for c in body["clusters"]} == expected

        _, text = await _get(explorer.url + "/placements/apps/web")
        assert "/rollouts/apps/web" in {a["href"] for a in Elements(text).with_attr("href")}
        status, _ = await _get(explorer.url + "/rollouts/apps/nothing")
        assert status == 404

        # live: a new report becomes a new diff, and the page shows it without a restart
        before = len(diffs)
        await bus.report("apps/web/c2", report("Succeeded", at=at(T, 8)))
        for _ in range(200):
            if len(explorer.store.rollouts.timeline("apps/web")) > before:
                break
            await asyncio.sleep(0.05)
        _, text = await _get(explorer.url + "/rollouts/apps/web")
        newest = Elements(text).with_attr("data-seq")[0]
        assert (int(newest["data-seq"]), newest["data-trigger"]) == (before + 1, "status")
