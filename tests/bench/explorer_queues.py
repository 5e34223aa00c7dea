"""`python -m tests.bench.explorer_queues`: how fast the explorer keeps its Queues page at 100,000
recorded queue placements.

The queue placer's own processor places the submissions under docs/examples/queues.yaml (each
with one of 300 namespace tags, so 300 tenant queues are created) and its app-placements records
go into the explorer's store as its source hands them over. Pages are requested through the app
in this process: the first visit (the placer replays every placement), the page after one more
placement arrives, the API, and the what-if of docs/examples/queues-next.yaml, which moves every
tenant's application.

    python -m tests.bench.explorer_queues                         # 100,000 placements
    python -m tests.bench.explorer_queues --applications 10000

One JSON line on stdout: {"bench": "explorer-queues", "applications", "seconds": {...}}.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import yaml
from aiohttp.test_utils import TestClient, TestServer

from fleetplace.services.explorer import ExplorerStore, create_app
from fleetplace.services.queue_placer.worker import QueueProcessor
from fleetplace.shared.api.queues import ApplicationSubmission
from fleetplace.shared.bus.records import Record
from tests.bench.explorer import _timed

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
PREFIX = "bench."
TENANTS = 300
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def placed(processor: QueueProcessor, i: int) -> Record:
    """Application `i`, placed by the worker's processor, as its app-placements record."""
    app = ApplicationSubmission.model_validate(
        {
            "applicationID": f"app-{i}",
            "user": f"u{i % 500}",
            "groups": ["dev"],
            "tags": {"namespace": f"ns{i % TENANTS}"},
        }
    )
    value = processor.place(
        app, T0 + timedelta(milliseconds=i), {"queue-configs/0": 1, "applications/0": i + 1}
    )
    return Record(f"{PREFIX}app-placements", 0, i, app.application_id, orjson.dumps(value))


async def measure(applications: int) -> dict[str, float]:
    (partition,) = yaml.safe_load((EXAMPLES / "queues.yaml").read_text())["partitions"]
    processor = QueueProcessor()
    processor.apply_config("default", partition)
    given = [Record(f"{PREFIX}queue-configs", 0, 0, "default", orjson.dumps(partition))]
    t0 = time.perf_counter()
    given += [placed(processor, i) for i in range(applications)]
    seconds = {"placing_them": time.perf_counter() - t0}
    store = ExplorerStore(PREFIX)
    store.queues_topic_exists = True
    t0 = time.perf_counter()
    store.add(given)
    seconds["store"] = time.perf_counter() - t0
    async with TestClient(TestServer(create_app(store))) as client:
        seconds["queues_first_visit"] = await _timed(client, "/queues")
        seconds["queues_again"] = await _timed(client, "/queues")
        store.add([placed(processor, applications)])
        seconds["queues_after_one_more"] = await _timed(client, "/queues")
        seconds["api_queues"] = await _timed(client, "/api/queues")
        t0 = time.perf_counter()
        form = {"config": (EXAMPLES / "queues-next.yaml").read_text(), "partition": ""}
        response = await client.post("/queues/what-if", data=form)
        await response.read()
        assert response.status == 200, response.status
        seconds["what_if"] = time.perf_counter() - t0
    return {k: round(v, 3) for k, v in seconds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--applications", type=int, default=100_000)
    args = parser.parse_args()
    seconds = asyncio.run(measure(args.applications))
    line = {"bench": "explorer-queues", "applications": args.applications}
    sys.stdout.buffer.write(orjson.dumps({**line, "seconds": seconds}) + b"\n")
    print(f"seconds: {seconds}", file=sys.stderr)


if __name__ == "__main__":
    main()
