"""Why an evaluation of a score source produced no scores."""

from __future__ import annotations

import enum

__all__ = ["EvaluationError", "Reason"]


class Reason(enum.StrEnum):
    """The `reason` label of `fleetplace_score_source_errors_total` (docs/scores.md#failures)."""

    UNREACHABLE = "unreachable"  # no connection to Prometheus
    TIMEOUT = "timeout"  # no answer in time, or Prometheus's own query timeout
    HTTP = "http"  # an HTTP status without a Prometheus error body (a proxy, a wrong URL)
    QUERY = "query"  # Prometheus refused or failed the query (PromQL syntax, execution)
    RESULT_TYPE = "result-type"  # not an instant vector (a range vector, a scalar, a string)
    MISSING_CLUSTER_LABEL = "missing-cluster-label"  # a series without the cluster label
    BAD_RESPONSE = "bad-response"  # not the Prometheus HTTP API's JSON
    ENDPOINT = "endpoint"  # a named endpoint the worker's settings do not define


class EvaluationError(Exception):
    """An evaluation that publishes nothing: `reason` (a `Reason`) and a message for people."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
