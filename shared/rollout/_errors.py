"""The rollout package's exceptions: one base class, one subclass per kind of bad input.

Messages are the ones OCM's rollout code reports for the same input, so a caller that shows them
reads the same text as an OCM applier's log.
"""

from __future__ import annotations


class RolloutError(Exception):
    """The rollout cannot be evaluated; the message says why."""


class StrategyTypeError(RolloutError):
    """The strategy's `type` is none of All, Progressive, ProgressivePerGroup."""


class DurationError(RolloutError):
    """A duration (progressDeadline, minSuccessTime) is not one OCM accepts."""


class ThresholdError(RolloutError):
    """maxFailures or maxConcurrency is neither an integer nor a percentage."""


class ScenarioError(RolloutError):
    """A scenario document is malformed (a missing field, a wrong type, a bad time)."""
