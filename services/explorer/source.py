"""The explorer's source: the topics `watch` and `audit` read, consumed for as long as it runs.

A BroadcastReader over the scheduler's inputs and `decisions` from the beginning (the same
topics `read_history` reads), each poll handed to the store; the `rollout-decisions` topic is
looked for now and then, since rollouts may be deployed after the explorer started.
"""

from __future__ import annotations

import time

from fleetplace.services.auditor.history import INPUT_TOPICS, HistoryError
from fleetplace.services.explorer.store import ExplorerStore
from fleetplace.shared.bus.kafka import BroadcastReader, make_admin, start_client
from fleetplace.shared.bus.topics import DECISIONS, Topics
from fleetplace.shared.settings import KafkaSettings

ROLLOUT_DECISIONS = "rollout-decisions"
TOPIC_CHECK_S = 30.0


async def existing_topics(kafka: KafkaSettings | str) -> set[str]:
    admin = make_admin(kafka)
    await start_client(admin)
    try:
        return set(await admin.list_topics())
    finally:
        await admin.close()


async def follow(store: ExplorerStore, kafka: KafkaSettings | str, topics: Topics) -> None:
    """Feed `store` until cancelled. HistoryError when the topics do not exist."""
    wanted = topics.names([*INPUT_TOPICS, DECISIONS])
    present = await existing_topics(kafka)
    missing = [t for t in wanted if t not in present]
    if missing:
        raise HistoryError(f"topics do not exist under prefix {topics.prefix!r}: {', '.join(missing)}")
    store.rollouts_topic_exists = topics.prefix + ROLLOUT_DECISIONS in present
    checked = time.monotonic()
    async with BroadcastReader(kafka, wanted, max_records=50_000, poll_timeout_ms=200) as reader:
        while True:
            batch = await reader.poll()
            store.add(batch.records)
            if batch.caught_up:
                store.mark_caught_up()
            if time.monotonic() - checked > TOPIC_CHECK_S:
                checked = time.monotonic()
                store.rollouts_topic_exists = topics.prefix + ROLLOUT_DECISIONS in await existing_topics(
                    kafka
                )
