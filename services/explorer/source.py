"""The explorer's source: the topics `watch` and `audit` read, consumed for as long as it runs.

A BroadcastReader over the scheduler's inputs and `decisions` from the beginning (the same
topics `read_history` reads), each poll handed to the store. The rollout topics are read by a
second reader once they all exist (looked for now and then, since rollouts may be deployed after
the explorer started), and so are the queue placer's topics; the store is caught up when every
reader is.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from fleetplace.services.auditor.history import INPUT_TOPICS, HistoryError
from fleetplace.services.explorer.queue_book import QUEUE_TOPICS
from fleetplace.services.explorer.store import ExplorerStore
from fleetplace.services.rollout.book import ROLLOUT_TOPICS
from fleetplace.shared.bus.kafka import BroadcastReader, make_admin, start_client
from fleetplace.shared.bus.topics import DECISIONS, Topics
from fleetplace.shared.settings import KafkaSettings

TOPIC_CHECK_S = 30.0
MAX_RECORDS = 50_000
POLL_TIMEOUT_MS = 200


async def existing_topics(kafka: KafkaSettings | str) -> set[str]:
    admin = make_admin(kafka)
    await start_client(admin)
    try:
        return set(await admin.list_topics())
    finally:
        await admin.close()


def _reader(kafka: KafkaSettings | str, topics: list[str]) -> BroadcastReader:
    return BroadcastReader(kafka, topics, max_records=MAX_RECORDS, poll_timeout_ms=POLL_TIMEOUT_MS)


async def follow(store: ExplorerStore, kafka: KafkaSettings | str, topics: Topics) -> None:
    """Feed `store` until cancelled. HistoryError when the topics do not exist."""
    wanted = topics.names([*INPUT_TOPICS, DECISIONS])
    present = await existing_topics(kafka)
    missing = [t for t in wanted if t not in present]
    if missing:
        raise HistoryError(f"topics do not exist under prefix {topics.prefix!r}: {', '.join(missing)}")
    checked = time.monotonic()
    # topics a deployment may add later, each read by a reader of its own once all exist
    later = {"rollouts": topics.names(ROLLOUT_TOPICS), "queues": topics.names(QUEUE_TOPICS)}
    async with _reader(kafka, wanted) as reader, contextlib.AsyncExitStack() as stack:
        readers: dict[str, BroadcastReader] = {}
        while True:
            for name, names in later.items():
                if name not in readers and all(t in present for t in names):
                    readers[name] = await stack.enter_async_context(_reader(kafka, names))
                    if name == "rollouts":
                        store.rollouts_topic_exists = True
                    else:
                        store.queues_topic_exists = True
            batches = await asyncio.gather(reader.poll(), *(r.poll() for r in readers.values()))
            await store.feed(tuple(record for batch in batches for record in batch.records))
            if all(batch.caught_up for batch in batches):
                await store.catch_up()
            if len(readers) < len(later) and time.monotonic() - checked > TOPIC_CHECK_S:
                checked = time.monotonic()
                present = await existing_topics(kafka)
