"""Which AddOnPlacementScores an evaluation publishes: the clusters whose score changed, and those
whose published score would lapse before the next evaluation could refresh it — nothing else.

`published` is what the scores topic holds (the score worker reads it whole), so an unchanged
result publishes nothing, also after a restart, and a score someone else overwrote is put back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from fleetplace.shared.api.ocm import GROUP
from fleetplace.shared.api.score_sources import ScoreSource

__all__ = [
    "SOURCE_ANNOTATION",
    "PublishedScore",
    "ScoreRecord",
    "plan_scores",
    "published_score",
    "query_timeout_s",
    "score_key",
    "score_object",
]

# Which source wrote an AddOnPlacementScore (`<namespace>/<name>`), for people and audits.
SOURCE_ANNOTATION = "fleetplace.dev/score-source"
# The longest a query may take: Prometheus is asked to give up by then too.
MAX_QUERY_TIMEOUT_S = 10.0


def query_timeout_s(source: ScoreSource) -> float:
    """The evaluation's deadline: 10 s, or the interval when that is shorter."""
    return min(source.spec.interval_s, MAX_QUERY_TIMEOUT_S)


@dataclass(frozen=True, slots=True)
class PublishedScore:
    """What the scores topic holds under one key: the score items and `validUntil` (POSIX seconds;
    None when the object has none)."""

    scores: Mapping[str, int]
    valid_until: float | None


@dataclass(frozen=True, slots=True)
class ScoreRecord:
    """One AddOnPlacementScore to publish to `scores`, and what it will read as once published."""

    key: str
    cluster: str
    value: dict[str, Any]
    published: PublishedScore


def score_key(cluster: str, resource: str) -> str:
    """The scores topic key: `<cluster namespace>/<resource name>` (docs/topics.md)."""
    return f"{cluster}/{resource}"


def _valid_until(now: datetime, valid_for_s: float) -> datetime:
    # Kubernetes writes times in whole seconds: the fraction is dropped, as metav1.Time does
    return (now + timedelta(seconds=valid_for_s)).replace(microsecond=0)


def score_object(source: ScoreSource, cluster: str, score: int, valid_until: datetime) -> dict[str, Any]:
    """The AddOnPlacementScore of one cluster, as an OCM addon would write it."""
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "AddOnPlacementScore",
        "metadata": {
            "namespace": cluster,
            "name": source.spec.score.resource,
            "annotations": {SOURCE_ANNOTATION: source.key},
        },
        "status": {
            "scores": [{"name": source.spec.score.name, "value": score}],
            "validUntil": valid_until.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    }


def published_score(value: Mapping[str, Any] | None) -> PublishedScore | None:
    """What a scores-topic record says, as far as refreshing goes (None: a tombstone or no
    AddOnPlacementScore)."""
    if value is None:
        return None
    status = value.get("status")
    if not isinstance(status, Mapping):
        return PublishedScore({}, None)
    items = status.get("scores")
    scores = {
        str(item.get("name")): item["value"]
        for item in (items if isinstance(items, list) else [])
        if isinstance(item, Mapping) and isinstance(item.get("value"), int)
    }
    until = status.get("validUntil")
    at: float | None = None
    if isinstance(until, str):
        try:
            at = datetime.fromisoformat(until.replace("Z", "+00:00")).timestamp()
        except ValueError:
            at = None
    return PublishedScore(scores, at)


def plan_scores(
    source: ScoreSource,
    scores: Mapping[str, int],
    published: Mapping[str, PublishedScore],
    now: datetime,
) -> list[ScoreRecord]:
    """The records to publish for one evaluation's `scores` (cluster → score) at `now`.

    A cluster's score is published when the scores topic holds none for it, holds another value
    for the source's score name or other score items, or holds a `validUntil` that comes before
    the next evaluation has had its full time (interval + query timeout) to refresh it."""
    spec = source.spec
    resource, name = spec.score.resource, spec.score.name
    refresh_by = now.timestamp() + spec.interval_s + query_timeout_s(source)
    until = _valid_until(now, spec.valid_for_s)
    until_ts = until.timestamp()
    out: list[ScoreRecord] = []
    for cluster in sorted(scores):
        score = scores[cluster]
        key = score_key(cluster, resource)
        held = published.get(key)
        if (
            held is not None
            and held.scores == {name: score}
            and held.valid_until is not None
            and math.isfinite(held.valid_until)
            and held.valid_until >= refresh_by
        ):
            continue
        out.append(
            ScoreRecord(
                key,
                cluster,
                score_object(source, cluster, score, until),
                PublishedScore({name: score}, until_ts),
            )
        )
    return out
