"""A busy run of the real worker on the embedded broker, then the auditor and its commands on it.

The run (topic clock): cluster churn, a taint whose toleration expires, AddOn scores changing
and expiring, placements edited, deleted and re-created, resyncs. Copies of the run under a
second prefix, with one decision or one input record altered, must fail the audit on exactly
the decision concerned.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from typer.testing import CliRunner

from fleetplace.services.auditor import audit, read_history
from fleetplace.services.auditor.whatif import what_if_placement
from fleetplace.shared.api.decisions import DecisionDiff
from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.api.ocm import Placement
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import CATALOGUE, Topics, ensure_topics
from fleetplace.shared.settings import KafkaSettings
from fleetplace.shared.testing import unique_topic_prefix
from tests.auditor.copying import copy_topics
from tests.auditor.offline import ADDON, GOLD, UNREACHABLE, base_fleet, cluster, placement, score
from tests.piped import assert_lines_fit_content
from tests.scheduler.harness import Bus, running, settings_for

pytestmark = pytest.mark.integration

TOLERATION = [{"key": UNREACHABLE, "operator": "Exists", "tolerationSeconds": 30}]
RELABEL_C2 = cluster("c2", {"tier": "gold"}, cpu=30)


def _cli() -> Any:
    from fleetplace.services.cli import app

    return app


@dataclass(frozen=True)
class Run:
    prefix: str
    decisions: list[dict[str, Any]]


async def _record_busy_run(broker: str, prefix: str) -> list[dict[str, Any]]:
    topics = Topics(prefix)
    await ensure_topics(broker, topics)
    settings = settings_for(broker, prefix, clock="topic", addon_resync_interval_s=300)
    # at least once, also on Apache Kafka: copies of the run (tests/auditor/copying.py) keep its
    # offsets, which a transaction's commit markers, not copied, would shift
    settings = settings.model_copy(
        update={"kafka": KafkaSettings(bootstrap_servers=broker, transactions="false")}
    )
    async with Bus(broker, topics) as bus:

        def seq(key: str) -> int:
            return int(bus.latest().get(key, {}).get("seq", 0))

        async def until(check: Callable[[], bool], what: str) -> None:
            await bus.wait_for(check, timeout=20, what=what)

        await bus.set_clock("2026-01-01T00:00:00Z")
        async with running(settings) as worker:

            def consumed(topic: str) -> float:
                return float(worker.metrics.consumed.labels(topic)._value.get())

            await bus.publish(
                *base_fleet("ns1", "ns2"),
                *[cluster(f"c{i}", {"tier": "gold" if i % 2 else "silver"}, cpu=4 + i) for i in range(8)],
                placement("ns1", "gold", predicates=GOLD),
                placement(
                    "ns1",
                    "top3",
                    numberOfClusters=3,
                    prioritizerPolicy={"mode": "Additive", "configurations": ADDON},
                ),
                placement("ns2", "two", numberOfClusters=2),
                placement("ns1", "tol", tolerations=TOLERATION),
            )
            await until(lambda: len(bus.latest()) == 4, "four placements decided")
            # scores arrive; c7's expires at 00:02:00
            await bus.set_clock("2026-01-01T00:00:01Z")
            await bus.publish(
                *[score(f"c{i}", 10 * i, "2026-01-01T00:02:00Z" if i == 7 else None) for i in range(8)]
            )
            await until(lambda: seq("ns1/top3") >= 2, "top3 follows the scores")
            # a taint on c3, tolerated by `tol` for 30 s
            await bus.send(
                "taints",
                "c3",
                orjson.dumps(
                    {
                        "taints": [
                            {"key": UNREACHABLE, "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:01Z"}
                        ]
                    }
                ),
            )
            await until(lambda: seq("ns1/gold") >= 2, "gold drops the tainted c3")
            # churn: c2 joins gold, c5 goes away, c1's score jumps
            await bus.set_clock("2026-01-01T00:00:03Z")
            await bus.publish(RELABEL_C2, score("c1", 95))
            await until(lambda: "c2" in bus.latest()["ns1/gold"]["decisions"], "gold adds c2")
            # c2 again, unchanged: no decision changes, but it restores c2 in the altered copy
            await bus.publish(RELABEL_C2)
            await until(lambda: consumed("clusters") >= 10, "the worker read c2 again")
            await bus.delete("ManagedCluster", "c5")
            await until(lambda: "c5" not in bus.latest()["ns1/gold"]["decisions"], "gold drops c5")
            # the toleration expires
            tol_before = seq("ns1/tol")
            await bus.set_clock("2026-01-01T00:00:43Z")
            await until(lambda: seq("ns1/tol") > tol_before, "tol drops c3 when its toleration expires")
            # an edit, a new cluster
            await bus.publish(placement("ns2", "two", generation=2, numberOfClusters=4))
            await until(lambda: bus.latest()["ns2/two"]["generation"] == 2, "two follows its edit")
            await bus.publish(cluster("c8", {"tier": "gold"}, cpu=64))
            await until(lambda: "c8" in bus.latest()["ns1/gold"]["decisions"], "gold adds c8")
            # delete and re-create a placement; the taint goes away; c7's score expires
            await bus.delete("Placement", "ns1/gold")
            await until(lambda: bus.latest()["ns1/gold"].get("deleted", False), "gold deleted")
            await bus.set_clock("2026-01-01T00:02:10Z")
            await bus.send("taints", "c3", None)
            await until(lambda: "c3" in bus.latest()["ns1/tol"]["decisions"], "tol takes c3 back")
            await bus.publish(placement("ns1", "gold", generation=1, predicates=GOLD))
            await until(lambda: not bus.latest()["ns1/gold"].get("deleted", False), "gold re-created")
            # AddOn and full resyncs: top3 decides anew at its resync, the run's last decision.
            # Waited for, not slept on: the tests count the decisions gathered here against those
            # on the topic, and a fixed second is a guess a loaded machine can exceed.
            await bus.set_clock("2026-01-01T00:14:00Z")
            await until(lambda: bus.latest()["ns1/top3"]["trigger"]["kind"] == "resync", "top3's resync")
            await asyncio.sleep(1.0)
        return list(bus.decisions)


@pytest.fixture(scope="module")
def run(broker: str) -> Run:
    prefix = unique_topic_prefix("audit")
    decisions = asyncio.run(_record_busy_run(broker, prefix))
    return Run(prefix, decisions)


def _audit_json(broker: str, prefix: str, *extra: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(
        _cli(), ["audit", "--json", "--bootstrap", broker, "--prefix", prefix, *extra]
    )
    start = result.stdout.index("{")
    return result.exit_code, orjson.loads(result.stdout[start:])


def test_every_decision_of_a_busy_run_reproduces(broker: str, run: Run) -> None:
    kinds = {d["trigger"]["kind"] for d in run.decisions}
    assert {"placement", "score", "taint", "cluster", "toleration-expired"} <= kinds
    assert any(d.get("deleted") for d in run.decisions)
    assert any(d["generation"] == 2 for d in run.decisions)
    for d in run.decisions:
        DecisionDiff.from_value(d)  # the worker's output follows the published contract

    code, report = _audit_json(broker, run.prefix)
    assert code == 0, report
    assert report["checked"] == report["reproduced"] == len(run.decisions)
    assert report["mismatches"] == [] and report["seqProblems"] == [] and report["invalidRecords"] == []
    assert set(report["perPlacement"]) == {"ns1/gold", "ns1/top3", "ns2/two", "ns1/tol"}

    result = CliRunner().invoke(_cli(), ["audit", "--bootstrap", broker, "--prefix", run.prefix])
    assert result.exit_code == 0
    assert "every decision reproduces" in result.stdout
    assert_lines_fit_content(result.stdout)


def test_a_forged_decision_record_is_the_only_mismatch(broker: str, run: Run) -> None:
    last = max(run.decisions, key=lambda d: (d["evaluatedAt"], d["seq"]))
    forged_key = (last["placement"], last["seq"])

    def forge(r: Record) -> bytes | None:
        if r.topic.endswith(".decisions") and r.value is not None:
            value = orjson.loads(r.value)
            if (value["placement"], value["seq"]) == forged_key:
                value["decisions"] = [*value["decisions"], "c-forged"]
                return orjson.dumps(value)
        return r.value

    target = unique_topic_prefix("forged")
    asyncio.run(copy_topics(broker, run.prefix, target, forge))
    code, report = _audit_json(broker, target)
    assert code == 1
    assert [(m["placement"], m["seq"]) for m in report["mismatches"]] == [forged_key]
    mismatch = report["mismatches"][0]
    assert mismatch["fields"] == ["decisions"]
    assert [c["cluster"] for c in mismatch["clusters"]] == ["c-forged"]
    assert report["reproduced"] == len(run.decisions) - 1


def test_an_altered_input_record_fails_exactly_the_decision_it_fed(broker: str, run: Run) -> None:
    """c2's move to gold is rewritten as silver: only the gold decision that added c2 fails."""
    relabel = orjson.dumps(RELABEL_C2)
    seen = 0

    def alter(r: Record) -> bytes | None:
        nonlocal seen
        if r.topic.endswith(".clusters") and r.value is not None and orjson.loads(r.value) == RELABEL_C2:
            seen += 1
            if seen == 1:  # the first of the two identical records
                silver = cluster("c2", {"tier": "silver"}, cpu=30)
                return orjson.dumps(silver)
        return r.value

    assert relabel  # the value published twice in the run
    target = unique_topic_prefix("altered")
    asyncio.run(copy_topics(broker, run.prefix, target, alter))
    assert seen == 2
    history = asyncio.run(read_history(broker, Topics(target)))
    report = audit(history)
    added_c2 = next(d for d in run.decisions if d["placement"] == "ns1/gold" and "c2" in d["added"])
    assert [(m.placement, m.seq) for m in report.mismatches] == [("ns1/gold", added_c2["seq"])]
    mismatch = report.mismatches[0]
    assert mismatch.clusters[0]["cluster"] == "c2"
    assert mismatch.clusters[0]["recomputed"]["verdict"].startswith("filtered by Predicate")
    assert any(i["topic"] == "clusters" and i["key"] == "c2" for i in mismatch.inputs)


