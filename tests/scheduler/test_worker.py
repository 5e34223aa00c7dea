"""The scheduler worker against the embedded broker, over TCP."""

from __future__ import annotations

import time

import pytest

from fleetplace.shared.bus.topics import Topics
from tests.scheduler.harness import Bus, base_fleet, cluster, placement, running, settings_for

pytestmark = pytest.mark.integration


async def test_decisions_for_a_fleet_then_a_label_change_gives_exactly_the_expected_diff(
    broker: str, topics: Topics
) -> None:
    settings = settings_for(broker, topics.prefix)
    async with Bus(broker, topics) as bus, running(settings):
        gold = [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"tier": "gold"}}}}]
        await bus.publish(
            *base_fleet(),
            cluster("c1", {"tier": "gold"}),
            cluster("c2", {"tier": "silver"}),
            cluster("c3", {"tier": "gold"}),
            placement("ns1", "gold", predicates=gold),
            placement("ns1", "two", numberOfClusters=2),
        )
        # The placements and the clusters are on different topics, read by different consumers: a
        # placement may be decided before every cluster has been read (on Apache Kafka it often
        # is), and then again once they are.
        expected = {"ns1/gold": ["c1", "c3"], "ns1/two": ["c1", "c2"]}
        await bus.wait_for(
            lambda: {k: d["decisions"] for k, d in bus.latest().items()} == expected,
            what="two placements decided",
        )
        gold_seq = bus.latest()["ns1/gold"]["seq"]
        before = len(bus.decisions)

        await bus.publish(cluster("c2", {"tier": "gold"}))
        await bus.wait_for(lambda: bus.latest()["ns1/gold"]["seq"] == gold_seq + 1, what="the gold diff")
        diff = bus.latest()["ns1/gold"]
        assert (diff["added"], diff["removed"], diff["decisions"]) == (["c2"], [], ["c1", "c2", "c3"])
        assert diff["trigger"] == {"kind": "cluster", "key": "c2"}
        # the watermark covers all four cluster records (three clusters and the update)
        assert sum(v for k, v in diff["inputs"].items() if k.startswith("clusters/")) == 4
        # "two" keeps c1, c2: a label change it does not care about publishes nothing for it
        assert len(bus.decisions) == before + 1


async def test_toleration_expiry_moves_the_workload_when_the_clock_passes_it(
    broker: str, topics: Topics
) -> None:
    settings = settings_for(broker, topics.prefix, clock="topic")
    async with Bus(broker, topics) as bus:
        await bus.set_clock("2026-01-01T00:00:00Z")
        async with running(settings):
            taint = {
                "key": "cluster.open-cluster-management.io/unreachable",
                "effect": "NoSelect",
                "timeAdded": "2026-01-01T00:00:00Z",
            }
            tol = [
                {
                    "key": "cluster.open-cluster-management.io/unreachable",
                    "operator": "Exists",
                    "tolerationSeconds": 5,
                }
            ]
            await bus.publish(
                *base_fleet(),
                cluster("c1", taints=[taint]),
                cluster("c2"),
                placement("ns1", "p", tolerations=tol),
            )
            # the placement can be decided before the clusters are read (they come on another
            # topic): the decision to check is the one that holds both
            await bus.wait_for(
                lambda: bus.latest().get("ns1/p", {}).get("decisions") == ["c1", "c2"],
                what="a decision with both clusters",
            )
            first = bus.latest()["ns1/p"]
            assert first["nextRequeueAt"] == "2026-01-01T00:00:05Z"
            await bus.set_clock("2026-01-01T00:00:04Z")
            await bus.set_clock("2026-01-01T00:00:05Z")
            await bus.wait_for(lambda: bus.latest()["ns1/p"]["seq"] == first["seq"] + 1, what="expiry diff")
            diff = bus.latest()["ns1/p"]
            assert diff["removed"] == ["c1"] and diff["trigger"]["kind"] == "toleration-expired"
            assert diff["evaluatedAt"] == "2026-01-01T00:00:05Z"


