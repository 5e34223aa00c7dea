"""explain, what-if and export on offline histories."""

from __future__ import annotations

from datetime import timedelta

import pytest

from fleetplace.services.auditor.explain import NoDecision, explain_decision
from fleetplace.services.auditor.export import fold_decisions, fold_placement_decisions, kubernetes_objects
from fleetplace.services.auditor.history import History
from fleetplace.services.auditor.whatif import what_if_placement
from fleetplace.services.scheduler.core import SchedulerProcessor
from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.api.ocm import Placement
from fleetplace.shared.bus.codec import encode_json
from fleetplace.shared.bus.envelope import parse_time
from fleetplace.shared.bus.records import Record
from tests.auditor.offline import T0, UNREACHABLE, OfflineWorker, base_fleet, busy_run, cluster, placement

PREFIX = "p."


def _placement(obj: dict[str, object]) -> Placement:
    parsed = parse_object(obj)
    assert isinstance(parsed, Placement)
    return parsed


def test_explain_finds_the_decision_in_force_and_explains_every_cluster() -> None:
    worker = busy_run(OfflineWorker(PREFIX))
    history = History.of(worker.records(), prefix=PREFIX)
    expiry = next(d for d in worker.diffs if d["trigger"]["kind"] == "toleration-expired")
    explained = explain_decision(history, "ns1/tol", T0 + timedelta(seconds=43, milliseconds=500))
    out = explained.to_json()
    assert out["record"]["seq"] == expiry["seq"] and out["reproduced"] is True
    assert out["decisions"] == expiry["decisions"]
    assert out["explanation"]["explain"]["c3"]["filteredBy"] == "TaintToleration"
    assert out["explanation"]["decisions"] == expiry["decisions"]
    latest = explain_decision(history, "ns1/tol")
    assert latest.record.seq == max(d["seq"] for d in worker.diffs if d["placement"] == "ns1/tol")
    with pytest.raises(NoDecision):
        explain_decision(history, "ns1/tol", T0 - timedelta(seconds=1))
    with pytest.raises(NoDecision):
        explain_decision(history, "ns9/none")


def test_explain_of_a_deleted_placement_has_no_explanation_but_reproduces() -> None:
    worker = busy_run(OfflineWorker(PREFIX))
    history = History.of(worker.records(), prefix=PREFIX)
    deleted = next(d for d in worker.diffs if d.get("deleted"))
    at = parse_time(deleted["evaluatedAt"])
    explained = explain_decision(history, deleted["placement"], at)
    assert explained.record.seq == deleted["seq"]
    assert explained.record.deleted and explained.reproduced and explained.result is None


def test_what_if_follows_the_hypothetical_decision_and_reports_when_it_differs() -> None:
    worker = busy_run(OfflineWorker(PREFIX))
    history = History.of(worker.records(), prefix=PREFIX)
    same = what_if_placement(
        history,
        _placement(
            placement(
                "ns1",
                "tol",
                tolerations=[{"key": UNREACHABLE, "operator": "Exists", "tolerationSeconds": 30}],
            )
        ),
    )
    assert same.differed == [] and same.evaluations > 0
    longer = what_if_placement(
        history,
        _placement(
            placement(
                "ns1",
                "tol",
                tolerations=[{"key": UNREACHABLE, "operator": "Exists", "tolerationSeconds": 3600}],
            )
        ),
    )
    expiry = next(d for d in worker.diffs if d["trigger"]["kind"] == "toleration-expired")
    assert longer.differed[0].at == expiry["evaluatedAt"]
    assert all("c3" in (c.what_if or ()) and "c3" not in (c.recorded or ()) for c in longer.differed)
    assert longer.changes[-1].same


def test_what_if_a_new_placement_is_evaluated_from_the_first_batch() -> None:
    worker = busy_run(OfflineWorker(PREFIX))
    history = History.of(worker.records(), prefix=PREFIX)
    result = what_if_placement(history, _placement(placement("ns1", "new", numberOfClusters=1)))
    assert result.changes[0].at == "2026-01-01T00:00:00Z"
    assert result.changes[0].recorded is None and result.changes[0].what_if is not None
    assert len(result.changes[0].what_if) == 1


def test_export_pages_of_100_with_ocm_names_and_labels_from_either_topic() -> None:
    w = OfflineWorker(PREFIX)
    w.publish(*base_fleet("ns1"), *[cluster(f"c{i:03d}") for i in range(230)])
    w.publish(
        placement("ns1", "big"),
        placement(
            "ns1",
            "grouped",
            decisionStrategy={
                "groupStrategy": {
                    "decisionGroups": [
                        {
                            "groupName": "canary",
                            "groupClusterSelector": {"labelSelector": {"matchLabels": {"canary": "true"}}},
                        }
                    ]
                }
            },
        ),
    )
    w.publish(*[cluster(f"c{i:03d}", {"canary": "true"}) for i in range(3)])
    w.step(T0)
    w.drain(T0)
    decisions = [r for r in w.records() if r.topic == PREFIX + "decisions"]
    from_log = fold_decisions(decisions)
    # the worker writes the same projection to placement-decisions
    processor = SchedulerProcessor()
    for d in w.diffs:
        processor.apply("decisions", d["placement"], d)
    pds = [
        Record(PREFIX + "placement-decisions", 0, i, key, encode_json(processor.placement_decisions(key)))
        for i, key in enumerate(sorted(processor.published))
    ]
    from_state = fold_placement_decisions(pds)
    assert from_log == from_state
    objects = kubernetes_objects(from_log)
    big = [
        o for o in objects if o["metadata"]["labels"]["cluster.open-cluster-management.io/placement"] == "big"
    ]
    assert [o["metadata"]["name"] for o in big] == ["big-decision-1", "big-decision-2", "big-decision-3"]
    assert [len(o["status"]["decisions"]) for o in big] == [100, 100, 30]
    assert big[0]["status"]["decisions"][0] == {"clusterName": "c000", "reason": ""}
    grouped = [
        o
        for o in objects
        if o["metadata"]["labels"]["cluster.open-cluster-management.io/placement"] == "grouped"
    ]
    labels = [
        (
            o["metadata"]["labels"]["cluster.open-cluster-management.io/decision-group-name"],
            o["metadata"]["labels"]["cluster.open-cluster-management.io/decision-group-index"],
        )
        for o in grouped
    ]
    assert labels[0] == ("canary", "0") and all(isinstance(i, str) for _, i in labels)
    # a tombstone on placement-decisions removes the placement
    gone = fold_placement_decisions([*pds, Record(PREFIX + "placement-decisions", 0, 99, "ns1/big", None)])
    assert "ns1/big" not in gone and "ns1/grouped" in gone
