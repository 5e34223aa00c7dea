"""A Prometheus `/api/v1/query` answer → one raw value per cluster.

The answer must be an instant vector (`resultType: vector`) whose every series carries the
cluster label; anything else is an `EvaluationError` and the source publishes nothing. Within a
valid answer, a series whose value is NaN or ±Inf, or whose cluster name holds a `/`, is
skipped, and a cluster named by more than
one series is skipped whole (no series is more right than another); each skip is counted by
reason.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson

from fleetplace.shared.wording import text_of

from ._errors import EvaluationError, Reason

__all__ = ["ClusterValues", "SkipReason", "read_vector"]


class SkipReason:
    NAN = "nan"
    INF = "inf"
    DUPLICATE = "duplicate"
    INVALID_NAME = "invalid-name"  # a cluster name with `/`, which no record key can carry


@dataclass
class ClusterValues:
    """The usable value of each cluster, and the series skipped, by reason."""

    values: dict[str, float] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)


def _error_of(body: Any) -> EvaluationError | None:
    if isinstance(body, dict) and body.get("status") == "error":
        kind = str(body.get("errorType", ""))
        message = f"{kind}: {body.get('error', '')}" if kind else str(body.get("error", ""))
        reason = Reason.TIMEOUT if kind == "timeout" else Reason.QUERY
        return EvaluationError(reason, f"Prometheus: {message}")
    return None


def read_vector(status: int, payload: bytes, cluster_label: str) -> ClusterValues:
    """The clusters' values of one HTTP answer (`status`, body); EvaluationError when the answer
    gives no scores."""
    try:
        body: Any = orjson.loads(payload)
    except orjson.JSONDecodeError:
        if status != 200:
            raise EvaluationError(Reason.HTTP, f"HTTP {status}: {text_of(payload)}") from None
        raise EvaluationError(Reason.BAD_RESPONSE, "the answer is not JSON") from None
    error = _error_of(body)
    if error is not None:
        raise error
    if status != 200:
        raise EvaluationError(Reason.HTTP, f"HTTP {status}")
    data = body.get("data") if isinstance(body, dict) and body.get("status") == "success" else None
    if not isinstance(data, dict):
        raise EvaluationError(Reason.BAD_RESPONSE, "the answer has no data (not the Prometheus HTTP API?)")
    kind = data.get("resultType")
    if kind != "vector":
        raise EvaluationError(
            Reason.RESULT_TYPE, f"the query gives a {kind}, not an instant vector (one value per series)"
        )
    series = data.get("result")
    if not isinstance(series, list):
        raise EvaluationError(Reason.BAD_RESPONSE, "data.result is not a list")
    out = ClusterValues()
    duplicated: set[str] = set()
    for item in series:
        try:
            labels, (_, text) = item["metric"], item["value"]
            value = float(text)
        except (TypeError, KeyError, ValueError) as e:
            raise EvaluationError(
                Reason.BAD_RESPONSE, f"a series is not [labels, [time, value]]: {e}"
            ) from None
        cluster = labels.get(cluster_label) if isinstance(labels, dict) else None
        if not isinstance(cluster, str) or not cluster:
            raise EvaluationError(
                Reason.MISSING_CLUSTER_LABEL,
                f"a series has no {cluster_label!r} label: {orjson.dumps(labels).decode()[:200]}",
            )
        if "/" in cluster:
            out.skipped[SkipReason.INVALID_NAME] += 1
        elif math.isnan(value):
            out.skipped[SkipReason.NAN] += 1
        elif math.isinf(value):
            out.skipped[SkipReason.INF] += 1
        elif cluster in duplicated:
            out.skipped[SkipReason.DUPLICATE] += 1
        elif cluster in out.values:
            del out.values[cluster]
            duplicated.add(cluster)
            out.skipped[SkipReason.DUPLICATE] += 2
        else:
            out.values[cluster] = value
    return out
