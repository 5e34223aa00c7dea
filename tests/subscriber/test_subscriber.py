"""DecisionSubscriber against the embedded broker: dedup by seq, gaps, the view, resume after a kill."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import Counter
from typing import Any

import pytest

from fleetplace.shared.api.decisions import DecisionDiff
from fleetplace.shared.bus.codec import encode_json
from fleetplace.shared.bus.kafka import make_producer, send_all, start_client
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.bus.subscriber import DecisionSubscriber, SubscriberPosition
from fleetplace.shared.bus.topics import Topics

pytestmark = pytest.mark.integration

CLUSTERS = [f"c{i}" for i in range(12)]


def diff(
    placement: str, seq: int, decisions: list[str], previous: list[str], deleted: bool = False
) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "placement": placement,
        "seq": seq,
        "generation": 1,
        "evaluatedAt": f"2026-01-01T00:{seq // 60:02d}:{seq % 60:02d}Z",
        "trigger": {"kind": "cluster", "key": "c1"},
        "added": sorted(set(decisions) - set(previous)),
        "removed": sorted(set(previous) - set(decisions)),
        "decisions": decisions,
        "groups": [] if deleted else [{"groupName": "", "groupIndex": 0, "clusters": decisions}],
        "scores": {},
        "status": {} if deleted else {"numberOfSelectedClusters": len(decisions), "conditions": []},
        "nextRequeueAt": None,
        "inputs": {"clusters/0": seq},
        **({"deleted": True} if deleted else {}),
    }


def history(rng: random.Random, placements: int, per_placement: int) -> list[dict[str, Any]]:
    """Interleaved diffs of several placements, each placement's seqs in order; the last one deleted."""
    streams: list[list[dict[str, Any]]] = []
    for p in range(placements):
        key = f"ns{p % 2}/app{p}"
        current: list[str] = []
        stream = []
        for seq in range(1, per_placement + 1):
            deleted = p == placements - 1 and seq == per_placement
            nxt = [] if deleted else sorted(rng.sample(CLUSTERS, rng.randint(1, 5)))
            stream.append(diff(key, seq, nxt, current, deleted))
            current = nxt
        streams.append(stream)
    out: list[dict[str, Any]] = []
    while any(streams):
        stream = rng.choice([s for s in streams if s])
        out.append(stream.pop(0))
    return out


async def produce(bootstrap: str, topics: Topics, diffs: list[dict[str, Any]]) -> None:
    producer = make_producer(bootstrap)
    await start_client(producer)
    try:
        await send_all(
            producer, [OutgoingRecord(topics.decisions, d["placement"], encode_json(d)) for d in diffs]
        )
    finally:
        await producer.stop()


def final_view(diffs: list[dict[str, Any]]) -> dict[str, list[str]]:
    latest: dict[str, dict[str, Any]] = {}
    for d in diffs:
        if d["placement"] not in latest or d["seq"] > latest[d["placement"]]["seq"]:
            latest[d["placement"]] = d
    return {k: d["decisions"] for k, d in latest.items() if not d.get("deleted")}


async def test_a_subscriber_killed_mid_stream_resumes_from_its_stored_position_applying_each_seq_once(
    broker: str, topics: Topics
) -> None:
    rng = random.Random(7)
    diffs = history(rng, placements=6, per_placement=40)
    first, second = diffs[:150], diffs[150:]
    # a takeover re-publishes a few diffs: they must be skipped, not applied twice
    first = [*first, first[10], first[50]]
    await produce(broker, topics, first)

    applied: Counter[tuple[str, int]] = Counter()
    stored = SubscriberPosition()
    seen = asyncio.Event()
    killed = DecisionSubscriber(broker, prefix=topics.prefix, position=stored)

    async def deployer() -> None:
        nonlocal stored
        await killed.start()  # no `async with`: a kill runs no cleanup
        async for d in killed:
            applied[(d.placement, d.seq)] += 1  # "deploy"
            stored = killed.position()  # and store the position with it
            if sum(applied.values()) >= 80:
                seen.set()
            await asyncio.sleep(0)  # a real deployer does I/O here

    task = asyncio.create_task(deployer())
    await asyncio.wait_for(seen.wait(), 30)
    task.cancel()  # killed mid-stream: only what was stored survives
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert 80 <= sum(applied.values()) < 150
    killed_at = SubscriberPosition.from_json(stored.to_json())  # the position went through storage

    await produce(broker, topics, second)
    async with DecisionSubscriber(broker, prefix=topics.prefix, position=killed_at) as restarted:
        for d in await restarted.drain():
            applied[(d.placement, d.seq)] += 1
        restarted_view = dict(restarted.view)
        assert restarted.gaps == []
    await killed.stop()  # the dead process's connection, closed only now

    async with DecisionSubscriber(broker, prefix=topics.prefix, follow=False) as uninterrupted:
        everything = [d async for d in uninterrupted]
        assert uninterrupted.duplicates == 2
        reference_view = dict(uninterrupted.view)

    expected = {(d["placement"], d["seq"]) for d in diffs}
    assert set(applied) == expected
    assert max(applied.values()) == 1, "a seq was applied twice"
    assert {(d.placement, d.seq) for d in everything} == expected
    assert restarted_view == reference_view == final_view(diffs)
    assert "ns1/app5" not in reference_view  # deleted at the end


async def test_a_seq_gap_is_reported_and_the_view_still_follows_the_latest_decision(
    broker: str, topics: Topics
) -> None:
    d1 = diff("ns1/web", 1, ["c1"], [])
    d4 = diff("ns1/web", 4, ["c2", "c3"], ["c1"])
    await produce(broker, topics, [d1, d4, d1])
    async with DecisionSubscriber(broker, prefix=topics.prefix, follow=False) as subscriber:
        got = [d async for d in subscriber]
        assert [d.seq for d in got] == [1, 4]
        assert isinstance(got[1], DecisionDiff) and got[1].added == ("c2", "c3")
        assert [(g.placement, g.expected, g.got) for g in subscriber.gaps] == [("ns1/web", 2, 4)]
        assert subscriber.duplicates == 1
        assert subscriber.view["ns1/web"] == ["c2", "c3"]
        assert subscriber.applied_seq("ns1/web") == 4


async def test_invalid_records_are_skipped_and_a_placement_filter_narrows_the_view(
    broker: str, topics: Topics
) -> None:
    producer = make_producer(broker)
    await start_client(producer)
    try:
        await send_all(
            producer,
            [
                OutgoingRecord(topics.decisions, "ns1/a", b"{not json"),
                OutgoingRecord(topics.decisions, "ns1/a", encode_json({"placement": "ns1/a"})),
                OutgoingRecord(topics.decisions, "ns1/a", encode_json(diff("ns1/a", 1, ["c1"], []))),
                OutgoingRecord(topics.decisions, "ns1/b", encode_json(diff("ns1/b", 1, ["c2"], []))),
            ],
        )
    finally:
        await producer.stop()
    async with DecisionSubscriber(
        broker, prefix=topics.prefix, placements=["ns1/a"], follow=False
    ) as subscriber:
        got = [d async for d in subscriber]
        assert [(d.placement, d.seq) for d in got] == [("ns1/a", 1)]
        assert subscriber.invalid == 2
        assert dict(subscriber.view) == {"ns1/a": ["c1"]}
        # the position covers every record read, skipped ones included
        assert sum(subscriber.position().offsets.values()) == 4
