"""The explorer's source: the topics `watch` and `audit` read, consumed for as long as it runs.

A BroadcastReader over the scheduler's inputs and `decisions` from the beginning (the same
topics `read_history` reads), each poll handed to the store. The rollout topics are read by a
second reader once they all exist (looked for now and then, since rollouts may be deployed after
the explorer started); the store is caught up when both readers are.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from fleetplace.services.auditor.history import INPUT_TOPICS, HistoryError
from fleetplace.services.explorer.store import ExplorerStore
from fleetplace.services.rollout.book import ROLLOUT_TOPICS
from fleetplace.shared.bus.kafka import Batch, BroadcastReader, make_admin, start_client
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
    rollout_topics = topics.names(ROLLOUT_TOPICS)
    present = await existing_topics(kafka)
    missing = [t for t in wanted if t not in present]
    if missing:
        raise HistoryError(f"topics do not exist under prefix {topics.prefix!r}: {', '.join(missing)}")
    checked = time.monotonic()
    async with _reader(kafka, wanted) as reader, contextlib.AsyncExitStack() as stack:
        rollouts: BroadcastReader | None = None
        while True:
            if rollouts is None and all(t in present for t in rollout_topics):
                rollouts = await stack.enter_async_context(_reader(kafka, rollout_topics))
                store.rollouts_topic_exists = True
            if rollouts is None:
                batch, rollout_batch = await reader.poll(), Batch((), True)
            else:
                batch, rollout_batch = await asyncio.gather(reader.poll(), rollouts.poll())
            await store.feed((*batch.records, *rollout_batch.records))
            if batch.caught_up and rollout_batch.caught_up:
                await store.catch_up()
            if rollouts is None and time.monotonic() - checked > TOPIC_CHECK_S:
                checked = time.monotonic()
                present = await existing_topics(kafka)
