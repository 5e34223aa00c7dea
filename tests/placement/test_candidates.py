"""Candidate clusters: valid bindings, eligible sets, set membership."""

from __future__ import annotations

from .builders import (
    ALL_SCHEDULED,
    NO_BINDINGS,
    binding,
    bound_set,
    cluster,
    cluster_set,
    expr,
    global_set,
    own_decision,
    placement,
    run,
    satisfied,
    schedule_spec,
)


def test_binding_is_valid_iff_a_set_named_like_the_binding_exists() -> None:
    # metadata.name is the set name the scheduler uses; spec.clusterSet is not consulted
    result = schedule_spec(
        {}, cluster_set("set1"), binding("set1", cluster_set="does-not-exist"), cluster("c1")
    )
    assert result.bindings == 1
    assert result.decisions == ("c1",)


def test_binding_whose_name_names_no_set_is_invalid_even_if_spec_cluster_set_exists() -> None:
    result = schedule_spec({}, cluster_set("set1"), binding("other", cluster_set="set1"), cluster("c1"))
    assert result.bindings == 0
    assert result.decisions == ()
    assert satisfied(result) == NO_BINDINGS


def test_bindings_of_other_namespaces_do_not_count() -> None:
    result = schedule_spec({}, cluster_set("set1"), binding("set1", namespace="ns2"), cluster("c1"))
    assert satisfied(result) == NO_BINDINGS


def test_no_bindings_reports_no_bindings_even_with_invalid_ones_present() -> None:
    result = schedule_spec({}, binding("missing"), cluster("c1", clusterset="missing"))
    assert result.bindings == 0
    assert satisfied(result) == NO_BINDINGS
    assert [p.clusters for p in result.pages] == [()]


def test_a_terminating_cluster_set_still_counts_as_existing() -> None:
    terminating = cluster_set("set1")
    terminating["metadata"]["deletionTimestamp"] = "2026-03-01T11:00:00Z"
    result = schedule_spec({}, terminating, binding("set1"), cluster("c1"))
    assert result.decisions == ("c1",)


def test_spec_cluster_sets_intersect_the_bound_sets() -> None:
    objects = [
        cluster_set("a"),
        cluster_set("b"),
        cluster_set("c"),
        binding("a"),
        binding("b"),
        cluster("a1", clusterset="a"),
        cluster("b1", clusterset="b"),
        cluster("c1", clusterset="c"),
    ]
    # "c" is not bound, "zzz" does not exist: both silently ignored; duplicates are irrelevant
    result = schedule_spec({"clusterSets": ["b", "c", "zzz", "b"]}, *objects)
    assert result.eligible_sets == ("b",)
    assert result.decisions == ("b1",)


def test_empty_spec_cluster_sets_means_every_bound_set() -> None:
    objects = [
        cluster_set("b"),
        cluster_set("a"),
        binding("b"),
        binding("a"),
        cluster("a1", clusterset="a"),
        cluster("b1", clusterset="b"),
    ]
    for spec in ({}, {"clusterSets": []}, {"clusterSets": None}):
        result = schedule_spec(spec, *objects)
        assert result.eligible_sets == ("a", "b")
        assert result.decisions == ("a1", "b1")


def test_no_intersection_lists_the_spec_sets_as_written() -> None:
    result = schedule_spec({"clusterSets": ["x", "w", "x"]}, *bound_set(cluster("c1")))
    assert satisfied(result) == (
        "False",
        "NoIntersection",
        "None of ManagedClusterSets [x,w,x] is bound to placement namespace",
    )


def test_exclusive_set_members_carry_the_set_label_exactly() -> None:
    result = schedule_spec(
        {},
        *bound_set(
            cluster("c1"),
            cluster("c2", clusterset="set10"),
            cluster("c3", clusterset="Set1"),
            cluster("c4", clusterset=None),
        ),
    )
    assert result.decisions == ("c1",)


def test_empty_selector_type_is_the_exclusive_label() -> None:
    result = schedule_spec(
        {}, cluster_set("set1", ""), binding("set1"), cluster("c1"), cluster("c2", clusterset="x")
    )
    assert result.decisions == ("c1",)