async def test_addon_placements_are_reevaluated_by_the_resync(broker: str, topics: Topics) -> None:
    settings = settings_for(broker, topics.prefix, clock="topic", addon_resync_interval_s=300)
    async with Bus(broker, topics) as bus:
        await bus.set_clock("2026-01-01T00:00:00Z")
        async with running(settings) as worker:
            cfg = [
                {
                    "scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "demo", "scoreName": "s"}},
                    "weight": 1,
                }
            ]
            await bus.publish(
                *base_fleet(),
                cluster("c1"),
                cluster("c2"),
                placement(
                    "ns1", "p", numberOfClusters=1, prioritizerPolicy={"mode": "Exact", "configurations": cfg}
                ),
            )
            # the placement can be decided before the clusters are read: wait for its one cluster
            await bus.wait_for(
                lambda: len(bus.latest().get("ns1/p", {}).get("decisions", [])) == 1,
                what="a decision with its cluster",
            )
            seq = bus.latest()["ns1/p"]["seq"]
            evaluations = worker.metrics.evaluations._value.get()
            await bus.set_clock("2026-01-01T00:05:00Z")
            await bus.wait_for(lambda: worker.metrics.evaluations._value.get() > evaluations, what="resync")
            assert bus.latest()["ns1/p"]["seq"] == seq  # same answer: nothing published


async def test_bad_records_go_to_deadletter_and_the_worker_keeps_going(broker: str, topics: Topics) -> None:
    settings = settings_for(broker, topics.prefix)
    async with Bus(broker, topics) as bus, running(settings):
        await bus.publish(*base_fleet(), cluster("c1"))
        await bus.send("clusters", "broken", b"{not json")
        await bus.send(
            "placements",
            "ns1/bad",
            b'{"kind": "Placement", "metadata": {"namespace": "ns1", "name": "bad"}, "spec": {"numberOfClusters": "x"}}',
        )
        await bus.send("clusters", b"\xff\xfe", b"{}")
        await bus.publish(placement("ns1", "good"))
        await bus.wait_for(lambda: "ns1/good" in bus.latest(), what="the good placement")
        await bus.wait_for(lambda: len(bus.deadletters) >= 3, what="three dead letters")
        reasons = {d["topic"].removeprefix(topics.prefix): d["error"] for d in bus.deadletters}
        assert "not valid JSON" in reasons["clusters"] or "UTF-8" in reasons["clusters"]
        assert "numberOfClusters" in reasons["placements"]
        assert all(d["value_b64"] is not None for d in bus.deadletters)


async def test_restart_publishes_nothing_when_nothing_changed(broker: str, topics: Topics) -> None:
    settings = settings_for(broker, topics.prefix)
    async with Bus(broker, topics) as bus:
        async with running(settings):
            await bus.publish(
                *base_fleet(), cluster("c1"), cluster("c2"), placement("ns1", "a"), placement("ns1", "b")
            )
            await bus.wait_for(lambda: len(bus.latest()) == 2, what="decisions")
        count = len(bus.decisions)
        async with running(settings) as worker:
            await bus.wait_for(
                lambda: worker.metrics.evaluations._value.get() >= 2, what="startup evaluation"
            )
        assert len(bus.decisions) == count


async def test_not_ready_after_a_rebalance_until_the_moved_placements_are_read(
    broker: str, topics: Topics
) -> None:
    # readiness is what a takeover waits for: the state of the partitions just assigned rebuilt
    async with Bus(broker, topics) as bus, running(settings_for(broker, topics.prefix)) as worker:
        await bus.publish(*base_fleet(), cluster("c1"), placement("ns1", "p1"))
        # decided on c1 (a placement read before the cluster is decided again once it is read)
        await bus.wait_for(
            lambda: bus.latest().get("ns1/p1", {}).get("decisions") == ["c1"], what="p1 decided on c1"
        )
        await bus.wait_for(lambda: worker.ready, what="ready")
        seq = bus.latest()["ns1/p1"]["seq"]
        partition = (topics.placements, 0)
        before = time.time()
        await worker._assign({partition})  # what the group's rebalance listener does
        assert not worker.ready, "a moved partition not read yet: not ready"
        await bus.wait_for(lambda: worker.ready, what="the moved partition read again")
        assert len(bus.latest()) == 1 and bus.latest()["ns1/p1"]["seq"] == seq  # and nothing republished
        # the takeover's two moments, as its gauges keep them
        sample = worker.registry.get_sample_value
        assigned_at = sample("fleetplace_partitions_assigned_timestamp_seconds")
        caught_up_at = sample("fleetplace_owned_caught_up_timestamp_seconds")
        assert assigned_at is not None and caught_up_at is not None
        assert before <= assigned_at <= caught_up_at <= time.time()


