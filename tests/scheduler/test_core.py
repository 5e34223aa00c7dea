"""The scheduler processor without a bus: fan-out, diffs, seq, timers, checkpoints."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetplace.services.scheduler.core import InvalidRecord, SchedulerOptions, SchedulerProcessor
from fleetplace.shared.api.admission import admit
from fleetplace.shared.api.objects import parse_object

G = "cluster.open-cluster-management.io"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def cluster(
    name: str, labels: dict[str, str] | None = None, taints: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": name, "labels": {f"{G}/clusterset": "prod", **(labels or {})}},
        "spec": {"taints": taints or []},
    }


def placement(ns: str, name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/v1beta1",
        "kind": "Placement",
        "metadata": {"namespace": ns, "name": name},
        "spec": spec,
    }


def fleet(p: SchedulerProcessor, n: int = 3) -> None:
    p.apply(
        "clustersets",
        "prod",
        {"apiVersion": f"{G}/v1beta2", "kind": "ManagedClusterSet", "metadata": {"name": "prod"}},
    )
    for ns in ("ns1", "ns2"):
        p.apply(
            "clustersetbindings",
            f"{ns}/prod",
            {
                "apiVersion": f"{G}/v1beta2",
                "kind": "ManagedClusterSetBinding",
                "metadata": {"namespace": ns, "name": "prod"},
                "spec": {"clusterSet": "prod"},
            },
        )
    for i in range(1, n + 1):
        p.apply("clusters", f"c{i}", cluster(f"c{i}", {"tier": "gold" if i % 2 else "silver"}))


def test_first_evaluation_publishes_full_decision_with_seq_1() -> None:
    p = SchedulerProcessor()
    fleet(p)
    p.apply("placements", "ns1/a", placement("ns1", "a", numberOfClusters=2))
    diffs = p.evaluate(T0, {"placements/0": 1})
    assert len(diffs) == 1
    d = diffs[0]
    assert d["placement"] == "ns1/a" and d["seq"] == 1
    assert d["decisions"] == ["c1", "c2"] and d["added"] == ["c1", "c2"] and d["removed"] == []
    assert d["groups"] == [{"groupName": "", "groupIndex": 0, "clusters": ["c1", "c2"]}]
    assert d["status"]["numberOfSelectedClusters"] == 2
    assert d["inputs"] == {"placements/0": 1}
    assert set(d["scores"]) == {"c1", "c2"}


def test_reevaluation_without_change_publishes_nothing() -> None:
    p = SchedulerProcessor()
    fleet(p)
    p.apply("placements", "ns1/a", placement("ns1", "a"))
    assert p.evaluate(T0)
    p.mark_all("resync")
    assert p.evaluate(T0) == []


def test_a_placement_given_up_after_it_was_marked_is_not_evaluated() -> None:
    # a rebalance can take a placement away between its mark and its evaluation: the new owner
    # publishes its next seq, so a diff from here would be a second, conflicting one
    owned = {"ns1/a", "ns1/b"}
    p = SchedulerProcessor(owns=lambda key: key in owned)
    fleet(p)
    p.apply("placements", "ns1/a", placement("ns1", "a"))
    p.apply("placements", "ns1/b", placement("ns1", "b"))
    assert set(p.dirty) == owned
    owned.discard("ns1/b")
    assert [d["placement"] for d in p.evaluate(T0)] == ["ns1/a"]
    assert not p.dirty and "ns1/b" not in p.published
    owned.add("ns1/b")  # given back: evaluated once marked again
    p.mark_all("startup")
    assert [d["placement"] for d in p.evaluate(T0)] == ["ns1/b"]


def test_label_change_gives_exactly_the_expected_diff_and_next_seq() -> None:
    p = SchedulerProcessor()
    fleet(p)
    pred = [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"tier": "gold"}}}}]
    p.apply("placements", "ns1/gold", placement("ns1", "gold", predicates=pred))
    assert p.evaluate(T0)[0]["decisions"] == ["c1", "c3"]
    p.apply("clusters", "c2", cluster("c2", {"tier": "gold"}))
    p.apply("clusters", "c3", cluster("c3", {"tier": "silver"}))
    (d,) = p.evaluate(T0)
    assert (d["seq"], d["added"], d["removed"], d["decisions"]) == (2, ["c2"], ["c3"], ["c1", "c2"])
    assert d["trigger"]["kind"] == "cluster"


def test_cluster_change_enqueues_only_placements_bound_to_its_sets() -> None:
    p = SchedulerProcessor()
    fleet(p)
    p.apply(
        "clustersets",
        "other",
        {"apiVersion": f"{G}/v1beta2", "kind": "ManagedClusterSet", "metadata": {"name": "other"}},
    )
    p.apply(
        "clustersetbindings",
        "ns3/other",
        {
            "apiVersion": f"{G}/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"namespace": "ns3", "name": "other"},
            "spec": {"clusterSet": "other"},
        },
    )
    p.apply("placements", "ns1/a", placement("ns1", "a"))
    p.apply("placements", "ns3/b", placement("ns3", "b"))
    p.evaluate(T0)
    p.apply("clusters", "c9", cluster("c9"))
    assert set(p.dirty) == {"ns1/a"}


def test_toleration_expiry_requeues_and_moves_the_workload() -> None:
    p = SchedulerProcessor()
    fleet(p, 2)
    taint = [{"key": "unreachable", "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:00Z"}]
    p.apply("clusters", "c1", cluster("c1", taints=taint))
    tol = [{"key": "unreachable", "operator": "Exists", "tolerationSeconds": 5}]
    p.apply("placements", "ns1/a", placement("ns1", "a", tolerations=tol))
    assert p.evaluate(T0)[0]["decisions"] == ["c1", "c2"]
    # armed right after the decision that selected c1, as OCM's follow-up reconcile does
    assert p.next_timer() == (T0 + timedelta(seconds=5)).timestamp()
    assert p.evaluate(T0 + timedelta(seconds=4)) == []
    (d,) = p.evaluate(T0 + timedelta(seconds=5))
    assert d["removed"] == ["c1"] and d["trigger"]["kind"] == "toleration-expired"


def test_addon_placements_resync_every_five_minutes() -> None:
    p = SchedulerProcessor(SchedulerOptions(addon_resync_s=300))
    fleet(p)
    cfg = [
        {
            "scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "demo", "scoreName": "s"}},
            "weight": 1,
        }
    ]
    p.apply("placements", "ns1/a", placement("ns1", "a", prioritizerPolicy={"configurations": cfg}))
    p.apply("placements", "ns1/plain", placement("ns1", "plain"))
    p.evaluate(T0)
    p.tick(T0 + timedelta(seconds=299))
    assert not p.dirty
    p.tick(T0 + timedelta(seconds=300))
    assert set(p.dirty) == {"ns1/a"} and p.dirty["ns1/a"].kind == "resync"


def test_deleted_placement_publishes_a_removal_once() -> None:
    p = SchedulerProcessor()
    fleet(p)
    p.apply("placements", "ns1/a", placement("ns1", "a"))
    p.evaluate(T0)
    p.apply("placements", "ns1/a", None)
    (d,) = p.evaluate(T0)
    assert (
        d["deleted"] is True and d["decisions"] == [] and d["removed"] == ["c1", "c2", "c3"] and d["seq"] == 2
    )
    p.mark_all()
    assert p.evaluate(T0) == []


def test_restart_from_checkpoint_publishes_nothing_when_nothing_changed() -> None:
    first = SchedulerProcessor()
    fleet(first)
    first.apply("placements", "ns1/a", placement("ns1", "a", numberOfClusters=1))
    diffs = first.evaluate(T0)
    second = SchedulerProcessor()
    fleet(second)
    second.apply("placements", "ns1/a", placement("ns1", "a", numberOfClusters=1))
    for d in diffs:
        second.apply("decisions", d["placement"], d)
    second.mark_all()
    assert second.evaluate(T0) == []


def test_bad_records_raise_invalid_record_with_a_reason() -> None:
    p = SchedulerProcessor()
    with pytest.raises(InvalidRecord, match="expected kind ManagedCluster"):
        p.apply("clusters", "c1", {"kind": "Placement"})
    with pytest.raises(InvalidRecord, match="does not match"):
        p.apply("clusters", "c1", cluster("c2"))
    with pytest.raises(InvalidRecord, match="numberOfClusters"):
        p.apply("placements", "ns1/a", placement("ns1", "a", numberOfClusters="many"))


def test_taints_topic_overrides_spec_taints_on_same_key_and_effect() -> None:
    p = SchedulerProcessor()
    fleet(p, 2)
    p.apply("placements", "ns1/a", placement("ns1", "a"))
    assert p.evaluate(T0)[0]["decisions"] == ["c1", "c2"]
    p.apply(
        "taints",
        "c2",
        {"taints": [{"key": "maintenance", "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:00Z"}]},
    )
    (d,) = p.evaluate(T0)
    assert d["removed"] == ["c2"] and d["trigger"] == {"kind": "taint", "key": "c2"}
    p.apply("taints", "c2", None)
    (d,) = p.evaluate(T0)
    assert d["added"] == ["c2"]


def test_a_cluster_record_keeps_the_taints_topic_whether_or_not_the_topic_has_any() -> None:
    p = SchedulerProcessor()
    own = {"key": "own", "effect": "NoSelect"}
    topic = {"key": "maintenance", "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:00Z"}
    p.apply("clusters", "c1", cluster("c1", {"tier": "gold"}, [own]))
    stored = p.fleet.clusters["c1"]
    assert stored.obj == parse_object(admit(cluster("c1", {"tier": "gold"}, [own])))
    assert [t.key for t in stored.taints] == ["own"]
    p.apply("taints", "c1", {"taints": [topic]})
    p.apply("clusters", "c1", cluster("c1", {"tier": "silver"}, [own]))  # a heartbeat after the taint
    stored = p.fleet.clusters["c1"]
    assert [t.key for t in stored.taints] == ["own", "maintenance"] and stored.labels["tier"] == "silver"
    p.apply("taints", "c1", None)
    p.apply("clusters", "c1", cluster("c1", {"tier": "gold"}, [own]))
    assert [t.key for t in p.fleet.clusters["c1"].taints] == ["own"]


def test_a_cluster_record_with_topic_taints_is_stored_as_its_merged_document_would_parse() -> None:
    p = SchedulerProcessor()
    topic = {"key": "maintenance", "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:00Z"}
    p.apply("taints", "c1", {"taints": [topic]})
    record = cluster(
        "c1",
        {"tier": "gold"},
        [{"key": "maintenance", "effect": "NoSelect"}, {"key": "own", "effect": "NoSelect"}],
    )
    record["spec"]["hubAcceptsClient"] = True
    record["status"] = {"allocatable": {"cpu": 4}, "capacity": {"cpu": "8"}}
    p.apply("clusters", "c1", record)
    # the topic's taint replaces the object's on the same key and effect, written as Taint dumps it
    merged = {
        **record,
        "spec": {
            "hubAcceptsClient": True,
            "taints": [{"key": "own", "effect": "NoSelect"}, {**topic, "value": ""}],
        },
    }
    stored = p.fleet.clusters["c1"]
    expected = parse_object(merged)
    assert stored.raw == merged and stored.obj == expected and stored.cpu == 4.0
    assert stored.obj.model_fields_set == expected.model_fields_set
    assert stored.obj.spec.model_fields_set == expected.spec.model_fields_set


def _scored(p: SchedulerProcessor, values: dict[str, int]) -> None:
    for c, v in values.items():
        p.apply(
            "scores",
            f"{c}/demo",
            {
                "apiVersion": "cluster.open-cluster-management.io/v1alpha1",
                "kind": "AddOnPlacementScore",
                "metadata": {"namespace": c, "name": "demo"},
                "status": {"scores": [{"name": "s", "value": v}]},
            },
        )


def test_sort_by_score_republishes_score_only_changes_at_most_once_per_rate_limit() -> None:
    p = SchedulerProcessor()
    fleet(p)
    cfg = [
        {
            "scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "demo", "scoreName": "s"}},
            "weight": 1,
        }
    ]
    spec = {
        "numberOfClusters": 2,
        "sortBy": "Score",
        "scoreRateLimit": "30s",
        "prioritizerPolicy": {"mode": "Exact", "configurations": cfg},
    }
    p.apply("placements", "ns1/a", placement("ns1", "a", **spec))
    _scored(p, {"c1": 10, "c2": 50, "c3": 90})
    (d,) = p.evaluate(T0)
    assert d["decisions"] == ["c3", "c2"] and d["sortBy"] == "Score"
    items = p.placement_decisions("ns1/a")["items"]  # type: ignore[index]
    assert items[0]["status"]["decisions"] == [
        {"clusterName": "c3", "reason": "", "score": 90},  # int64 in the CRD
        {"clusterName": "c2", "reason": "", "score": 50},
    ]
    _scored(p, {"c2": 95})  # same clusters, new order: a score-only change
    assert p.evaluate(T0 + timedelta(seconds=10)) == []  # within the 30 s limit
    assert p.next_timer() == (T0 + timedelta(seconds=30)).timestamp()
    (d,) = p.evaluate(T0 + timedelta(seconds=30))
    assert d["decisions"] == ["c2", "c3"] and d["added"] == [] and d["removed"] == []
    _scored(p, {"c1": 100})  # a membership change is published at once
    (d,) = p.evaluate(T0 + timedelta(seconds=31))
    assert d["added"] == ["c1"]


def test_without_sort_by_score_score_changes_alone_publish_nothing() -> None:
    p = SchedulerProcessor()
    fleet(p)
    cfg = [
        {
            "scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "demo", "scoreName": "s"}},
            "weight": 1,
        }
    ]
    p.apply(
        "placements",
        "ns1/a",
        placement("ns1", "a", numberOfClusters=2, prioritizerPolicy={"mode": "Exact", "configurations": cfg}),
    )
    _scored(p, {"c1": 10, "c2": 50, "c3": 90})
    (d,) = p.evaluate(T0)
    assert d["decisions"] == ["c2", "c3"] and "sortBy" not in d
    _scored(p, {"c2": 95})
    assert p.evaluate(T0) == []


def test_a_cluster_change_enqueues_only_placements_that_read_what_changed() -> None:
    p = SchedulerProcessor()
    fleet(p)
    gold = [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"tier": "gold"}}}}]
    cpu = {
        "mode": "Exact",
        "configurations": [
            {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "ResourceAllocatableCPU"}, "weight": 1}
        ],
    }
    cel = [
        {
            "requiredClusterSelector": {
                "celSelector": {"celExpressions": ["managedCluster.metadata.name != 'x'"]}
            }
        }
    ]
    p.apply("placements", "ns1/by-tier", placement("ns1", "by-tier", predicates=gold))
    p.apply("placements", "ns1/by-cpu", placement("ns1", "by-cpu", prioritizerPolicy=cpu))
    p.apply("placements", "ns1/by-cel", placement("ns1", "by-cel", predicates=cel))
    p.apply("placements", "ns1/plain", placement("ns1", "plain"))
    p.evaluate(T0)

    p.apply("clusters", "c1", cluster("c1", {"tier": "gold", "team": "blue"}))  # a label nobody selects on
    assert set(p.dirty) == {"ns1/by-cel"}  # CEL may read anything
    p.evaluate(T0)
    p.apply("clusters", "c1", cluster("c1", {"tier": "silver", "team": "blue"}))
    assert set(p.dirty) == {"ns1/by-tier", "ns1/by-cel"}
    p.evaluate(T0)
    with_cpu = cluster("c1", {"tier": "silver", "team": "blue"})
    with_cpu["status"] = {"allocatable": {"cpu": "4"}, "capacity": {"cpu": "8"}}
    p.apply("clusters", "c1", with_cpu)
    assert set(p.dirty) == {"ns1/by-cpu", "ns1/by-cel"}
    p.evaluate(T0)
    p.apply("clusters", "c1", with_cpu)  # the same object again: nothing to do
    assert not p.dirty
    tainted = {
        **with_cpu,
        "spec": {"taints": [{"key": "k", "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:00Z"}]},
    }
    p.apply("clusters", "c1", tainted)  # taints: every placement of the set
    assert set(p.dirty) == {"ns1/by-tier", "ns1/by-cpu", "ns1/by-cel", "ns1/plain"}


def test_a_set_membership_change_enqueues_every_placement_bound_to_either_set() -> None:
    p = SchedulerProcessor()
    fleet(p)
    p.apply("placements", "ns1/plain", placement("ns1", "plain"))
    p.evaluate(T0)
    moved = cluster("c1")
    moved["metadata"]["labels"]["cluster.open-cluster-management.io/clusterset"] = "elsewhere"
    p.apply("clusters", "c1", moved)
    assert set(p.dirty) == {"ns1/plain"}
    (d,) = p.evaluate(T0)
    assert d["removed"] == ["c1"]


def test_the_decision_kept_after_publishing_is_the_one_read_back_from_the_diff() -> None:
    """The worker keeps its own decision without decoding its diff again; what it keeps must be
    what a restarted worker reads back from the topic (sortBy Score, groups, sub-second times)."""
    from fleetplace.services.scheduler.core import Published

    p = SchedulerProcessor()
    fleet(p, 5)
    cfg = [
        {
            "scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "demo", "scoreName": "s"}},
            "weight": 1,
        }
    ]
    groups = {
        "groupStrategy": {
            "decisionGroups": [
                {
                    "groupName": "gold",
                    "groupClusterSelector": {"labelSelector": {"matchLabels": {"tier": "gold"}}},
                }
            ]
        }
    }
    p.apply("placements", "ns1/a", placement("ns1", "a", numberOfClusters=3, decisionStrategy=groups))
    p.apply(
        "placements",
        "ns1/b",
        placement(
            "ns1",
            "b",
            numberOfClusters=2,
            sortBy="Score",
            prioritizerPolicy={"mode": "Exact", "configurations": cfg},
        ),
    )
    _scored(p, {"c1": 10, "c2": 50, "c3": 90, "c4": -5, "c5": 0})
    now = T0 + timedelta(microseconds=250)
    diffs = p.evaluate(now)
    assert {d["placement"] for d in diffs} == {"ns1/a", "ns1/b"}
    for d in diffs:
        assert p.published[d["placement"]] == Published.from_diff(d)
    _scored(p, {"c4": 99})
    later = now + timedelta(seconds=1)
    diffs = p.evaluate(later)
    assert diffs and all(p.published[d["placement"]] == Published.from_diff(d) for d in diffs)


def test_withdrawn_diffs_leave_the_state_as_before_and_are_computed_again_alike() -> None:
    # a worker that stood still while computing diffs takes them back instead of publishing
    p = SchedulerProcessor()
    fleet(p)
    p.apply("placements", "ns1/a", placement("ns1", "a", numberOfClusters=1))
    p.apply("placements", "ns1/b", placement("ns1", "b", numberOfClusters=1))
    first = {d["placement"]: d for d in p.evaluate(T0)}
    for key in first:
        p.take_pending(key)  # published
    taint = [{"key": "maintenance", "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:00Z"}]
    p.apply("clusters", "c1", cluster("c1", {"tier": "gold"}, taints=taint))
    before = ({k: v.decisions for k, v in p.published.items()}, p.fleet.decision_counts().tolist())
    again = {d["placement"]: d for d in p.evaluate(T0)}
    assert again and all(d["seq"] == 2 for d in again.values())
    p.withdraw(again)
    assert ({k: v.decisions for k, v in p.published.items()}, p.fleet.decision_counts().tolist()) == before
    p.mark_all("startup")
    computed = {d["placement"]: {**d, "trigger": None} for d in p.evaluate(T0)}
    assert computed == {k: {**d, "trigger": None} for k, d in again.items()}
    # a placement never published before: withdrawn, it has no decision at all
    p.apply("placements", "ns1/c", placement("ns1", "c", numberOfClusters=1))
    p.withdraw([d["placement"] for d in p.evaluate(T0)])
    assert "ns1/c" not in p.published and not p.fleet.decisions.own("ns1", "c")


def _fanned_out() -> SchedulerProcessor:
    """Nine placements of one cluster each: each decision moves Balance for the ones after it."""
    p = SchedulerProcessor()
    fleet(p, 4)
    for i in range(9):
        ns = "ns1" if i % 2 else "ns2"
        p.apply("placements", f"{ns}/p{i}", placement(ns, f"p{i}", numberOfClusters=1))
    return p


@settings(max_examples=40, deadline=None)
@given(
    budgets=st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=8), limit=st.integers(1, 9)
)
def test_slices_cut_by_a_time_budget_give_the_diffs_of_one_call(budgets: list[int], limit: int) -> None:
    # the worker cuts a fan-out where its time budget runs out (`enough`): wherever the cuts
    # fall, the slices give the same diffs, in the same order, as evaluating everything at once
    whole = _fanned_out().evaluate(T0)
    assert len(whole) == 9
    p = _fanned_out()
    sliced: list[dict[str, Any]] = []
    for call in range(100):
        if not p.dirty:
            break
        budget = budgets[call % len(budgets)]
        evaluated = len(p.dirty)

        def enough(budget: int = budget, start: int = evaluated) -> bool:
            return start - len(p.dirty) >= budget

        sliced += p.evaluate(T0, limit=limit, enough=enough)
        # a slice stops at its limit or at the first placement past its budget, never before
        assert evaluated - len(p.dirty) == min(limit, budget, evaluated)
    assert sliced == whole
