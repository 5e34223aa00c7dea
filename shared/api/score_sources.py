"""The ScoreSource object: a PromQL query whose result becomes one AddOnPlacementScore per cluster,
and the status record the score worker keeps per source.

A ScoreSource (`fleetplace.dev/v1alpha1`, topic `score-sources`, key `<namespace>/<name>`) names a
Prometheus, an instant query, the series label that names the cluster, the score it writes
(`score.resource` is the AddOnPlacementScore's name, `score.name` the score item in it), how raw
values map to OCM's integer range [-100, 100] (`normalize`), how often it is evaluated
(`interval`) and how long a published score stays valid (`validFor`). docs/scores.md describes it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from fleetplace.shared.api.objects import ObjectError, object_ref, problems_of
from fleetplace.shared.api.ocm import ObjectMeta, _Model
from fleetplace.shared.rollout import DurationError, parse_go_duration

__all__ = [
    "API_VERSION",
    "MIN_INTERVAL_S",
    "Normalize",
    "PrometheusRef",
    "ScoreRef",
    "ScoreSource",
    "ScoreSourceSpec",
    "ScoreSourceStatus",
    "SourceError",
    "parse_duration_s",
    "parse_score_source",
]

API_VERSION = "fleetplace.dev/v1alpha1"
# Shorter intervals would ask more of Prometheus than any placement can use (OCM rate-limits
# score-driven re-decisions to one a minute by default).
MIN_INTERVAL_S = 1.0
# A Kubernetes object name (DNS-1123 subdomain): the AddOnPlacementScore's `metadata.name`.
_RESOURCE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# A Prometheus label name.
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def parse_duration_s(text: str) -> float:
    """Seconds of a Go duration (`30s`, `5m`, `1m30s`); ValueError when it is not one."""
    try:
        return parse_go_duration(text) / 1e9
    except DurationError as e:
        raise ValueError(str(e)) from None


class PrometheusRef(_Model):
    """Where to query: a base URL, or the name of an endpoint in the worker's settings
    (`FLEETPLACE_PROMETHEUS_ENDPOINTS`), so sources need not carry addresses or credentials."""

    url: str | None = None
    endpoint: str | None = None

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^/\s]+", value):
            raise ValueError(f"must be an http:// or https:// URL, got {value!r}")
        return value

    @model_validator(mode="after")
    def _one_of(self) -> PrometheusRef:
        if (self.url is None) == (self.endpoint is None):
            raise ValueError("give exactly one of url and endpoint")
        return self


class ScoreRef(_Model):
    """The AddOnPlacementScore written per cluster: `metadata.name` = resource, the item = name."""

    resource: str = Field(min_length=1, max_length=253)
    name: str = Field(min_length=1)

    @field_validator("resource")
    @classmethod
    def _object_name(cls, value: str) -> str:
        if not _RESOURCE_NAME.match(value):
            raise ValueError(
                f"must be a Kubernetes object name (lower-case letters, digits, '-', '.'), got {value!r}"
            )
        return value


class Normalize(_Model):
    """How a raw value becomes a score: linear from [min, max] to [-100, 100], clamped; with
    `fleet`, min and max are the smallest and largest value of the evaluation's result; `invert`
    mirrors the score (lower is better). docs/scores.md#normalization states the rounding rule."""

    min: float | None = None
    max: float | None = None
    fleet: bool = False
    invert: bool = False

    @model_validator(mode="after")
    def _range(self) -> Normalize:
        if self.fleet:
            if self.min is not None or self.max is not None:
                raise ValueError("fleet: true takes min and max from the result: give neither")
            return self
        if self.min is None or self.max is None:
            raise ValueError("give min and max, or fleet: true")
        if not (math.isfinite(self.min) and math.isfinite(self.max) and self.min < self.max):
            raise ValueError(f"min must be less than max, both finite (got min {self.min}, max {self.max})")
        return self


class ScoreSourceSpec(_Model):
    prometheus: PrometheusRef
    query: str = Field(min_length=1)
    cluster_label: str = "cluster"
    score: ScoreRef
    normalize: Normalize
    interval: str = "30s"
    valid_for: str = "5m"

    @field_validator("cluster_label")
    @classmethod
    def _label(cls, value: str) -> str:
        if not _LABEL_NAME.match(value):
            raise ValueError(f"must be a Prometheus label name, got {value!r}")
        return value

    @field_validator("interval", "valid_for")
    @classmethod
    def _duration(cls, value: str) -> str:
        parse_duration_s(value)
        return value

    @model_validator(mode="after")
    def _timing(self) -> ScoreSourceSpec:
        if self.interval_s < MIN_INTERVAL_S:
            raise ValueError(f"interval: must be at least {MIN_INTERVAL_S:g}s, got {self.interval!r}")
        # a score must outlive the wait for its refresh, or it lapses between two evaluations
        if self.valid_for_s <= self.interval_s:
            raise ValueError(
                f"validFor: must be longer than interval ({self.interval}), got {self.valid_for!r}"
            )
        return self

    @property
    def interval_s(self) -> float:
        return parse_duration_s(self.interval)

    @property
    def valid_for_s(self) -> float:
        return parse_duration_s(self.valid_for)


class ScoreSource(_Model):
    """`fleetplace.dev/v1alpha1` ScoreSource: a PromQL query → one AddOnPlacementScore per cluster."""

    api_version: Literal["fleetplace.dev/v1alpha1"] = "fleetplace.dev/v1alpha1"
    kind: Literal["ScoreSource"] = "ScoreSource"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ScoreSourceSpec

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


# ---- the worker's status record (topic score-source-status) -------------------------------------


class _Payload(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore")


class SourceError(_Payload):
    """Why an evaluation published nothing."""

    at: str = Field(description="When the evaluation ran (RFC 3339, UTC).")
    reason: str = Field(
        description="unreachable, timeout, http, query, result-type, missing-cluster-label, "
        "bad-response or endpoint (docs/scores.md#failures)."
    )
    message: str


class ScoreSourceStatus(_Payload):
    """Where one source stands (topic `score-source-status`, compacted; a tombstone once the source
    is deleted). The score worker publishes one after every evaluation of the source."""

    schema_version: int = 1
    source: str = Field(pattern=r"^[^/]+/[^/]+$", description="`<namespace>/<name>`, the record key.")
    instance: str = Field(description="The worker instance that evaluated it.")
    evaluated_at: str = Field(description="The last evaluation (RFC 3339, UTC).")
    last_success_at: str | None = Field(
        default=None, description="The last evaluation that produced scores (or an empty result)."
    )
    last_error: SourceError | None = Field(
        default=None, description="The last failed evaluation, kept after later successes."
    )
    healthy: bool = Field(description="The last evaluation succeeded.")
    clusters_scored: int = Field(default=0, description="Clusters scored by the last successful evaluation.")
    published: int = Field(
        default=0, description="AddOnPlacementScores the last evaluation published (changes and refreshes)."
    )
    skipped: dict[str, int] = Field(
        default_factory=dict,
        description="Series the last evaluation skipped, by reason (nan, inf, duplicate).",
    )
    next_evaluation_at: str | None = None


def parse_score_source(raw: object, where: str = "") -> ScoreSource:
    """One decoded document as a ScoreSource; ObjectError naming every bad field."""
    if not isinstance(raw, Mapping):
        raise ObjectError(where, "document", [("", f"expected an object, got {type(raw).__name__}")])
    try:
        return ScoreSource.model_validate(raw)
    except ValidationError as e:
        raise ObjectError(where, object_ref(raw), problems_of(e)) from None
