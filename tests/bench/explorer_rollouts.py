"""`python -m tests.bench.explorer_rollouts`: how fast the explorer renders its rollout pages at
1,000 rollouts × 1,000 clusters.

Each rollout has its own placement of 1,000 clusters in 10 decision groups: the first three
groups reported Succeeded, the fourth is being rolled out (its state lists its 100 clusters,
Progressing, a few Failed with a message), the rest wait their turn; 20 diffs each. The records
go into the explorer's store as its source hands them over; the placements' decision groups are
given directly (the figure is the rollout pages, not the scheduler's history). Pages are
requested through the app in this process.

    python -m tests.bench.explorer_rollouts                      # 1,000 × 1,000
    python -m tests.bench.explorer_rollouts --rollouts 100 --clusters 100

One JSON line on stdout: {"bench": "explorer-rollouts", "rollouts", "clusters", "seconds": {...}}.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Mapping
from typing import Any

import orjson
from aiohttp.test_utils import TestClient, TestServer

from fleetplace.services.explorer import ExplorerStore, create_app
from fleetplace.shared.bus.records import Record
from tests.bench.explorer import _timed
from tests.rollout_worker.builders import CANARY, rollout_object

GROUPS = 10
DIFFS = 20
PREFIX = "bench."


class GivenGroups(ExplorerStore):
    """The store, with the placements' decision groups given instead of read from `decisions`."""

    def __init__(self, groups: Mapping[str, list[Mapping[str, Any]]]) -> None:
        super().__init__(PREFIX)
        self.given = groups

    def groups(self, key: str) -> list[Mapping[str, Any]] | None:
        return list(self.given[key]) if key in self.given else None


def records(rollouts: int, clusters: int) -> tuple[list[Record], dict[str, list[Mapping[str, Any]]]]:
    out: list[Record] = []
    groups: dict[str, list[Mapping[str, Any]]] = {}
    size = clusters // GROUPS
    for r in range(rollouts):
        key = f"apps/r{r}"
        names = [f"r{r}-c{c}" for c in range(clusters)]
        groups[f"apps/p{r}"] = [
            {"groupName": f"g{g}", "groupIndex": g, "clusters": names[g * size : (g + 1) * size]}
            for g in range(GROUPS)
        ]
        out.append(
            Record(
                f"{PREFIX}rollouts",
                0,
                r,
                key,
                orjson.dumps(rollout_object(key, strategy=CANARY, placement=f"p{r}")),
            )
        )
        for c in names[: 3 * size]:
            report = {"revision": "v1", "status": "Succeeded", "lastTransitionTime": "2026-01-01T00:01:00Z"}
            out.append(Record(f"{PREFIX}rollout-status", 0, len(out), f"{key}/{c}", orjson.dumps(report)))
        wave = names[3 * size : 4 * size]
        listed = []
        for i, c in enumerate(wave):
            status = "Failed" if i % 25 == 0 else "Progressing"
            report = {"revision": "v1", "status": status, "lastTransitionTime": "2026-01-01T00:10:00Z"}
            if status == "Failed":
                report["message"] = f"apply failed: cannot reach {c}"
            out.append(Record(f"{PREFIX}rollout-status", 0, len(out), f"{key}/{c}", orjson.dumps(report)))
            listed.append(
                {"clusterName": c, "groupName": "g3", "groupIndex": 3, "status": status}
                | {"lastTransitionTime": "2026-01-01T00:10:00Z", "timeOutTime": "2026-01-01T00:20:00Z"}
            )
        state = {
            "rollout": key,
            "seq": DIFFS,
            "revision": "v1",
            "clusters": wave,
            "placements": [{"name": f"p{r}", "decided": True, "clustersToRollout": listed}],
            "complete": False,
            "maxFailureBreach": False,
            "nextRecheckAt": "2026-01-01T00:20:00Z",
        }
        out.append(Record(f"{PREFIX}rollout-state", 0, r, key, orjson.dumps(state)))
        for seq in range(1, DIFFS + 1):
            diff = {
                "rollout": key,
                "seq": seq,
                "revision": "v1",
                "evaluatedAt": f"2026-01-01T00:{seq:02d}:00Z",
                "trigger": {"kind": "status", "key": f"{key}/{wave[seq % len(wave)]}"},
                "added": [wave[seq % len(wave)]],
                "placements": [{"name": f"p{r}", "decided": True}],
            }
            out.append(Record(f"{PREFIX}rollout-decisions", 0, len(out), key, orjson.dumps(diff)))
    return out, groups


async def measure(rollouts: int, clusters: int) -> dict[str, float]:
    given, groups = records(rollouts, clusters)
    store = GivenGroups(groups)
    store.rollouts_topic_exists = True
    t0 = time.perf_counter()
    store.add(given)
    seconds = {"store": time.perf_counter() - t0}
    async with TestClient(TestServer(create_app(store))) as client:
        seconds["rollouts_list"] = await _timed(client, "/rollouts")
        seconds["rollouts_search"] = await _timed(client, "/rollouts?q=r99")
        seconds["rollout"] = await _timed(client, f"/rollouts/apps/r{rollouts // 2}")
        seconds["api_rollouts"] = await _timed(client, "/api/rollouts")
        seconds["api_rollout"] = await _timed(client, f"/api/rollouts/apps/r{rollouts // 2}")
    return {k: round(v, 3) for k, v in seconds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rollouts", type=int, default=1000)
    parser.add_argument("--clusters", type=int, default=1000)
    args = parser.parse_args()
    seconds = asyncio.run(measure(args.rollouts, args.clusters))
    line = {"bench": "explorer-rollouts", "rollouts": args.rollouts, "clusters": args.clusters}
    sys.stdout.buffer.write(orjson.dumps({**line, "seconds": seconds}) + b"\n")
    print(f"seconds: {seconds}", file=sys.stderr)


if __name__ == "__main__":
    main()
