"""The explorer's Rollouts pages over a known rollout history on the test broker
(tests/explorer/rollout_history.py): the numbers shown are what the rollout state says, the
timeline lists every rollout diff, and a new diff arrives live."""

from __future__ import annotations

import asyncio
import subprocess
import sys
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
from tests.explorer.rollout_history import FAILURE, REPORTS, at, expected_statuses, play
from tests.rollout_worker.builders import CANARY, report, rollout_object
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


def _status_command(settings: Settings, key: str) -> subprocess.CompletedProcess[str]:
    bus = ["--bootstrap", str(settings.kafka.bootstrap_servers), "--prefix", settings.topic_prefix]
    return subprocess.run(
        [sys.executable, "-m", "fleetplace.services.cli", "rollout", "status", key, *bus],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_one_state_and_the_deployers_message_wherever_a_rollout_is_shown(
    history: tuple[RolloutBus, Settings],
) -> None:
    bus, settings = history
    # a second rollout over the same placement whose mandatory canary fails: a breach
    await bus.send("rollouts", "apps/web2", rollout_object("apps/web2", strategy=CANARY))
    await bus.wait_for(lambda: (bus.last("apps/web2") or {}).get("clusters") == ["c1"], what="the canary")
    await bus.report("apps/web2/c1", {**report("Failed", at=at(T, 7)), "message": "image pull failed"})
    await bus.wait_for(
        lambda: (bus.state.get("apps/web2") or {}).get("maxFailureBreach") is True, what="the breach"
    )
    async with Explorer(settings, port=0) as explorer:
        await explorer.wait_caught_up(30)
        _, listing = await _get(explorer.url + "/rollouts")
        rows = Elements(listing).with_attr("data-rollout")
        assert {a["data-rollout"]: a["data-breach"] for a in rows}["apps/web2"] == "1"
        states = [a["data-state"] for a in Elements(listing).with_attr("data-state")]
        assert states == ["Deleted", "In progress", "Breached"]  # one per rollout: batch, web, web2

        _, text = await _get(explorer.url + "/rollouts/apps/web2")
        page = Elements(text)
        assert [a["data-state"] for a in page.with_attr("data-state")] == ["Breached"]
        assert "In progress" not in page.text and "image pull failed" in page.text
        # a cluster that reported Failed is not awaited: it counts as a failure
        assert "Waiting for reports" not in page.text and "Failed 1: c1" in page.text

        _, text = await _get(explorer.url + "/rollouts/apps/web")
        page = Elements(text)
        assert [a["data-state"] for a in page.with_attr("data-state")] == ["In progress"]
        assert "Waiting for reports from 1: c2." in page.text and "Failed 1: c3" in page.text
        assert FAILURE in page.text

        _, api = await _get(explorer.url + "/api/rollouts/apps/web")
        body = orjson.loads(api)
        assert body["rollout"]["state"] == "In progress"
        messages = {c["cluster"]: c["message"] for c in body["clusters"]}
        assert messages == {"c1": None, "c2": None, "c3": FAILURE, "c4": None, "c5": None}
        _, api = await _get(explorer.url + "/api/rollouts")
        assert {r["rollout"]: r["state"] for r in orjson.loads(api)["rollouts"]} == {
            "apps/batch": "Deleted",
            "apps/web": "In progress",
            "apps/web2": "Breached",
        }

    for key, state, cluster, message in (
        ("apps/web2", "Breached", "c1", "image pull failed"),
        ("apps/web", "In progress", "c3", FAILURE),
    ):
        shown = await asyncio.to_thread(_status_command, settings, key)
        assert shown.returncode == 0, shown.stderr
        assert f"state: {state} (" in shown.stdout and shown.stdout.count("state: ") == 1
        line = next(row for row in shown.stdout.splitlines() if f" {cluster} " in row)
        assert message in line and "Failed" in line and "waits for a report" not in line
