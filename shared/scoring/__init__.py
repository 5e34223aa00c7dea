"""Scores from metrics: a ScoreSource's query result → AddOnPlacementScores. Pure, no I/O.

`read_vector` turns a Prometheus answer into one value per cluster, `normalize_all` maps values to
OCM's score range, `plan_scores` picks the records worth publishing. The score worker
(`fleetplace worker scores`) and `fleetplace scores preview` call them; docs/scores.md describes
the rules.
"""

from ._errors import EvaluationError, Reason
from ._normalize import SCORE_MAX, SCORE_MIN, normalize, normalize_all, round_half_away, scores_for
from ._publish import (
    SOURCE_ANNOTATION,
    PublishedScore,
    ScoreRecord,
    plan_scores,
    published_score,
    query_timeout_s,
    score_key,
    score_object,
)
from ._vector import ClusterValues, SkipReason, read_vector

__all__ = [
    "SCORE_MAX",
    "SCORE_MIN",
    "SOURCE_ANNOTATION",
    "ClusterValues",
    "EvaluationError",
    "PublishedScore",
    "Reason",
    "ScoreRecord",
    "SkipReason",
    "normalize",
    "normalize_all",
    "plan_scores",
    "published_score",
    "query_timeout_s",
    "read_vector",
    "round_half_away",
    "score_key",
    "score_object",
    "scores_for",
]
