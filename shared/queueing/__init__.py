"""The YuniKorn placement-rule engine: which queue an application goes to (spec: queue-placement).

Pure and synchronous, no I/O. `parse_config` validates a partition config into immutable rule
objects (or raises `ConfigError` listing every problem with its field path); a `QueuePlacer`
built from it places applications, remembers the queues it created and can be reloaded.
"""

from fleetplace.shared.api.queues import ApplicationSubmission, PlacementOutcome, RejectionReason
from fleetplace.shared.queueing._config import PartitionSpec, QueueingConfig, parse_config
from fleetplace.shared.queueing._errors import ConfigError, ConfigProblem, QueueingError, RuleEvaluationError
from fleetplace.shared.queueing._placer import QueuePlacer, QueueState

__all__ = [
    "ApplicationSubmission",
    "ConfigError",
    "ConfigProblem",
    "PartitionSpec",
    "PlacementOutcome",
    "QueuePlacer",
    "QueueState",
    "QueueingConfig",
    "QueueingError",
    "RejectionReason",
    "RuleEvaluationError",
    "parse_config",
]
