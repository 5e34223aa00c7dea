"""ScoreSource documents and Prometheus answers for the score tests."""

from __future__ import annotations

from typing import Any

import orjson

from fleetplace.shared.api.score_sources import ScoreSource


def source_doc(
    name: str = "cpu-free",
    *,
    namespace: str = "scores",
    url: str = "http://127.0.0.1:9090",
    query: str = "sum by (cluster) (free_cpu)",
    normalize: dict[str, Any] | None = None,
    interval: str = "30s",
    valid_for: str = "5m",
    resource: str = "resource-usage",
    score: str = "cpuAvailable",
    cluster_label: str = "cluster",
) -> dict[str, Any]:
    return {
        "apiVersion": "fleetplace.dev/v1alpha1",
        "kind": "ScoreSource",
        "metadata": {"namespace": namespace, "name": name},
        "spec": {
            "prometheus": {"url": url},
            "query": query,
            "clusterLabel": cluster_label,
            "score": {"resource": resource, "name": score},
            "normalize": normalize if normalize is not None else {"min": 0, "max": 64},
            "interval": interval,
            "validFor": valid_for,
        },
    }


def source(**options: Any) -> ScoreSource:
    return ScoreSource.model_validate(source_doc(**options))


def vector_answer(values: dict[str, str | float], label: str = "cluster") -> bytes:
    """A Prometheus /api/v1/query answer: one series per cluster."""
    result = [{"metric": {label: c}, "value": [1700000000.0, str(v)]} for c, v in values.items()]
    return orjson.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})
