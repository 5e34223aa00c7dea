"""OCM's own CEL functions (sdk-go ``pkg/cel/library``): ``scores`` and ``parseJSON``."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from fleetplace.shared.placement._cel.library import Frame, function, size_cost
from fleetplace.shared.placement._cel.operators import no_overload
from fleetplace.shared.placement._cel.values import CelEvalError


@function("scores", "(dyn, string) -> list", member=True)
def scores(frame: Frame, cluster: Any, resource: Any) -> list[dict[str, Any]]:
    """The AddOnPlacementScore ``resource`` in the namespace named by the receiver's
    ``metadata.name``; ``validUntil`` is ignored and a missing object is an error."""
    if type(resource) is not str:
        no_overload("scores", cluster, resource)
    if not isinstance(cluster, Mapping):
        raise CelEvalError("scores: receiver is not a managed cluster")
    metadata = cluster.get("metadata")
    if not isinstance(metadata, Mapping) or "name" not in metadata:
        raise CelEvalError("failed to get cluster metadata")
    name = metadata["name"]
    if type(name) is not str:
        raise CelEvalError("failed to get cluster name")
    items = frame.scores(name, resource)
    if items is None:
        raise CelEvalError(
            f'failed to get score: addonplacementscores.cluster.open-cluster-management.io "{resource}" not found'
        )
    frame.charge(len(items))
    return [{"name": n, "value": int(v)} for n, v in items]


def _no_constants(text: str) -> Any:
    raise ValueError(f"invalid JSON value {text}")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError("number out of range")
    return value


@function("parseJSON", "(string) -> dyn", member=True)
def parse_json(frame: Frame, text: Any) -> Any:
    """Go's ``json.Unmarshal`` into ``interface{}``: every number becomes a double."""
    if type(text) is not str:
        no_overload("parseJSON", text)
    frame.charge(size_cost(len(text)))
    try:
        return json.loads(text, parse_int=_finite, parse_float=_finite, parse_constant=_no_constants)
    except (ValueError, RecursionError) as e:
        raise CelEvalError(f"failed to parse JSON: {e}") from None