async def test_a_rebalance_reads_again_only_the_partitions_new_to_the_instance(
    broker: str, topics: Topics
) -> None:
    # Kafka's eager rebalance: every partition is revoked, then the new assignment arrives. The
    # listener's two calls are made here as the group makes them (on the real consumer, whose
    # partitions do not change, so whatever this worker reads is what its seeks ask for).
    names = [f"p{i:02d}" for i in range(16)]
    async with Bus(broker, topics) as bus, running(settings_for(broker, topics.prefix)) as worker:
        await bus.publish(*base_fleet(), cluster("c1"), *(placement("ns1", n) for n in names))
        # decided on c1 (a placement read before the cluster is decided again once it is read)
        await bus.wait_for(
            lambda: (
                len(bus.latest()) == len(names)
                and all(d["decisions"] == ["c1"] for d in bus.latest().values())
            ),
            what="every placement decided",
        )
        await bus.wait_for(lambda: worker.ready, what="ready")
        seq_before = {k: d["seq"] for k, d in bus.latest().items()}
        sample = worker.registry.get_sample_value

        def placements_read() -> float:
            return sample("fleetplace_records_consumed_total", {"topic": "placements"}) or 0.0

        def owned() -> float:
            return sample("fleetplace_placements_owned") or 0.0

        partition_of = dict(worker._placement_partition)
        used = sorted(set(partition_of.values()))
        assert len(used) >= 2, "the keys spread over several partitions"
        everything = {(topics.placements, p) for p in range(12)}
        lost = {(topics.placements, used[0])}
        lost_keys = {k for k, p in partition_of.items() if p == used[0]}
        read_before, published_before = placements_read(), len(bus.decisions)

        # 1. every partition revoked, all but one given back: nothing is read again
        worker._revoke(everything)
        await worker._assign(everything - lost)
        await bus.wait_for(lambda: worker.ready, what="ready after keeping its partitions")
        await bus.wait_for(
            lambda: owned() == len(names) - len(lost_keys), what="the lost partition's placements dropped"
        )
        assert placements_read() == read_before
        assert not any(key in worker.processor.fleet.placements for key in lost_keys)

        # 2. everything revoked again, the lost partition comes back: only it is read, from the start
        worker._revoke(everything - lost)
        await worker._assign(everything)
        await bus.wait_for(lambda: worker.ready, what="ready after taking the partition back")
        await bus.wait_for(lambda: owned() == len(names), what="every placement owned again")
        assert placements_read() == read_before + len(lost_keys)

        # 3. a placement changed while no partition was owned is evaluated after the assignment
        worker._revoke(everything)
        target = sorted(partition_of)[1]
        await bus.publish(cluster("c2"))
        await worker._assign(everything)
        await bus.wait_for(
            lambda: bus.latest()[target]["decisions"] == ["c1", "c2"], what="the new cluster placed"
        )
        # every placement's diff, which may commit in a transaction of its partition's own
        await bus.wait_for(
            lambda: all(bus.latest()[k]["seq"] > n for k, n in seq_before.items()), what="every diff"
        )
        # nothing else was published: one diff per placement for the new cluster, none repeated
        assert len(bus.decisions) == published_before + len(names)
        assert {k: d["seq"] for k, d in bus.latest().items()} == {k: n + 1 for k, n in seq_before.items()}


async def test_the_group_session_setting_reaches_the_consumer(broker: str, topics: Topics) -> None:
    settings = settings_for(broker, topics.prefix, group_session_timeout_ms=2400)
    async with running(settings) as worker:
        group = worker.runtime.group  # aiokafka keeps what it sends in JoinGroup and heartbeats
        assert (group._session_timeout_ms, group._heartbeat_interval_ms) == (2400, 800)
