"""A Prometheus answer → one value per cluster; what publishes nothing and what is skipped."""

from __future__ import annotations

import orjson
import pytest

from fleetplace.shared.scoring import EvaluationError, Reason, read_vector
from tests.scoring.builders import vector_answer


def test_one_value_per_cluster() -> None:
    got = read_vector(200, vector_answer({"c1": 1.5, "c2": "20"}), "cluster")
    assert got.values == {"c1": 1.5, "c2": 20.0} and not got.skipped


def test_nan_inf_and_duplicated_clusters_are_skipped_and_counted() -> None:
    result = [
        {"metric": {"cluster": "ok"}, "value": [1, "3"]},
        {"metric": {"cluster": "nan"}, "value": [1, "NaN"]},
        {"metric": {"cluster": "up"}, "value": [1, "+Inf"]},
        {"metric": {"cluster": "down"}, "value": [1, "-Inf"]},
        {"metric": {"cluster": "twice", "instance": "a"}, "value": [1, "1"]},
        {"metric": {"cluster": "twice", "instance": "b"}, "value": [1, "2"]},
        {"metric": {"cluster": "thrice", "instance": "a"}, "value": [1, "1"]},
        {"metric": {"cluster": "thrice", "instance": "b"}, "value": [1, "1"]},
        {"metric": {"cluster": "thrice", "instance": "c"}, "value": [1, "1"]},
        {"metric": {"cluster": "a/b"}, "value": [1, "1"]},
    ]
    body = orjson.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})
    got = read_vector(200, body, "cluster")
    assert got.values == {"ok": 3.0}
    assert dict(got.skipped) == {"nan": 1, "inf": 2, "duplicate": 5, "invalid-name": 1}


def _error(status: int, body: bytes, label: str = "cluster") -> EvaluationError:
    with pytest.raises(EvaluationError) as caught:
        read_vector(status, body, label)
    return caught.value


def test_a_series_without_the_cluster_label_fails_the_whole_answer() -> None:
    error = _error(200, vector_answer({"c1": 1}, label="instance"))
    assert error.reason is Reason.MISSING_CLUSTER_LABEL and "'cluster'" in error.message


@pytest.mark.parametrize(
    ("status", "body", "reason", "says"),
    [
        (
            400,
            b'{"status":"error","errorType":"bad_data","error":"parse error at char 5"}',
            Reason.QUERY,
            "bad_data: parse error",
        ),
        (
            503,
            b'{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}',
            Reason.TIMEOUT,
            "timed out",
        ),
        (
            200,
            b'{"status":"success","data":{"resultType":"matrix","result":[]}}',
            Reason.RESULT_TYPE,
            "matrix",
        ),
        (
            200,
            b'{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}',
            Reason.RESULT_TYPE,
            "scalar",
        ),
        (502, b"<html>Bad Gateway</html>", Reason.HTTP, "HTTP 502"),
        (200, b"<html>a login page</html>", Reason.BAD_RESPONSE, "not JSON"),
        (200, b'{"hello": "world"}', Reason.BAD_RESPONSE, "no data"),
        (
            200,
            b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}}',
            Reason.BAD_RESPONSE,
            "not [labels, [time, value]]",
        ),
    ],
)
def test_answers_that_give_no_scores(status: int, body: bytes, reason: Reason, says: str) -> None:
    error = _error(status, body)
    assert error.reason is reason and says in error.message


def test_an_empty_vector_is_a_success_with_no_clusters() -> None:
    got = read_vector(200, vector_answer({}), "cluster")
    assert got.values == {} and not got.skipped
