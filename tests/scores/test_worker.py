"""The score worker on the embedded broker, over TCP, with a Prometheus stand-in it queries over
HTTP: what it publishes, when it publishes nothing, and what it counts."""

from __future__ import annotations

import orjson
import pytest
from aiokafka.errors import KafkaError

from fleetplace.shared.bus.topics import Topics, partition_for_key, spec
from fleetplace.shared.testing import BrokerKind
from tests.scores.harness import Outputs, QueryServer, metric, running, settings_for
from tests.scoring.builders import source_doc

pytestmark = pytest.mark.integration

KEY = "scores/cpu-free"


async def test_scores_then_nothing_for_an_unchanged_result_then_only_the_changed_cluster(
    broker: str, topics: Topics
) -> None:
    async with (
        QueryServer() as prom,
        Outputs(broker, topics) as out,
        running(settings_for(broker, topics.prefix)) as worker,
    ):
        prom.values = {"c1": 16, "c2": 48, "c3": "NaN"}
        await out.publish_source(source_doc(url=prom.url, interval="1s", valid_for="5m"))
        await out.wait_for(lambda: len(out.statuses(KEY)) >= 1, "the first evaluation")
        first = out.statuses(KEY)[0]
        assert (first["healthy"], first["clustersScored"], first["published"]) == (True, 2, 2)
        assert first["skipped"] == {"nan": 1}
        await out.wait_for(lambda: len(out.scores) == 2, "two scores")
        published = dict(out.scores)
        assert set(published) == {"c1/resource-usage", "c2/resource-usage"}
        assert published["c1/resource-usage"]["status"]["scores"] == [{"name": "cpuAvailable", "value": -50}]
        assert published["c2/resource-usage"]["status"]["scores"] == [{"name": "cpuAvailable", "value": 50}]

        # the same answer, evaluated again and again: nothing more on scores
        await out.wait_for(lambda: len(out.statuses(KEY)) >= 4, "three more evaluations")
        assert len(out.scores) == 2
        assert all(s["published"] == 0 for s in out.statuses(KEY)[1:])

        prom.values = {"c1": 16, "c2": 64}
        await out.wait_for(lambda: len(out.scores) == 3, "the changed score")
        assert out.scores[-1][0] == "c2/resource-usage"
        assert out.scores[-1][1]["status"]["scores"][0]["value"] == 100
        assert metric(worker, "fleetplace_score_source_series_skipped_total", source=KEY, reason="nan") >= 1
        assert metric(worker, "fleetplace_scores_published_total", source=KEY) == 3


async def test_a_restarted_worker_publishes_nothing_for_scores_already_on_the_bus(
    broker: str, topics: Topics
) -> None:
    settings = settings_for(broker, topics.prefix)
    async with QueryServer() as prom, Outputs(broker, topics) as out:
        prom.values = {"c1": 10, "c2": 20}
        async with running(settings):
            await out.publish_source(source_doc(url=prom.url, interval="1s"))
            await out.wait_for(lambda: len(out.scores) == 2, "two scores")
        evaluations = len(out.statuses(KEY))
        async with running(settings, instance="scores-2"):
            await out.wait_for(
                lambda: len(out.statuses(KEY)) >= evaluations + 2, "two evaluations after the restart"
            )
        assert len(out.scores) == 2
        assert out.statuses(KEY)[-1]["instance"] == "scores-2"


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ((400, b'{"status":"error","errorType":"bad_data","error":"1:5: parse error"}'), "query"),
        ((200, b'{"status":"success","data":{"resultType":"matrix","result":[]}}'), "result-type"),
        (
            (
                200,
                b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{"job":"x"},"value":[1,"2"]}]}}',
            ),
            "missing-cluster-label",
        ),
    ],
)
async def test_a_failed_evaluation_publishes_no_score_and_is_counted_and_shown(
    broker: str, topics: Topics, answer: tuple[int, bytes], reason: str
) -> None:
    async with (
        QueryServer() as prom,
        Outputs(broker, topics) as out,
        running(settings_for(broker, topics.prefix)) as worker,
    ):
        prom.values = {"c1": 10}
        await out.publish_source(source_doc(url=prom.url, interval="1s"))
        await out.wait_for(lambda: len(out.scores) == 1, "a score")
        prom.answer = answer
        await out.wait_for(lambda: not out.statuses(KEY)[-1]["healthy"], "a failed evaluation")
        await out.wait_for(
            lambda: len(out.statuses(KEY)) >= 3 and not out.statuses(KEY)[-2]["healthy"], "two failures"
        )
        failed = out.statuses(KEY)[-1]
        assert failed["lastError"]["reason"] == reason
        assert failed["lastSuccessAt"] is not None and failed["clustersScored"] == 1
        assert len(out.scores) == 1
        assert metric(worker, "fleetplace_score_source_errors_total", source=KEY, reason=reason) >= 2
        # the worker keeps going: a good answer again scores again (a change: 10 → 30)
        prom.answer, prom.values = None, {"c1": 30}
        await out.wait_for(lambda: len(out.scores) == 2, "scores again")
        assert out.statuses(KEY)[-1]["healthy"] and out.statuses(KEY)[-1]["lastError"]["reason"] == reason


