"""What people read when input is bad: plain words from one place (shared/wording.py), never
pydantic's phrasing, a bytes repr, or aiohttp's `ssl:default` for a plain-http address."""

from __future__ import annotations

import asyncio
import socket

import aiohttp
import pytest
from pydantic import BaseModel, Field, ValidationError, field_validator

from fleetplace.services.rollout.core import InvalidRecord, RolloutProcessor
from fleetplace.services.scores.prometheus import query
from fleetplace.shared.api.objects import ObjectError, parse_object
from fleetplace.shared.bus.topics import ROLLOUT_STATUS
from fleetplace.shared.scoring import EvaluationError, read_vector
from fleetplace.shared.wording import not_utf8, plain, problems, text_of

PYDANTIC_PHRASES = ("Value error", "should have", "should be", "Input should", "String should")


class Sample(BaseModel):
    name: str = Field(min_length=1)
    code: str = Field(default="ab", min_length=2, max_length=3)
    items: list[int] = Field(default=[1], min_length=1)
    weight: int = Field(default=0, ge=-10, le=10)
    mode: str = "Additive"

    @field_validator("mode")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in ("Additive", "Exact"):
            raise ValueError(f"mode must be Additive or Exact, got {v!r}")
        return v


def errors_of(**values: object) -> list[str]:
    with pytest.raises(ValidationError) as raised:
        Sample.model_validate(values)
    return [plain(e) for e in raised.value.errors()]


@pytest.mark.parametrize(
    ("values", "said"),
    [
        ({"name": ""}, "must not be empty"),
        ({"name": "a", "code": "x"}, "must have at least 2 characters"),
        ({"name": "a", "code": "xxxx"}, "must have at most 3 characters"),
        ({"name": "a", "items": []}, "must not be empty"),
        ({"name": "a", "weight": 11}, "must be less than or equal to 10"),
        ({"name": "a", "weight": "x"}, "not a valid integer"),
        ({"name": "a", "mode": "Addtive"}, "mode must be Additive or Exact, got 'Addtive'"),
        ({}, "required"),
        ({"name": 3}, "must be a string"),
    ],
)
def test_each_error_is_said_in_plain_words(values: dict[str, object], said: str) -> None:
    assert errors_of(**values) == [said]


def test_problems_locate_each_error_by_its_field_path() -> None:
    with pytest.raises(ValidationError) as raised:
        Sample.model_validate({"name": "", "items": [1, "x"]})
    assert problems(raised.value) == "name: must not be empty; items[1]: not a valid integer"


def test_a_published_document_says_what_is_wrong_without_pydantic_phrasing() -> None:
    rollout = {
        "apiVersion": "fleetplace.dev/v1alpha1",
        "kind": "Rollout",
        "metadata": {"namespace": "apps", "name": "api"},
        "spec": {"revision": "", "placementRefs": [{"name": "api"}, {"name": "api"}]},
    }
    with pytest.raises(ObjectError) as raised:
        parse_object(rollout, "rollout.yaml")
    said = str(raised.value)
    assert "spec.revision: must not be empty" in said, said
    assert not any(phrase in said for phrase in PYDANTIC_PHRASES), said


def test_a_dead_lettered_report_says_what_is_wrong_without_pydantic_phrasing() -> None:
    bad = {"revision": "", "status": "Succeeded", "lastTransitionTime": "yesterday"}
    with pytest.raises(InvalidRecord) as raised:
        RolloutProcessor().apply(ROLLOUT_STATUS, "apps/api/edge-1", bad)
    said = str(raised.value)
    assert said == (
        "rollout-status apps/api/edge-1: revision: must not be empty; "
        "lastTransitionTime: lastTransitionTime must be an RFC 3339 date-time, got 'yesterday'"
    )


def test_bytes_are_said_by_where_they_stop_being_utf8_and_bodies_as_text() -> None:
    assert not_utf8(b"ok") is None
    assert not_utf8(b"ab\xffcd") == "not UTF-8 at byte 2"
    assert text_of(b"404 page not found\n") == "404 page not found"
    assert text_of(b"") == "(empty)"
    assert text_of(b"x" * 300, limit=10) == "x" * 9 + "…"


def test_an_http_error_shows_its_status_and_body_as_text() -> None:
    with pytest.raises(EvaluationError) as raised:
        read_vector(404, b"404 page not found\n", "cluster")
    assert raised.value.message == "HTTP 404: 404 page not found"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_refused_plain_http_connection_names_the_cause_not_ssl() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"

    async def ask() -> None:
        async with aiohttp.ClientSession() as session:
            await query(session, url, "up", 5.0)

    with pytest.raises(EvaluationError) as raised:
        asyncio.run(ask())
    said = str(raised.value)
    assert said.startswith(f"{url}: cannot connect: ") and "ssl" not in said.lower(), said
    assert "refused" in said.lower(), said
