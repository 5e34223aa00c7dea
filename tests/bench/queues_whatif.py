"""`make bench-queues-whatif`: a queue rules what-if over 100,000 recorded applications.

The history is the queue placer's own (the worker's processor, offline): the applications of
`make bench-queues` placed under its 6-rule config, in batches of 1,000, then written to the
embedded broker at the partitions and offsets a live worker would have left. The new config
moves the user rule ahead of the provided rule, so a good share of the answers change.
Measured on the broker, in turn, three times each (the best of each is compared):

- read: what `fleetplace queues what-if` reads — `app-placements` to its end, into a History;
- decode: the records decoded, their submissions validated, put in placing order;
- evaluate: every application placed again under the new config, compared, new rejections
  explained.

`ratio` = evaluate / read (target < 2); `ratio_after_read` = (decode + evaluate) / read, all
the command does once the records are fetched. Wall times (the read waits on the broker).
One JSON line: {"bench": "queues-whatif", "applications", "changed", "read_s", "decode_s",
"evaluate_s", "ratio", "ratio_after_read", ...}.
"""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import timedelta
from typing import Any

import orjson
import yaml

from fleetplace.services.auditor.history import History, read_topics
from fleetplace.services.auditor.queue_whatif import (
    QueueWhatIf,
    RecordedApplication,
    recorded_applications,
    what_if_queues,
)
from fleetplace.shared import native
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import APP_PLACEMENTS, Topics
from fleetplace.shared.queueing import QueueingConfig, parse_config
from fleetplace.shared.testing import running_broker, unique_topic_prefix
from tests.auditor.offline import write_to_broker
from tests.auditor.test_queue_audit import PREFIX, T0, OfflineQueuePlacer
from tests.bench.queues import config_text, records

APPS = 100_000
BATCH = 1_000
ROUNDS = 3


def current_partition() -> dict[str, Any]:
    partition: dict[str, Any] = yaml.safe_load(config_text())["partitions"][0]
    return partition


def new_config() -> QueueingConfig:
    partition = current_partition()
    rules = partition["placementrules"]
    rules[0], rules[1] = rules[1], rules[0]  # the user rule before the provided rule
    return parse_config({"partitions": [partition]})


def make_history(apps: int = APPS) -> OfflineQueuePlacer:
    q = OfflineQueuePlacer()
    q.config(current_partition())
    submissions = [orjson.loads(r) for r in records(apps)]
    for i in range(0, apps, BATCH):
        q.submit(T0 + timedelta(seconds=i // BATCH), *submissions[i : i + BATCH])
    return q


async def _prepare(bootstrap: str, history: OfflineQueuePlacer) -> Topics:
    topics = Topics(unique_topic_prefix("bench"))
    moved = [
        Record(topics.prefix + r.topic.removeprefix(PREFIX), r.partition, r.offset, r.key, r.value, r.headers)
        for r in history.log
    ]
    await write_to_broker(bootstrap, topics.prefix, moved)
    await _read(bootstrap, topics)  # warm the broker and the client
    return topics


async def _read(bootstrap: str, topics: Topics) -> History:
    history = History()
    await read_topics(bootstrap, topics, [APP_PLACEMENTS], history)
    return history


def _decode(history: History) -> list[RecordedApplication]:
    recorded, unreadable = recorded_applications(history)
    if unreadable:
        raise RuntimeError(f"unreadable placements: {unreadable[:3]}")
    return recorded


def main() -> None:
    t0 = time.perf_counter()
    generated = make_history()
    generate_s = time.perf_counter() - t0
    config = new_config()
    reads: list[float] = []
    decodes: list[float] = []
    evaluations: list[float] = []
    result: QueueWhatIf | None = None
    with running_broker() as bootstrap:
        topics = asyncio.run(_prepare(bootstrap, generated))
        for _ in range(ROUNDS):
            t0 = time.perf_counter()
            history = asyncio.run(_read(bootstrap, topics))
            t1 = time.perf_counter()
            recorded = _decode(history)
            t2 = time.perf_counter()
            result = what_if_queues(recorded, config)
            t3 = time.perf_counter()
            reads.append(t1 - t0)
            decodes.append(t2 - t1)
            evaluations.append(t3 - t2)
            if result.reported != APPS:
                raise RuntimeError(f"{result.reported} applications evaluated, not {APPS}")
            del history, recorded
    assert result is not None
    read_s, decode_s, evaluate_s = min(reads), min(decodes), min(evaluations)
    line = {
        "bench": "queues-whatif",
        "applications": APPS,
        "changed": len(result.changes),
        "summary": result.summary(),
        "read_s": round(read_s, 3),
        "decode_s": round(decode_s, 3),
        "evaluate_s": round(evaluate_s, 3),
        "ratio": round(evaluate_s / read_s, 3),
        "ratio_after_read": round((decode_s + evaluate_s) / read_s, 3),
        "read_s_runs": [round(t, 3) for t in reads],
        "decode_s_runs": [round(t, 3) for t in decodes],
        "evaluate_s_runs": [round(t, 3) for t in evaluations],
        "generate_s": round(generate_s, 1),
        "compiled_modules": len(native.compiled()),
    }
    sys.stdout.write(orjson.dumps(line).decode() + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