def test_explain_gives_the_decision_in_force_its_record_and_the_explanation(broker: str, run: Run) -> None:
    at = "2026-01-01T00:00:50Z"  # after the toleration expired, before the taint went away
    expiry = max(
        (d for d in run.decisions if d["placement"] == "ns1/tol" and d["evaluatedAt"] <= at),
        key=lambda d: d["seq"],
    )
    result = CliRunner().invoke(
        _cli(), ["explain", "ns1/tol", "--at", at, "--json", "--bootstrap", broker, "--prefix", run.prefix]
    )
    assert result.exit_code == 0, result.output
    out = orjson.loads(result.stdout)
    assert out["record"]["seq"] == expiry["seq"]
    assert out["record"]["trigger"] == expiry["trigger"]
    assert out["record"]["evaluatedAt"] == expiry["evaluatedAt"] == "2026-01-01T00:00:43Z"
    assert out["reproduced"] is True
    assert out["decisions"] == expiry["decisions"]
    c3 = out["explanation"]["explain"]["c3"]
    assert c3["filteredBy"] == "TaintToleration"
    assert out["explanation"]["explain"]["c0"]["selected"] is True
    text = CliRunner().invoke(
        _cli(), ["explain", "ns1/tol", "--at", at, "--bootstrap", broker, "--prefix", run.prefix]
    )
    assert text.exit_code == 0 and "TaintToleration" in text.stdout and "reproduces" in text.stdout
    assert_lines_fit_content(text.stdout)

    missing = CliRunner().invoke(
        _cli(),
        ["explain", "ns1/tol", "--at", "2025-01-01T00:00:00Z", "--bootstrap", broker, "--prefix", run.prefix],
    )
    assert missing.exit_code == 1