def test_explicit_exclusive_selector_type() -> None:
    result = schedule_spec(
        {}, cluster_set("set1", "ExclusiveClusterSetLabel"), binding("set1"), cluster("c1")
    )
    assert result.decisions == ("c1",)


def test_label_selector_set_with_null_or_absent_selector_has_no_members() -> None:
    for s in (cluster_set("ls", "LabelSelector", None), cluster_set("ls", "LabelSelector")):
        result = schedule_spec(
            {}, s, binding("ls"), cluster("c1", labels={"a": "b"}), cluster("c2", clusterset="ls")
        )
        assert result.available == ()
        assert satisfied(result) == (
            "False",
            "AllManagedClusterSetsEmpty",
            "All ManagedClusterSets [ls] have no member ManagedCluster",
        )


def test_label_selector_set_with_empty_selector_has_every_cluster() -> None:
    result = schedule_spec(
        {}, global_set(), binding("global"), cluster("c1", clusterset=None), cluster("c2", clusterset="other")
    )
    assert result.decisions == ("c1", "c2")


def test_label_selector_set_with_terms_uses_label_selector_semantics() -> None:
    s = cluster_set(
        "prod",
        "LabelSelector",
        {"matchLabels": {"env": "prod"}, "matchExpressions": [expr("zone", "NotIn", "eu")]},
    )
    result = schedule_spec(
        {},
        s,
        binding("prod"),
        cluster("c1", clusterset=None, labels={"env": "prod"}),  # zone absent: NotIn matches
        cluster("c2", clusterset=None, labels={"env": "prod", "zone": "eu"}),
        cluster("c3", clusterset=None, labels={"env": "dev"}),
        cluster("c4", clusterset=None, labels={"env": "prod", "zone": "us"}),
    )
    assert result.decisions == ("c1", "c4")


def test_a_cluster_in_several_eligible_sets_is_one_candidate() -> None:
    result = schedule_spec(
        {}, cluster_set("set1"), global_set(), binding("set1"), binding("global"), cluster("c1")
    )
    assert result.available == ("c1",)
    assert result.decisions == ("c1",)


def test_terminating_clusters_are_never_candidates() -> None:
    # E16: a terminating cluster among five leaves four decisions
    clusters = [cluster(f"c{i}") for i in range(1, 5)] + [cluster("c5", deleting=True)]
    result = schedule_spec({}, *bound_set(*clusters))
    assert result.decisions == ("c1", "c2", "c3", "c4")
    assert satisfied(result) == ALL_SCHEDULED


def test_only_terminating_members_means_the_sets_are_empty() -> None:
    result = schedule_spec({}, *bound_set(cluster("c1", deleting=True)))
    assert satisfied(result)[1] == "AllManagedClusterSetsEmpty"


def test_acceptance_and_availability_are_not_considered() -> None:
    c = cluster("c1")
    c["spec"]["hubAcceptsClient"] = False
    c["status"] = {"conditions": [{"type": "ManagedClusterConditionAvailable", "status": "False"}]}
    result = schedule_spec({}, *bound_set(c))
    assert result.decisions == ("c1",)


def test_two_bound_sets_and_narrowing_spec_cluster_sets() -> None:
    # E16: 2 + 3 clusters, N = 10 -> 5; clusterSets [first] -> 2
    objects = [
        cluster_set("first"),
        cluster_set("second"),
        binding("first"),
        binding("second"),
        *(cluster(f"a{i}", clusterset="first") for i in range(2)),
        *(cluster(f"b{i}", clusterset="second") for i in range(3)),
    ]
    both = schedule_spec({"numberOfClusters": 10}, *objects)
    assert both.decisions == ("a0", "a1", "b0", "b1", "b2")
    assert satisfied(both) == ("False", "NotAllDecisionsScheduled", "5 cluster decisions unscheduled")
    first = schedule_spec({"numberOfClusters": 10, "clusterSets": ["first"]}, *objects)
    assert first.decisions == ("a0", "a1")


