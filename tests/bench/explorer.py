"""`python -m tests.bench.explorer`: how fast the explorer renders at 5,000 clusters × 5,000 placements.

The history is made offline by the worker's own processor (tests/auditor/offline.py): OCM's
benchmark fleet (tests/bench/scenario.py) of 5,000 clusters with AddOn scores and 5,000
placements, decided at startup, then a few evaluation batches of churn (allocatable CPU moving,
one cluster tainted). The explorer's store takes those records as its source would hand them
over, and the pages are requested through the app in this process (no broker: the figure is the
page, not the bus). A placement page is measured on the first visit after catching up (its
explanation recomputed from the history, as `fleetplace explain --at` does, by the walk the store
keeps: services/explorer/explainer.py), again (the explanation kept), for a decision behind where
the walk stands (a new walk: the worst case), and for the placement's first diff.

    python -m tests.bench.explorer               # 5,000 × 5,000
    python -m tests.bench.explorer --clusters 500 --placements 500

One JSON line on stdout: {"bench": "explorer", "clusters", "placements", "records", "seconds": {...}}.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from datetime import timedelta
from typing import Any

import orjson
from aiohttp.test_utils import TestClient, TestServer

from fleetplace.services.explorer import ExplorerStore, create_app
from tests.auditor.offline import T0, UNREACHABLE, OfflineWorker
from tests.bench.scenario import cluster, fleet_objects, placement

CHUNK = 50_000  # records per poll, as the explorer's source reads them


def make_history(clusters: int, placements: int, seed: int = 5) -> OfflineWorker:
    rng = random.Random(seed)
    worker = OfflineWorker(prefix="bench.")
    worker.publish(*fleet_objects(clusters, seed))
    worker.publish(*[placement("bench", i) for i in range(placements)])
    now = T0
    worker.step(now)
    for step in range(3):
        now += timedelta(seconds=30)
        worker.publish(*[cluster(rng.randrange(clusters), rng) for _ in range(5)])
        if step == 1:
            at = now.isoformat().replace("+00:00", "Z")
            worker.send(
                "taints",
                "cluster7",
                {"taints": [{"key": UNREACHABLE, "effect": "NoSelect", "timeAdded": at}]},
            )
        worker.step(now)
    worker.drain(now)
    return worker


async def _timed(client: TestClient[Any, Any], path: str) -> float:
    t0 = time.perf_counter()
    response = await client.get(path)
    await response.read()
    elapsed = time.perf_counter() - t0
    assert response.status == 200, (path, response.status)
    return elapsed


async def measure(worker: OfflineWorker) -> dict[str, float]:
    store = ExplorerStore(worker.topics.prefix)
    t0 = time.perf_counter()
    log = worker.log
    for i in range(0, len(log), CHUNK):
        store.add(log[i : i + CHUNK])
    seconds = {"store": time.perf_counter() - t0}
    t0 = time.perf_counter()
    store.mark_caught_up()  # parks the explanation walk before the earliest decision now
    seconds["park"] = time.perf_counter() - t0
    keys = store.placement_keys()
    busiest = max(keys, key=lambda k: len(store.timeline(k)))
    first = store.timeline(busiest)[0].seq
    async with TestClient(TestServer(create_app(store))) as client:
        path = f"/placements/{busiest}"
        # the first visit after catching up: the walk jumps to the decision and explains it
        seconds["placement_now_first"] = await _timed(client, path)
        seconds["placement_now_again"] = await _timed(client, path)
        # a decision before where the walk stands: a new walk (the worst case)
        seconds["placement_now_behind"] = await _timed(client, f"/placements/{keys[0]}")
        seconds["placement_then"] = await _timed(client, f"{path}?seq={first}")
        seconds["placements_list"] = await _timed(client, "/placements")
        seconds["placements_search"] = await _timed(client, "/placements?q=placement49")
        seconds["fleet"] = await _timed(client, "/fleet")
        seconds["matrix"] = await _timed(client, "/fleet/matrix?sort=uses&psort=size")
    return {k: round(v, 3) for k, v in seconds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--clusters", type=int, default=5000)
    parser.add_argument("--placements", type=int, default=5000)
    args = parser.parse_args()
    t0 = time.perf_counter()
    worker = make_history(args.clusters, args.placements)
    print(f"history: {len(worker.log)} records in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    seconds = asyncio.run(measure(worker))
    line = {
        "bench": "explorer",
        "clusters": args.clusters,
        "placements": args.placements,
        "records": len(worker.log),
        "seconds": seconds,
    }
    sys.stdout.buffer.write(orjson.dumps(line) + b"\n")


if __name__ == "__main__":
    main()