def test_export_gives_ocm_placementdecisions_for_argo_cd(broker: str, run: Run) -> None:
    latest: dict[str, dict[str, Any]] = {}
    for d in run.decisions:
        if d["placement"] not in latest or d["seq"] > latest[d["placement"]]["seq"]:
            latest[d["placement"]] = d
    result = CliRunner().invoke(
        _cli(), ["export", "placementdecisions", "--bootstrap", broker, "--prefix", run.prefix]
    )
    assert result.exit_code == 0, result.output
    objects = list(yaml.safe_load_all(result.stdout))
    by_placement: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for obj in objects:
        assert obj["kind"] == "PlacementDecision"
        labels = obj["metadata"]["labels"]
        by_placement.setdefault((obj["metadata"]["namespace"], labels[f"{GROUP}/placement"]), []).append(obj)
        assert labels[f"{GROUP}/decision-group-index"] == "0"
        assert all(
            isinstance(e["clusterName"], str) and e["reason"] == "" for e in obj["status"]["decisions"]
        )
    for key, d in latest.items():
        ns, name = key.split("/")
        pages = by_placement[(ns, name)]
        assert [p["metadata"]["name"] for p in pages] == [f"{name}-decision-1"]
        assert [e["clusterName"] for e in pages[0]["status"]["decisions"]] == d["decisions"]

    only = CliRunner().invoke(
        _cli(),
        [
            "export",
            "placementdecisions",
            "--placement",
            "ns1/tol",
            "-o",
            "json",
            "--bootstrap",
            broker,
            "--prefix",
            run.prefix,
        ],
    )
    items = orjson.loads(only.stdout)["items"]
    assert {i["metadata"]["name"] for i in items} == {"tol-decision-1"}


