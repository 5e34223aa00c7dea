"""CloudEvents binary-mode headers and dead-letter records."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest

from fleetplace.shared.bus.envelope import DeadLetter, Envelope, HeaderStamp, dead_letter, new_envelope
from fleetplace.shared.bus.errors import EnvelopeError
from fleetplace.shared.bus.records import Record, decode_key_lossless

AT = datetime(2026, 11, 22, 5, 0, 0, 123000, tzinfo=UTC)


def test_headers_carry_cloudevents_binary_mode_attributes() -> None:
    envelope = new_envelope("io.fleetplace.decisions", "/fleetplace/scheduler", time=AT, resource_version=7)
    headers = dict(envelope.to_headers())
    assert headers["ce_specversion"] == b"1.0"
    assert headers["ce_type"] == b"io.fleetplace.decisions"
    assert headers["ce_source"] == b"/fleetplace/scheduler"
    assert headers["ce_time"] == b"2026-11-22T05:00:00.123Z"
    assert headers["content-type"] == b"application/json"
    assert headers["ce_schemaversion"] == b"1"
    assert headers["ce_resourceversion"] == b"7"
    assert len(headers["ce_id"]) == 36


@pytest.mark.parametrize("resource_version", [None, 0, 42])
def test_a_header_stamp_gives_the_envelope_headers(resource_version: int | None) -> None:
    stamp = HeaderStamp("io.fleetplace.decisions", "/fleetplace/scheduler", AT)
    stamped = stamp.headers(resource_version, id="e1")
    envelope = new_envelope(
        "io.fleetplace.decisions",
        "/fleetplace/scheduler",
        time=AT,
        resource_version=resource_version,
        id="e1",
    )
    assert stamped == envelope.to_headers()
    assert Envelope.from_headers(stamped) == envelope
    ids = {dict(stamp.headers(resource_version))["ce_id"] for _ in range(3)}
    assert len(ids) == 3  # a fresh id per record


def test_headers_round_trip() -> None:
    envelope = new_envelope("t", "/s", time=AT, schema_version="2")
    assert Envelope.from_headers(envelope.to_headers()) == envelope


def test_resource_version_is_optional() -> None:
    assert "ce_resourceversion" not in dict(new_envelope("t", "/s").to_headers())


@pytest.mark.parametrize("missing", ["ce_specversion", "ce_id", "ce_type", "ce_source", "ce_time"])
def test_missing_required_header_is_named(missing: str) -> None:
    headers = tuple(h for h in new_envelope("t", "/s").to_headers() if h[0] != missing)
    with pytest.raises(EnvelopeError, match=missing):
        Envelope.from_headers(headers)


def test_bad_time_header_is_rejected() -> None:
    headers = tuple(
        (k, b"yesterday" if k == "ce_time" else v) for k, v in new_envelope("t", "/s").to_headers()
    )
    with pytest.raises(EnvelopeError, match="RFC 3339"):
        Envelope.from_headers(headers)


def test_dead_letter_keeps_original_key_value_and_headers() -> None:
    original = Record(
        "t.scores",
        2,
        41,
        "ns/score",
        b'{"broken": ',
        headers=(("ce_id", b"x"), ("x-bin", b"\x00\xff")),
        timestamp_ms=5,
    )
    out = dead_letter(
        original, "value is not valid JSON", topic="t.deadletter", source="/fleetplace/scheduler"
    )
    assert out.topic == "t.deadletter"
    assert out.key_bytes == b"ns/score"
    assert out.value is not None
    body = orjson.loads(out.value)
    assert {k: body[k] for k in ("topic", "partition", "offset", "error", "key")} == {
        "topic": "t.scores",
        "partition": 2,
        "offset": 41,
        "error": "value is not valid JSON",
        "key": "ns/score",
    }
    assert DeadLetter.from_value(body) == DeadLetter(original, "value is not valid JSON")
    assert dict(out.headers)["ce_type"] == b"io.fleetplace.deadletter"


def test_dead_letter_of_invalid_utf8_key_and_tombstone_loses_nothing() -> None:
    original = Record("t.clusters", 0, 3, decode_key_lossless(b"\xc3\x28"), None)
    out = dead_letter(original, "key is not valid UTF-8", topic="t.deadletter", source="/s")
    assert out.key_bytes == b"\xc3\x28"
    assert out.value is not None
    body = orjson.loads(out.value)
    assert body["key"] is None and body["value_b64"] is None and body["key_b64"] == "wyg="
    assert DeadLetter.from_value(body).record.key_bytes == b"\xc3\x28"


def test_a_dead_letter_of_an_oversized_record_keeps_its_start_and_says_what_was_cut() -> None:
    from fleetplace.shared.bus.envelope import DEADLETTER_KEY_BYTES, DEADLETTER_VALUE_BYTES

    big = Record("t", 3, 9, "k" * (DEADLETTER_KEY_BYTES + 1), b"v" * (DEADLETTER_VALUE_BYTES + 5), ())
    out = dead_letter(big, "too big", topic="dlq", source="test")
    assert out.value is not None and len(out.value) < 1024 * 1024
    letter = DeadLetter.from_value(orjson.loads(out.value))
    assert (letter.record.topic, letter.record.partition, letter.record.offset) == ("t", 3, 9)
    assert letter.record.value == b"v" * DEADLETTER_VALUE_BYTES
    assert "key truncated" in letter.error and "value truncated" in letter.error
    assert letter.error.startswith("too big")
