"""Codec: UTF-8 keys, JSON values, tombstones, and the decode limits that stop hostile input."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import BaseModel

from fleetplace.shared.bus.codec import (
    DecodeLimits,
    decode_json,
    decode_key,
    decode_object,
    decode_record,
    encode_json,
    encode_value,
)
from fleetplace.shared.bus.errors import (
    InvalidKeyError,
    MalformedJSONError,
    NestingTooDeepError,
    RecordTooLargeError,
)
from fleetplace.shared.bus.records import Record, decode_key_lossless


def _record(key: bytes | None, value: bytes | None) -> Record:
    return Record("t.clusters", 0, 7, decode_key_lossless(key), value)


def test_object_round_trips_and_null_value_is_a_tombstone() -> None:
    raw = encode_value({"metadata": {"name": "c1"}, "n": [1, 2.5, True, None]})
    assert raw is not None
    assert decode_object(raw) == {"metadata": {"name": "c1"}, "n": [1, 2.5, True, None]}
    assert encode_value(None) is None
    assert decode_object(None) is None


def test_encodes_datetimes_in_utc_with_z_and_pydantic_models_by_alias() -> None:
    class Model(BaseModel):
        group_name: str

        model_config = {"alias_generator": lambda s: "groupName", "populate_by_name": True}

    at = datetime(2026, 11, 22, 5, 0, tzinfo=UTC)
    assert (
        encode_json({"at": at, "m": Model(group_name="a")})
        == b'{"at":"2026-11-22T05:00:00Z","m":{"groupName":"a"}}'
    )


def test_json_null_body_is_not_a_tombstone() -> None:
    with pytest.raises(MalformedJSONError, match="got null"):
        decode_object(b"null")


def test_value_must_be_an_object() -> None:
    with pytest.raises(MalformedJSONError, match="got list"):
        decode_object(b"[1]")


def test_malformed_json_reports_reason() -> None:
    with pytest.raises(MalformedJSONError, match="not valid JSON") as info:
        decode_object(b'{"a": ')
    assert info.value.reason.startswith("value is not valid JSON")


def test_record_above_size_limit_is_rejected_before_parsing() -> None:
    limits = DecodeLimits(max_record_bytes=100)
    with pytest.raises(RecordTooLargeError, match="101 bytes, above the limit of 100"):
        decode_json(b"[" + b" " * 99 + b"]", limits)
    assert decode_json(b"[" + b" " * 98 + b"]", limits) == []


def test_nesting_above_depth_limit_is_rejected() -> None:
    limits = DecodeLimits(max_depth=5)
    assert decode_json(b"[[[[[1]]]]]", limits) == [[[[[1]]]]]
    with pytest.raises(NestingTooDeepError, match="deeper than 5"):
        decode_json(b'{"a":[[[[{}]]]]}', limits)


def test_nesting_beyond_orjsons_own_limit_is_a_depth_error_not_a_crash() -> None:
    hostile = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(NestingTooDeepError):
        decode_json(hostile)


def test_wide_values_within_limits_decode() -> None:
    wide = encode_json({f"c{i}": {"labels": {"a": "b"}} for i in range(2000)})
    decoded = decode_json(wide)
    assert isinstance(decoded, dict) and len(decoded) == 2000


def test_keys_are_strict_utf8_but_kept_losslessly_in_records() -> None:
    assert decode_key(b"ns1/demo") == "ns1/demo"
    with pytest.raises(InvalidKeyError, match=r"^key is not UTF-8 at byte 0$"):
        decode_key(b"\xff\xfe")
    record = _record(b"ns/\xff\xfe", b"{}")
    assert record.key_bytes == b"ns/\xff\xfe"
    with pytest.raises(InvalidKeyError, match=r"^key is not UTF-8 at byte 3$"):
        decode_record(record)


@pytest.mark.parametrize(
    ("value", "at"),
    [(b"\x89PNG\r\n\x1a\n", 0), (b'{"name": "caf\xe9"}', 13), (b'{"k": "\xed\xa0\x80"}', 7)],
    ids=["binary", "latin-1", "encoded-surrogate"],
)
def test_a_value_that_is_not_utf8_is_said_by_the_byte_it_breaks_at(value: bytes, at: int) -> None:
    with pytest.raises(MalformedJSONError) as raised:
        decode_record(_record(b"ns/c1", value))
    assert raised.value.reason == f"value is not UTF-8 at byte {at}"  # not orjson's "surrogates"


def test_decode_record_requires_a_key_and_passes_tombstones() -> None:
    with pytest.raises(InvalidKeyError, match="no key"):
        decode_record(_record(None, b"{}"))
    decoded = decode_record(_record(b"c1", None))
    assert decoded.key == "c1" and decoded.is_tombstone


def test_limits_come_from_settings() -> None:
    from fleetplace.shared.settings import Settings

    limits = DecodeLimits.from_settings(Settings(max_record_bytes=10, max_json_depth=3))
    assert limits == DecodeLimits(max_record_bytes=10, max_depth=3)