def test_what_if_a_longer_toleration_keeps_the_tainted_cluster_until_it_recovers(
    broker: str, run: Run, tmp_path: Path
) -> None:
    history = asyncio.run(read_history(broker, Topics(run.prefix)))
    longer = placement("ns1", "tol", tolerations=[{**TOLERATION[0], "tolerationSeconds": 3600}])
    modified = parse_object(longer)
    assert isinstance(modified, Placement)
    result = what_if_placement(history, modified)
    differed = result.differed
    assert differed, result.to_json()
    assert all(
        c.what_if is not None and "c3" in c.what_if and "c3" not in (c.recorded or ()) for c in differed
    )
    expiry = next(d for d in run.decisions if d["trigger"]["kind"] == "toleration-expired")
    assert differed[0].at == expiry["evaluatedAt"]
    assert result.changes[-1].same  # c3 back once the taint is removed

    path = tmp_path / "tol.yaml"
    path.write_text(yaml.safe_dump(longer))
    cli = CliRunner().invoke(
        _cli(),
        ["what-if", "--placement-file", str(path), "--json", "--bootstrap", broker, "--prefix", run.prefix],
    )
    assert cli.exit_code == 0, cli.output
    assert orjson.loads(cli.stdout)[0]["differed"] == len(differed)
    table = CliRunner().invoke(
        _cli(), ["what-if", "--placement-file", str(path), "--bootstrap", broker, "--prefix", run.prefix]
    )
    assert table.exit_code == 0 and "ns1/tol" in table.stdout, table.output
    assert_lines_fit_content(table.stdout)
    engine = CliRunner().invoke(
        _cli(), ["what-if", "--engine-only", "--json", "--bootstrap", broker, "--prefix", run.prefix]
    )
    assert engine.exit_code == 0
    # the engine that made the run recomputes every placement of it, and none differs (an empty
    # list would pass the second check alone)
    listed = orjson.loads(engine.stdout)
    assert {p["placement"] for p in listed} == {"ns1/gold", "ns1/top3", "ns2/two", "ns1/tol"}
    assert all(p["differed"] == 0 and p["evaluations"] > 0 for p in listed)


GROUP = "cluster.open-cluster-management.io"
assert {s.name for s in CATALOGUE} >= {"decisions", "placement-decisions"}
