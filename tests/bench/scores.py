"""`make bench-scores`: what a score worker costs, scoring 1,000 clusters from one query.

A `fleetplace worker scores` process runs against the embedded broker and a Prometheus stand-in
(its own process, so its CPU is not the worker's) that answers `/api/v1/query` with 1,000 series.
The worker's CPU (utime + stime from /proc) and RSS are read while it evaluates; its
`fleetplace_score_source_evaluations_total` says how many evaluations ran. One JSON line per
figure on stdout:

* `idle`: CPU seconds per second with no source (the worker's loop, the broker's heartbeats).
* `steady`: 1,000 evaluations of an unchanged answer (several sources at a 1 s interval, so the
  run is short): CPU seconds per evaluation beyond idle, the share of one core for one source
  every 15 s (idle + one evaluation per 15 s), and the RSS every 100 evaluations.
* `churn`: the same with every cluster's score changing at every evaluation, so each evaluation
  publishes 1,000 AddOnPlacementScores.

    python -m tests.bench.scores            # 1,000 steady + 200 churning evaluations
    python -m tests.bench.scores --quick    # 200 + 50

Figures go to docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import orjson

from fleetplace.shared.bus.broker import free_port
from fleetplace.shared.bus.codec import encode_json
from fleetplace.shared.bus.kafka import make_producer, send_all, start_client
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.testing import create_topics, running_broker, unique_topic_prefix
from tests.proc import cpu_seconds, readyz, stop_process
from tests.scoring.builders import source_doc

CLUSTERS = 1000
FLEETPLACE = str(Path(sys.executable).with_name("fleetplace"))


# ---- the Prometheus stand-in (python -m tests.bench.scores --serve PORT) -----------------------
def serve(port: int, clusters: int) -> None:
    from aiohttp import web

    state = {"churn": False, "n": 0}

    async def query(request: web.Request) -> web.Response:
        await request.post()
        state["n"] += 1
        shift = state["n"] if state["churn"] else 0
        result = [
            {
                "metric": {"cluster": f"cluster-{i:04d}", "job": "node"},
                "value": [1.7e9, str((i * 7 + shift) % 101)],
            }
            for i in range(clusters)
        ]
        body = orjson.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})
        return web.Response(body=body, content_type="application/json")

    async def churn(request: web.Request) -> web.Response:
        state["churn"] = True
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/api/v1/query", query)
    app.router.add_post("/churn", churn)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


# ---- the measurement ---------------------------------------------------------------------------
def rss_mb(pid: int) -> float:
    match = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    return int(match.group(1)) / 1024 if match else 0.0


def evaluations(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return int(
        sum(
            float(m)
            for m in re.findall(r"^fleetplace_score_source_evaluations_total\{[^}]*\} (\S+)$", text, re.M)
        )
    )


def wait_evaluations(port: int, target: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while (n := evaluations(port)) < target:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{n} evaluations after {timeout} s, wanted {target}")
        time.sleep(0.2)
    return n


def measure(name: str, pid: int, port: int, count: int, extra: dict[str, Any], idle: float) -> dict[str, Any]:
    start_n = evaluations(port)
    start_cpu, start_t = cpu_seconds(pid), time.monotonic()
    rss = [round(rss_mb(pid), 1)]
    for step in range(1, count // 100 + 1):
        wait_evaluations(port, start_n + step * 100, timeout=600)
        rss.append(round(rss_mb(pid), 1))
    n = evaluations(port) - start_n
    cpu, elapsed = cpu_seconds(pid) - start_cpu, time.monotonic() - start_t
    per_evaluation = max(cpu - idle * elapsed, 0.0) / n
    return {
        "figure": name,
        "clusters": CLUSTERS,
        "evaluations": n,
        "cpuSecondsPerEvaluation": round(per_evaluation, 5),
        "coreShareAt15s": f"{100 * (idle * 15 + per_evaluation) / 15:.2f}%",
        "rssMbEvery100": rss,
        **extra,
    }


async def publish_sources(
    bootstrap: str, prefix: str, docs: list[dict[str, Any]], delete: bool = False
) -> None:
    producer = make_producer(bootstrap)
    await start_client(producer)
    try:
        records = [
            OutgoingRecord(
                f"{prefix}score-sources",
                f"{d['metadata']['namespace']}/{d['metadata']['name']}",
                None if delete else encode_json(d),
            )
            for d in docs
        ]
        await send_all(producer, records)
    finally:
        await producer.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, CLUSTERS)
        return
    steady_n, churn_n = (200, 50) if args.quick else (1000, 200)
    prom_port, http_port = free_port(), free_port()
    server = subprocess.Popen([sys.executable, "-m", "tests.bench.scores", "--serve", str(prom_port)])
    try:
        with running_broker() as bootstrap:
            prefix = unique_topic_prefix("bench")
            asyncio.run(create_topics(bootstrap, prefix))
            env = {**os.environ, "FLEETPLACE_LOG_LEVEL": "warning"}
            worker = subprocess.Popen(
                [
                    FLEETPLACE,
                    "worker",
                    "scores",
                    "-b",
                    bootstrap,
                    "--prefix",
                    prefix,
                    "--http-port",
                    str(http_port),
                ],
                env=env,
            )
            try:
                deadline = time.monotonic() + 60
                while readyz(http_port) != 200:
                    if time.monotonic() > deadline or worker.poll() is not None:
                        raise RuntimeError("the score worker did not become ready")
                    time.sleep(0.2)
                time.sleep(2)
                cpu0 = cpu_seconds(worker.pid)
                time.sleep(10)
                idle = (cpu_seconds(worker.pid) - cpu0) / 10
                print(
                    orjson.dumps({"figure": "idle", "cpuSecondsPerSecond": round(idle, 5)}).decode(),
                    flush=True,
                )

                url = f"http://127.0.0.1:{prom_port}"
                sources = [
                    source_doc(f"bench-{i}", url=url, resource=f"bench-{i}", interval="1s", valid_for="1h")
                    for i in range(20)
                ]
                asyncio.run(publish_sources(bootstrap, prefix, sources))
                wait_evaluations(http_port, 60, timeout=120)  # the first evaluations publish 1,000 each
                figure = measure("steady", worker.pid, http_port, steady_n, {"sources": 20}, idle)
                print(orjson.dumps(figure).decode(), flush=True)

                asyncio.run(publish_sources(bootstrap, prefix, sources[4:], delete=True))
                urllib.request.urlopen(
                    urllib.request.Request(f"{url}/churn", method="POST"), timeout=5
                ).close()
                time.sleep(3)
                figure = measure(
                    "churn",
                    worker.pid,
                    http_port,
                    churn_n,
                    {"sources": 4, "publishedPerEvaluation": 1000},
                    idle,
                )
                print(orjson.dumps(figure).decode(), flush=True)
            finally:
                stop_process(worker)
    finally:
        stop_process(server)


if __name__ == "__main__":
    main()