def test_all_sets_empty_message_lists_eligible_sets_sorted() -> None:
    result = schedule_spec({}, cluster_set("zeta"), cluster_set("alpha"), binding("zeta"), binding("alpha"))
    assert satisfied(result) == (
        "False",
        "AllManagedClusterSetsEmpty",
        "All ManagedClusterSets [alpha,zeta] have no member ManagedCluster",
    )


def test_a_set_with_an_unknown_selector_type_fails_the_sync() -> None:
    # as in OCM, an invalid cluster-set selector aborts the sync; nothing is written
    result = schedule_spec({}, cluster_set("bad", "Foo"), binding("bad"), cluster("c1", clusterset="bad"))
    assert result.skipped is not None
    assert result.conditions == ()


def test_a_set_with_a_malformed_label_selector_fails_the_sync() -> None:
    s = cluster_set("bad", "LabelSelector", {"matchExpressions": [expr("env", "Gt", "1")]})
    result = schedule_spec({}, s, binding("bad"), cluster("c1"))
    assert result.skipped is not None


def test_a_broken_set_that_is_not_eligible_does_not_matter() -> None:
    result = schedule_spec(
        {"clusterSets": ["set1"]}, cluster_set("bad", "Foo"), binding("bad"), *bound_set(cluster("c1"))
    )
    assert result.skipped is None
    assert result.decisions == ("c1",)


def test_disabled_and_deleting_placements_are_skipped() -> None:
    disabled = placement(
        annotations={"cluster.open-cluster-management.io/experimental-scheduling-disable": "true"}
    )
    assert run([*bound_set(cluster("c1")), disabled]).skipped is not None
    assert run([*bound_set(cluster("c1")), placement(deleting=True)]).skipped is not None
    # only the exact string "true" disables
    other = placement(
        annotations={"cluster.open-cluster-management.io/experimental-scheduling-disable": "True"}
    )
    assert run([*bound_set(cluster("c1")), other]).decisions == ("c1",)


def test_e16_binding_another_set_adds_its_clusters() -> None:
    first = [
        cluster_set("first"),
        binding("first"),
        *(cluster(f"a{i}", clusterset="first") for i in range(5)),
    ]
    second = [cluster_set("second"), *(cluster(f"b{i}", clusterset="second") for i in range(3))]
    before = schedule_spec({"numberOfClusters": 10}, *first, *second)
    assert len(before.decisions) == 5
    held = own_decision(before.decisions)
    after = schedule_spec({"numberOfClusters": 10}, *first, *second, binding("second"), held)
    assert len(after.decisions) == 8
    assert satisfied(after) == ("False", "NotAllDecisionsScheduled", "2 cluster decisions unscheduled")


def test_e16_losing_and_recreating_the_only_binding() -> None:
    clusters = [cluster(f"c{i}") for i in range(5)]
    held = own_decision([f"c{i}" for i in range(5)])
    lost = schedule_spec({}, cluster_set("set1"), *clusters, held)
    assert satisfied(lost) == NO_BINDINGS
    assert [(p.name, p.clusters) for p in lost.pages] == [("placement1-decision-1", ())]
    back = schedule_spec({}, *bound_set(*clusters), own_decision([]))
    assert back.decisions == ("c0", "c1", "c2", "c3", "c4")


def test_e16_label_selector_set_follows_matching_clusters() -> None:
    s = cluster_set("prod", "LabelSelector", {"matchLabels": {"env": "prod"}})
    two = schedule_spec({}, s, binding("prod"), *(cluster(f"c{i}", labels={"env": "prod"}) for i in range(2)))
    assert two.decisions == ("c0", "c1")
    three = schedule_spec(
        {},
        s,
        binding("prod"),
        *(cluster(f"c{i}", labels={"env": "prod"}) for i in range(2)),
        cluster("c2", labels={"env": "prod"}),
    )
    assert three.decisions == ("c0", "c1", "c2")
    relabelled = schedule_spec(
        {}, s, binding("prod"), cluster("c0", labels={"env": "prod"}), cluster("c1", labels={"env": "dev"})
    )
    assert relabelled.decisions == ("c0",)
