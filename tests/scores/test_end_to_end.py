"""Scores from a real Prometheus steer a real scheduler worker, on the embedded broker.

Debian's `/usr/bin/prometheus` scrapes a small exporter served by the test (one gauge per
cluster) every second; the score worker turns `fleetplace_demo_free_cpu` into AddOnPlacementScores;
the scheduler worker places one cluster by that score. The exporter's value moves the decision;
Prometheus stopped, the scores expire and the decision falls back to the no-score ranking;
Prometheus back, the scores and the decision return. The auditor then reproduces every decision.
"""

from __future__ import annotations

from typing import Any

import pytest

from fleetplace.services.auditor import audit, read_history
from fleetplace.services.scores.local import Exporter, LocalPrometheus, prometheus_missing
from fleetplace.shared.bus.topics import Topics
from tests.scheduler.harness import Bus, base_fleet, cluster, placement
from tests.scheduler.harness import running as running_scheduler
from tests.scores.harness import Outputs, metric, running, settings_for
from tests.scoring.builders import source_doc

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(prometheus_missing() is not None, reason=str(prometheus_missing())),
]

KEY = "scores/cpu-free"
BY_FREE_CPU = {
    "mode": "Exact",
    "configurations": [
        {
            "scoreCoordinate": {
                "type": "AddOn",
                "addOn": {"resourceName": "resource-usage", "scoreName": "cpuAvailable"},
            },
            "weight": 1,
        }
    ],
}


def _decided(bus: Bus) -> list[str]:
    latest = bus.latest().get("ns1/by-cpu")
    return list(latest["decisions"]) if latest else []


def _last(bus: Bus) -> dict[str, Any]:
    return bus.latest()["ns1/by-cpu"]


async def test_prometheus_values_move_the_decision_and_an_outage_falls_back_then_recovers(
    broker: str, topics: Topics
) -> None:
    settings = settings_for(broker, topics.prefix)
    async with Exporter() as exporter, Bus(broker, topics) as bus, Outputs(broker, topics) as out:
        exporter.values = {"c1": 10.0, "c2": 50.0, "c3": 30.0}
        async with (
            LocalPrometheus([f"127.0.0.1:{exporter.port}"]) as prometheus,
            running_scheduler(settings),
            running(settings) as worker,
        ):
            await bus.publish(
                *base_fleet(),
                cluster("c1"),
                cluster("c2"),
                cluster("c3"),
                placement("ns1", "by-cpu", numberOfClusters=1, prioritizerPolicy=BY_FREE_CPU),
            )
            await bus.wait_for(lambda: bool(_decided(bus)), what="the decision without scores")
            no_scores = _decided(bus)  # every cluster scores 0: the no-score ranking

            source = source_doc(
                url=prometheus.url,
                query="fleetplace_demo_free_cpu",
                normalize={"min": 0, "max": 100},
                interval="1s",
                valid_for="3s",
            )
            await out.publish_source(source)
            await bus.wait_for(lambda: _decided(bus) == ["c2"], timeout=40, what="c2, the most free CPU")
            assert _last(bus)["scores"]["c2"] == 0  # 50 of 0..100 is the midpoint

            exporter.values["c3"] = 90.0
            await bus.wait_for(lambda: _decided(bus) == ["c3"], what="c3 once its value rises")
            assert _last(bus)["trigger"]["kind"] == "score"
            assert _last(bus)["scores"]["c3"] == 80

            # Prometheus gone: failures counted, nothing published, the scores expire
            prometheus.stop()
            await out.wait_for(
                lambda: sum(1 for v in out.statuses(KEY) if not v["healthy"]) >= 2, "two failed evaluations"
            )
            assert (
                metric(worker, "fleetplace_score_source_errors_total", source=KEY, reason="unreachable") >= 2
            )
            published = metric(worker, "fleetplace_scores_published_total", source=KEY)
            failures = len(out.statuses(KEY))  # one partition: later statuses are later evaluations
            await bus.wait_for(lambda: _decided(bus) == no_scores, what="the no-score ranking")
            fallback = _last(bus)
            assert fallback["trigger"]["kind"] == "score-expired"
            assert set(fallback["scores"].values()) == {0}  # expired scores count 0, as in OCM
            # the scores expire about when the next evaluation is due, so the fallback often comes
            # before any status past `failures`: wait for one, or the check below reads nothing
            await out.wait_for(lambda: len(out.statuses(KEY)) > failures, "an evaluation while down")
            assert metric(worker, "fleetplace_scores_published_total", source=KEY) == published
            assert all(not v["healthy"] and v["published"] == 0 for v in out.statuses(KEY)[failures:])
            assert out.statuses(KEY)[-1]["lastError"]["reason"] == "unreachable"

            # Prometheus back on its port: the scores and the decision return
            await prometheus.start()
            await bus.wait_for(lambda: _decided(bus) == ["c3"], timeout=40, what="c3 again")
            # the status of the evaluation that published them is read from its own topic, which
            # may come after the decision did
            await out.wait_for(lambda: out.statuses(KEY)[-1]["healthy"], "a healthy evaluation again")

    history = await read_history(broker, topics)
    report = audit(history)
    assert report.ok and report.checked == report.reproduced >= 4, report.to_json()
