"""The queueing package's exceptions: one base class, a subclass per kind of failure.

Validation problems are values (`ConfigProblem`: a field path and a reason); a rejected
configuration raises one `ConfigError` that carries every problem found, not only the first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    """One thing wrong with a configuration: where (`partitions[0].queues[1].name`) and why."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path or '(document)'}: {self.reason}"


class QueueingError(Exception):
    """Base class of every error raised by `fleetplace.shared.queueing`."""


class ConfigError(QueueingError):
    """A configuration was rejected as a whole; `problems` lists every reason."""

    def __init__(self, problems: Iterable[ConfigProblem]) -> None:
        self.problems: tuple[ConfigProblem, ...] = tuple(problems)
        count = len(self.problems)
        head = f"invalid queue configuration ({count} problem{'s' if count != 1 else ''})"
        super().__init__("\n".join([head, *(f"  {p}" for p in self.problems)]))


class RuleEvaluationError(QueueingError):
    """A placement rule failed for an application: the application is rejected."""
