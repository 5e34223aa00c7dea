"""OCM's rollout strategies as a pure function.

`rollout(strategy, decision_groups, cluster_statuses, now)` says which clusters an applier
should roll a workload out to now, which timed out, which left the placement, whether failures
exceeded maxFailures, and when to look again. docs/rollouts.md describes the semantics.
"""

from ._durations import NO_DEADLINE, parse_go_duration, parse_progress_deadline
from ._errors import DurationError, RolloutError, ScenarioError, StrategyTypeError, ThresholdError
from ._models import (
    ClusterRolloutStatus,
    DecisionGroup,
    GroupKey,
    MandatoryGroup,
    RolloutResult,
    RolloutStatus,
    RolloutStrategy,
    StrategyType,
)
from ._strategies import rollout
from ._thresholds import threshold_of
from ._time import Instant
from .scenario import Scenario, evaluate_scenario, parse_scenario, render_error, render_result

__all__ = [
    "NO_DEADLINE",
    "ClusterRolloutStatus",
    "DecisionGroup",
    "DurationError",
    "GroupKey",
    "Instant",
    "MandatoryGroup",
    "RolloutError",
    "RolloutResult",
    "RolloutStatus",
    "RolloutStrategy",
    "Scenario",
    "ScenarioError",
    "StrategyType",
    "StrategyTypeError",
    "ThresholdError",
    "evaluate_scenario",
    "parse_go_duration",
    "parse_progress_deadline",
    "parse_scenario",
    "render_error",
    "render_result",
    "rollout",
    "threshold_of",
]
