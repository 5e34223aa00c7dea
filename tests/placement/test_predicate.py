"""The Predicate filter: OR across predicates, AND inside one, and its short-circuits."""

from __future__ import annotations

from .builders import (
    NO_BINDINGS,
    NO_MATCH,
    OK_MISCONFIGURED,
    addon_score,
    binding,
    bound_set,
    claim_predicate,
    cluster,
    cluster_set,
    expr,
    groups_of,
    label_predicate,
    misconfigured,
    satisfied,
    schedule_spec,
)

CLUSTERS = bound_set(
    cluster("c1", labels={"cloud": "Amazon", "env": "prod"}, claims={"region": "us"}),
    cluster("c2", labels={"cloud": "Amazon", "env": "dev"}, claims={"region": "eu"}),
    cluster("c3", labels={"cloud": "Azure", "env": "prod"}, claims={"region": "eu"}),
    cluster("c4", labels={"cloud": "Google"}),
)


def test_no_predicates_keeps_every_candidate() -> None:
    assert schedule_spec({}, *CLUSTERS).decisions == ("c1", "c2", "c3", "c4")
    assert schedule_spec({"predicates": []}, *CLUSTERS).decisions == ("c1", "c2", "c3", "c4")


def test_predicates_are_ored() -> None:
    spec = {"predicates": [label_predicate({"cloud": "Azure"}), label_predicate({"env": "dev"})]}
    assert schedule_spec(spec, *CLUSTERS).decisions == ("c2", "c3")


def test_label_claim_and_cel_inside_one_predicate_are_anded() -> None:
    predicate = {
        "requiredClusterSelector": {
            "labelSelector": {"matchLabels": {"env": "prod"}},
            "claimSelector": {"matchExpressions": [expr("region", "In", "eu")]},
        }
    }
    assert schedule_spec({"predicates": [predicate]}, *CLUSTERS).decisions == ("c3",)
    predicate["requiredClusterSelector"]["celSelector"] = {
        "celExpressions": ['managedCluster.metadata.labels["cloud"] == "Amazon"']
    }
    assert schedule_spec({"predicates": [predicate]}, *CLUSTERS).decisions == ()


def test_empty_predicate_matches_everything() -> None:
    for predicate in ({}, {"requiredClusterSelector": {}}, label_predicate()):
        spec = {"predicates": [label_predicate({"cloud": "Azure"}), predicate]}
        assert schedule_spec(spec, *CLUSTERS).decisions == ("c1", "c2", "c3", "c4")


def test_empty_claim_selector_matches_everything() -> None:
    spec = {"predicates": [{"requiredClusterSelector": {"claimSelector": {}}}]}
    assert schedule_spec(spec, *CLUSTERS).decisions == ("c1", "c2", "c3", "c4")


def test_no_predicate_matches() -> None:
    result = schedule_spec({"predicates": [label_predicate({"cloud": "Alibaba"})]}, *CLUSTERS)
    assert result.decisions == ()
    assert satisfied(result) == NO_MATCH
    assert misconfigured(result) == OK_MISCONFIGURED
    assert groups_of(result) == [(0, "", [])]


def test_every_predicate_is_validated_even_if_an_earlier_one_matches_all() -> None:
    spec = {"predicates": [{}, label_predicate(None, expr("env", "Gt", "1"))]}
    result = schedule_spec(spec, *CLUSTERS)
    assert misconfigured(result) == (
        "True",
        "Misconfigured",
        'Predicate:"Gt" is not a valid label selector operator',
    )
    assert result.decisions == ()
    assert result.scores == {}


def test_broken_selector_is_not_reported_without_candidates() -> None:
    spec = {"predicates": [label_predicate(None, expr("env", "Gt", "1"))]}
    # no binding at all
    no_binding = schedule_spec(spec, cluster_set("set1"), cluster("c1"))
    assert misconfigured(no_binding) == OK_MISCONFIGURED
    assert satisfied(no_binding) == NO_BINDINGS
    # a bound set without members
    empty = schedule_spec(spec, cluster_set("set1"), binding("set1"), cluster("c1", clusterset="other"))
    assert misconfigured(empty) == OK_MISCONFIGURED
    assert satisfied(empty)[1] == "AllManagedClusterSetsEmpty"