async def test_unreachable_prometheus_counts_and_the_worker_stays_ready(broker: str, topics: Topics) -> None:
    async with QueryServer() as prom:
        url = prom.url  # nothing listens there once the server is gone
    async with Outputs(broker, topics) as out, running(settings_for(broker, topics.prefix)) as worker:
        await out.publish_source(source_doc(url=url, interval="1s"))
        await out.wait_for(lambda: len(out.statuses(KEY)) >= 2, "two evaluations")
        assert out.statuses(KEY)[-1]["lastError"]["reason"] == "unreachable"
        assert metric(worker, "fleetplace_score_source_errors_total", source=KEY, reason="unreachable") >= 2
        assert out.scores == [] and worker.runtime.ready


async def test_a_bad_source_is_dead_lettered_and_a_deleted_one_stops_with_a_status_tombstone(
    broker: str, topics: Topics
) -> None:
    settings = settings_for(broker, topics.prefix)
    async with QueryServer() as prom, Outputs(broker, topics) as out, running(settings) as worker:
        prom.values = {"c1": 10}
        await out.publish_source(source_doc(url=prom.url, interval="1s"))
        await out.wait_for(lambda: len(out.statuses(KEY)) >= 1, "an evaluation")
        await out.publish_source(source_doc(url=prom.url, interval="1s", normalize={"min": 5, "max": 1}))
        await out.wait_for(lambda: len(out.deadletters) == 1, "a dead letter")
        assert "spec.normalize" in out.deadletters[0]["error"]
        # the previous version keeps running
        seen = len(out.statuses(KEY))
        await out.wait_for(lambda: len(out.statuses(KEY)) >= seen + 2, "evaluations after the bad version")

        await out.send("score-sources", KEY, None)
        await out.wait_for(lambda: (KEY, None) in out.status, "the status tombstone")
        assert KEY not in worker.state.sources
        # another source is evaluated twice over; the deleted one is not evaluated again
        await out.publish_source(source_doc("other", url=prom.url, interval="1s"))
        await out.wait_for(lambda: len(out.statuses("scores/other")) >= 2, "the other source's evaluations")
        after = out.status[out.status.index((KEY, None)) + 1 :]
        assert all(k != KEY for k, _ in after)


async def test_instances_share_the_sources_by_key_and_take_over_when_one_stops(
    broker: str, topics: Topics
) -> None:
    partitions = spec("score-sources").partitions
    names: dict[int, str] = {}
    for i in range(200):  # one source per partition of score-sources
        names.setdefault(partition_for_key(f"scores/s{i}", partitions), f"s{i}")
    keys = {f"scores/{n}" for n in names.values()}
    assert len(keys) == partitions
    settings = settings_for(broker, topics.prefix)
    async with QueryServer() as prom, Outputs(broker, topics) as out:
        prom.values = {"c1": 10}
        async with running(settings, "scores-a") as a:
            for name in names.values():
                await out.publish_source(source_doc(name, url=prom.url, interval="1s", resource=name))
            async with running(settings, "scores-b") as b:
                await out.wait_for(
                    lambda: (
                        set(a.state.sources) | set(b.state.sources) == keys
                        and bool(a.state.sources)
                        and bool(b.state.sources)
                    ),
                    "the sources split across both instances",
                )
                assert not set(a.state.sources) & set(b.state.sources)
                owned_by_b = set(b.state.sources)
                seen = len(out.status)
                await out.wait_for(
                    lambda: (
                        {k for k, v in out.status[seen:] if v and v["instance"] == "scores-b"} == owned_by_b
                    ),
                    "every source of b evaluated by b",
                )
            # b has left the group: a takes its sources over and evaluates them
            await out.wait_for(lambda: set(a.state.sources) == keys, "a owns every source", timeout=40)
            seen = len(out.status)
            await out.wait_for(
                lambda: {k for k, v in out.status[seen:] if v and v["instance"] == "scores-a"} >= owned_by_b,
                "b's sources evaluated by a",
            )
        # one score per source and cluster, whoever evaluated it
        assert sorted(k for k, _ in out.scores) == sorted(f"c1/{n}" for n in names.values())


