"""The demo's score-source acts: a metric in Prometheus steers a placement.

A small exporter serves `fleetplace_demo_free_cpu` per cluster of the example fleet, Debian's
Prometheus (`/usr/bin/prometheus`, on a free loopback port, stopped by its PID) scrapes it every
second, and a score worker turns it into AddOnPlacementScores through a ScoreSource. Then
`apps/batch`, ranking by that score, is placed on the cluster with the most free CPU, and moves
when another cluster's value rises. Without Prometheus both acts say they were skipped, and why.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from fleetplace.services.commands.demo_acts import Act, ExpectedDiff, upsert
from fleetplace.services.scores.local import PROMETHEUS, Exporter, LocalPrometheus, prometheus_missing
from fleetplace.services.scores.worker import ScoreWorker
from fleetplace.shared.bus.errors import BusError
from fleetplace.shared.bus.kafka import make_producer, send_all, start_client
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.settings import Settings

BATCH = "apps/batch"
METRIC = "fleetplace_demo_free_cpu"
# Free CPU per cluster of the example fleet: edge-2 has the most, until east-2's rises.
FREE_CPU = {"east-1": 20.0, "east-2": 40.0, "west-1": 30.0, "west-2": 50.0, "edge-1": 10.0, "edge-2": 70.0}
RISEN = ("east-2", 90.0)
SOURCE: dict[str, Any] = {
    "apiVersion": "fleetplace.dev/v1alpha1",
    "kind": "ScoreSource",
    "metadata": {"namespace": "demo", "name": "free-cpu"},
    "spec": {
        "prometheus": {"url": "http://127.0.0.1:9090"},  # set to the demo's Prometheus
        "query": METRIC,
        "score": {"resource": "prometheus-usage", "name": "freeCpu"},
        "normalize": {"min": 0, "max": 100},
        "interval": "1s",
        "validFor": "30s",
    },
}
PLACEMENT: dict[str, Any] = {
    "apiVersion": "cluster.open-cluster-management.io/v1beta1",
    "kind": "Placement",
    "metadata": {"namespace": "apps", "name": "batch"},
    "spec": {
        "clusterSets": ["demo"],
        "numberOfClusters": 1,
        "prioritizerPolicy": {
            "mode": "Exact",
            "configurations": [
                {
                    "scoreCoordinate": {
                        "type": "AddOn",
                        "addOn": {"resourceName": "prometheus-usage", "scoreName": "freeCpu"},
                    },
                    "weight": 1,
                }
            ],
        },
    },
}
# From the start of Prometheus to the scores on the bus: its first scrape, the worker's group join.
SETUP_TIMEOUT_S = 30.0


class DemoScores:
    """The exporter, Prometheus and score worker of the acts, started by the first act."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings.model_copy(update={"score_group_id": f"{settings.topic_prefix}scores"})
        self.topics = Topics(settings.topic_prefix)
        self.skipped = prometheus_missing()
        self.exporter = Exporter(METRIC)
        self.prometheus: LocalPrometheus | None = None
        self.worker: ScoreWorker | None = None
        self._task: asyncio.Task[None] | None = None
        # how many scores of a resource the scheduler holds (set by the demo): the placement is
        # published only once the scheduler has read them, or it would be decided without them
        self.scheduler_holds: Callable[[str], int] | None = None

    async def start(self) -> None:
        """Serve the metric, start Prometheus and the score worker, publish the ScoreSource, and
        return once the worker has published a score for every cluster."""
        if self.skipped is not None:
            return
        self.exporter.values = dict(FREE_CPU)
        await self.exporter.start()
        self.worker = ScoreWorker(self.settings, instance="demo-scores")
        self._task = asyncio.create_task(self.worker.run())
        try:
            self.prometheus = await LocalPrometheus([f"127.0.0.1:{self.exporter.port}"]).start()
        except RuntimeError as e:
            raise BusError(f"the demo's Prometheus did not start: {e}") from None
        source = {**SOURCE, "spec": {**SOURCE["spec"], "prometheus": {"url": self.prometheus.url}}}
        producer = make_producer(self.settings.kafka)
        await start_client(producer)
        try:
            await send_all(producer, upsert(self.topics, source)())
        finally:
            await producer.stop()
        deadline = time.monotonic() + SETUP_TIMEOUT_S
        resource = str(SOURCE["spec"]["score"]["resource"])
        while self.worker.published < len(FREE_CPU) or (
            self.scheduler_holds is not None and self.scheduler_holds(resource) < len(FREE_CPU)
        ):
            if self._task.done():
                self._task.result()
                raise BusError("the score worker stopped unexpectedly")
            if time.monotonic() > deadline:
                raise BusError(f"no scores from Prometheus after {SETUP_TIMEOUT_S:g} s")
            await asyncio.sleep(0.1)

    async def stop(self) -> None:
        if self.worker is not None and self._task is not None:
            self.worker.stop()
            _, pending = await asyncio.wait({self._task}, timeout=10.0)
            for late in pending:
                late.cancel()
            await asyncio.gather(self._task, return_exceptions=True)  # how it ended is not the demo's
        if self.prometheus is not None:
            self.prometheus.close()
        await self.exporter.stop()

    def rise(self) -> None:
        cluster, value = RISEN
        self.exporter.values[cluster] = value


def score_acts(scores: DemoScores) -> list[Act]:
    """Two acts: a placement follows a Prometheus metric, then the metric moves it."""
    if scores.skipped is not None:
        why = scores.skipped
        return [
            Act(
                "scores from Prometheus", "a Prometheus metric steers apps/batch", lambda: [], (), skipped=why
            ),
            Act("metric changed", "the metric moves apps/batch", lambda: [], (), skipped=why),
        ]
    top = max(FREE_CPU, key=lambda c: FREE_CPU[c])
    risen, value = RISEN

    def rise() -> list[Any]:
        scores.rise()
        return []

    return [
        Act(
            "scores from Prometheus",
            f"a ScoreSource turns {METRIC} in Prometheus into AddOn scores; apps/batch ranks by them "
            f"and goes to {top}, the most free CPU",
            upsert(scores.topics, PLACEMENT),
            (ExpectedDiff(BATCH, (top,), trigger="placement"),),
            setup=scores.start,
            detail=lambda: f"{PROMETHEUS}, on a free loopback port, scrapes an exporter every second",
        ),
        Act(
            "metric changed",
            f"{risen}'s free CPU rises to {value:g} in Prometheus: the next scrape moves apps/batch",
            rise,
            (ExpectedDiff(BATCH, (risen,), (top,), trigger="score"),),
            timeout_s=15.0,
        ),
    ]