def test_broken_cel_is_not_reported_without_candidates() -> None:
    spec = {
        "predicates": [{"requiredClusterSelector": {"celSelector": {"celExpressions": ["xxxx.expression"]}}}]
    }
    result = schedule_spec(spec, cluster_set("set1"), binding("set1"))
    assert misconfigured(result) == OK_MISCONFIGURED


def test_invalid_cel_is_misconfigured() -> None:
    # E15
    spec = {
        "predicates": [{"requiredClusterSelector": {"celSelector": {"celExpressions": ["xxxx.expression"]}}}]
    }
    result = schedule_spec(spec, *bound_set(cluster("c1")))
    status, reason, message = misconfigured(result)
    assert (status, reason) == ("True", "Misconfigured")
    assert message.startswith("Predicate:compilation failed: ")
    assert result.decisions == ()
    assert satisfied(result) == NO_MATCH


def test_cel_scores_expression_selects_by_addon_score() -> None:
    # E15 continued: scores 70 / 90 with a threshold > 80 -> only the 90-cluster
    expression = 'managedCluster.scores("demo").filter(s, s.name == "demo").all(e, e.value > 80)'
    spec = {"predicates": [{"requiredClusterSelector": {"celSelector": {"celExpressions": [expression]}}}]}
    result = schedule_spec(
        spec,
        *bound_set(cluster("c1"), cluster("c2"), cluster("c3")),
        addon_score("c1", "demo", {"demo": 70}),
        addon_score("c2", "demo", {"demo": 90}),
    )
    # c3 has no score object: scores() errors, so c3 does not match
    assert result.decisions == ("c2",)


def test_claim_predicate_or_label_predicate() -> None:
    spec = {"predicates": [claim_predicate(expr("region", "In", "us")), label_predicate({"cloud": "Google"})]}
    assert schedule_spec(spec, *CLUSTERS).decisions == ("c1", "c4")


def test_filters_happen_before_prioritizers_see_the_clusters() -> None:
    result = schedule_spec({"predicates": [label_predicate({"cloud": "Amazon"})]}, *CLUSTERS)
    assert set(result.scores) == {"c1", "c2"}


def test_placements_with_the_same_predicates_share_one_survivor_array_while_the_fleet_stays() -> None:
    """What is computed from the survivors (shared scores, bases) is kept per array: placements
    with the same predicates must get the same array, and a changed cluster a fresh, right one."""
    from fleetplace.shared.api.objects import parse_object
    from fleetplace.shared.placement import apply_object
    from fleetplace.shared.placement.framework import ScheduleContext
    from fleetplace.shared.placement.plugins.predicate import PredicateFilter
    from fleetplace.shared.placement.scheduler import _eligible

    from .builders import NOW, NS, fleet_of, placement

    spec = {"predicates": [label_predicate({"env": "prod"})]}
    raws = [*CLUSTERS, placement(spec, name="a"), placement(spec, name="b")]
    fleet = fleet_of((parse_object(raw), raw) for raw in raws)

    def survivors(name: str) -> object:
        p = fleet.placements[f"{NS}/{name}"]
        eligible = _eligible(p, fleet)[1]
        slots = fleet.candidates(eligible)
        ctx = ScheduleContext(p, fleet, NOW, {}, lineage=("candidates", eligible))
        return PredicateFilter().filter(ctx, slots).slots

    first, second = survivors("a"), survivors("b")
    assert first is second
    assert [fleet.name_of(s) for s in first.tolist()] == ["c1", "c3"]  # type: ignore[attr-defined]
    apply_object(fleet, parse_object(cluster("c4", labels={"cloud": "Google", "env": "prod"})))
    after = survivors("a")
    assert after is not first
    assert sorted(fleet.name_of(s) for s in after.tolist()) == ["c1", "c3", "c4"]  # type: ignore[attr-defined]


def test_cel_calling_sign_as_a_method_is_misconfigured() -> None:
    # Kubernetes' quantity library declares sign(quantity) only; the method form does not compile
    spec = {
        "predicates": [
            {"requiredClusterSelector": {"celSelector": {"celExpressions": ['quantity("1").sign() == 1']}}}
        ]
    }
    result = schedule_spec(spec, *bound_set(cluster("c1")))
    status, reason, message = misconfigured(result)
    assert (status, reason) == ("True", "Misconfigured")
    assert message.startswith(
        "Predicate:compilation failed: ERROR: <input>:1:19: "
        "found no matching overload for 'sign' applied to 'kubernetes.Quantity.()'"
    )
    assert result.decisions == ()