async def test_records_that_are_not_sources_are_dead_lettered_and_the_good_one_between_them_runs(
    broker: str, broker_kind: BrokerKind, topics: Topics
) -> None:
    async with (
        QueryServer() as prom,
        Outputs(broker, topics) as out,
        running(settings_for(broker, topics.prefix)) as worker,
    ):
        prom.values = {"c1": 10}
        hostile: list[tuple[str | None, bytes]] = [
            ("scores/a", b"not json"),
            ("scores/b", b"[1, 2, 3]"),
            ("scores/c", b"{" * 200 + b"}" * 200),
            (None, orjson.dumps(source_doc("d", url=prom.url))),
            ("scores/other-name", orjson.dumps(source_doc("e", url=prom.url))),
            ("scores/f", orjson.dumps({**source_doc("f", url=prom.url), "kind": "Placement"})),
        ]
        if broker_kind == "apache":
            # Apache Kafka refuses a record without a key on a compacted topic (the embedded broker
            # takes it): it never reaches the worker
            with pytest.raises(KafkaError):
                await out.send_raw("score-sources", None, hostile[3][1])
            hostile = [(key, value) for key, value in hostile if key is not None]
        for key, value in hostile[:3]:
            await out.send_raw("score-sources", key, value)
        await out.publish_source(source_doc(url=prom.url, interval="1s"))
        for key, value in hostile[3:]:
            await out.send_raw("score-sources", key, value)
        await out.wait_for(lambda: len(out.deadletters) == len(hostile), "a dead letter per bad record")
        await out.wait_for(lambda: len(out.scores) == 1, "the good source's score")
        errors = " | ".join(d["error"] for d in out.deadletters)
        assert "key 'scores/other-name' is not the source's <namespace>/<name> 'scores/e'" in errors
        assert set(worker.state.sources) == {KEY} and worker.runtime.ready
        assert metric(worker, "fleetplace_deadletters_total", topic="score-sources") == len(hostile)


async def test_a_bad_source_is_dead_lettered_once_not_again_by_the_next_instance_or_a_restart(
    broker: str, topics: Topics
) -> None:
    # every instance reads its partitions of score-sources from the beginning; what the group read
    # before is not dead-lettered again, however many times it is read
    settings = settings_for(broker, topics.prefix)
    async with QueryServer() as prom, Outputs(broker, topics) as out:
        prom.values = {"c1": 10}
        async with running(settings) as first:
            await out.send_raw("score-sources", "scores/a", b"not json")
            await out.publish_source(source_doc(url=prom.url, interval="1s"))
            await out.wait_for(lambda: len(out.deadletters) == 1, "the dead letter")
            await out.wait_for(lambda: len(out.statuses(KEY)) >= 1, "the good source evaluated")
            # a second instance joins: the partitions are split, each read again from the beginning
            async with running(settings, instance="scores-2") as second:
                await out.wait_for(
                    lambda: bool(first._assigned) and bool(second._assigned),
                    "the partitions shared by both instances",
                    timeout=90,
                )
                await out.send_raw("score-sources", "scores/b", b"[1]")
                await out.wait_for(lambda: len(out.deadletters) == 2, "the new bad record's dead letter")
            # the second leaves: the first takes every partition back and reads it all again
            await out.wait_for(
                lambda: len(first._assigned) == 6 and set(first.state.sources) == {KEY},
                "every partition back with the first instance",
                timeout=90,
            )
        async with running(settings) as restarted:
            # the embedded broker holds a group's join for half a session after a member left
            await out.wait_for(
                lambda: set(restarted.state.sources) == {KEY}, "the source read again", timeout=90
            )
            await out.send_raw("score-sources", "scores/c", b"{")
            await out.wait_for(lambda: len(out.deadletters) == 3, "the third bad record's dead letter")
            assert metric(restarted, "fleetplace_deadletters_total", topic="score-sources") == 1
        counted = [metric(w, "fleetplace_deadletters_total", topic="score-sources") for w in (first, second)]
        assert sum(counted) == 2  # scores/a by the first; scores/b by whichever owned its partition
        assert [d["key"] for d in out.deadletters] == ["scores/a", "scores/b", "scores/c"]
