"""Properties: input order does not change what All and Progressive decide; same input, same output."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetplace.shared.rollout import (
    ClusterRolloutStatus,
    DecisionGroup,
    GroupKey,
    RolloutStatus,
    RolloutStrategy,
    rollout,
)

from .builders import NOW, at

CLUSTERS = [f"cluster{i}" for i in range(12)]

statuses_st = st.lists(
    st.tuples(
        st.sampled_from([*CLUSTERS, "gone1", "gone2"]),
        st.sampled_from(list(RolloutStatus)),
        st.one_of(st.none(), st.integers(min_value=-120, max_value=600)),
    ),
    max_size=14,
    unique_by=lambda item: item[0],
).map(
    lambda items: [
        ClusterRolloutStatus(name, state, GroupKey(), None if ago is None else at(-ago))
        for name, state, ago in items
    ]
)

groups_st = st.lists(
    st.integers(min_value=0, max_value=3), min_size=len(CLUSTERS), max_size=len(CLUSTERS)
).map(
    lambda assignment: [
        DecisionGroup(
            "canary" if index == 0 else "",
            index,
            tuple(c for c, g in zip(CLUSTERS, assignment, strict=True) if g == index),
        )
        for index in range(4)
    ]
)

threshold_st = st.one_of(
    st.integers(min_value=-1, max_value=14), st.sampled_from(["0%", "25%", "50%", "7.5%", "100%"])
)
deadline_st = st.sampled_from(["", "None", "0s", "30s", "90s", "5m"])
soak_st = st.sampled_from([None, "0s", "30s", "2m"])


@st.composite
def strategies(draw: st.DrawFn, kinds: tuple[str, ...]) -> RolloutStrategy:
    kind = draw(st.sampled_from(kinds))
    section = {"All": "all", "Progressive": "progressive", "ProgressivePerGroup": "progressivePerGroup"}[kind]
    settings_doc: dict[str, Any] = {
        "progressDeadline": draw(deadline_st),
        "maxFailures": draw(threshold_st),
        "maxConcurrency": draw(threshold_st),
    }
    soak = draw(soak_st)
    if soak is not None:  # absent, not null: a null duration does not decode
        settings_doc["minSuccessTime"] = soak
    if draw(st.booleans()):
        settings_doc["mandatoryDecisionGroups"] = [
            draw(st.sampled_from([{"groupName": "canary"}, {"groupIndex": 1}]))
        ]
    return RolloutStrategy.from_json({"type": kind, section: settings_doc})


def _names(statuses: tuple[ClusterRolloutStatus, ...]) -> set[tuple[str, RolloutStatus]]:
    return {(s.cluster_name, s.status) for s in statuses}


@settings(max_examples=300, deadline=None)
@given(strategies(("All", "Progressive")), groups_st, statuses_st, st.randoms(use_true_random=False))
def test_permuting_distinct_statuses_does_not_change_what_all_and_progressive_decide(
    strategy: RolloutStrategy, groups: list[DecisionGroup], statuses: list[ClusterRolloutStatus], rng: Any
) -> None:
    shuffled = list(statuses)
    rng.shuffle(shuffled)
    first = rollout(strategy, groups, statuses, NOW)
    second = rollout(strategy, groups, shuffled, NOW)
    assert _names(first.clusters_to_rollout) == _names(second.clusters_to_rollout)
    assert _names(first.clusters_timeout) == _names(second.clusters_timeout)
    assert first.max_failure_breach == second.max_failure_breach
    assert first.recheck_after_nanos == second.recheck_after_nanos
    assert _names(first.clusters_removed) == _names(second.clusters_removed)


@settings(max_examples=300, deadline=None)
@given(strategies(("All", "Progressive", "ProgressivePerGroup")), groups_st, statuses_st)
def test_same_input_gives_the_same_output(
    strategy: RolloutStrategy, groups: list[DecisionGroup], statuses: list[ClusterRolloutStatus]
) -> None:
    assert rollout(strategy, groups, statuses, NOW) == rollout(strategy, list(groups), list(statuses), NOW)
