"""Record keys and values: UTF-8 keys, orjson JSON values, a null value is a tombstone.

Decoding is defensive: a size limit is checked before parsing and a nesting limit
right after, so a hostile record costs at most `max_record_bytes` of parsing and
is rejected with a reason (which ends up in the dead-letter record).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import orjson
from pydantic import BaseModel

from fleetplace.shared.bus.errors import (
    DecodeError,
    InvalidKeyError,
    MalformedJSONError,
    NestingTooDeepError,
    RecordTooLargeError,
)
from fleetplace.shared.bus.records import Record
from fleetplace.shared.settings import Settings
from fleetplace.shared.wording import not_utf8

JSONValue = Union[dict[str, "JSONValue"], list["JSONValue"], str, int, float, bool, None]  # noqa: UP007
JSONObject = dict[str, JSONValue]

CONTENT_TYPE = "application/json"
DEFAULT_MAX_RECORD_BYTES = 1024 * 1024
DEFAULT_MAX_JSON_DEPTH = 64

_ENCODE_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS


@dataclass(frozen=True, slots=True)
class DecodeLimits:
    """Upper bounds applied to every decoded value."""

    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    max_depth: int = DEFAULT_MAX_JSON_DEPTH

    @classmethod
    def from_settings(cls, settings: Settings) -> DecodeLimits:
        """FLEETPLACE_MAX_RECORD_BYTES and FLEETPLACE_MAX_JSON_DEPTH."""
        return cls(max_record_bytes=settings.max_record_bytes, max_depth=settings.max_json_depth)


DEFAULT_LIMITS = DecodeLimits()


def _default(obj: object) -> object:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json", by_alias=True, exclude_none=False)
    if isinstance(obj, frozenset | set | tuple):
        return list(obj)
    raise TypeError(f"cannot encode {type(obj).__name__} as JSON")


def encode_json(value: object, *, sort_keys: bool = False) -> bytes:
    """Encode a value (plain JSON data, dataclasses, datetimes, pydantic models) as compact JSON."""
    options = _ENCODE_OPTIONS | (orjson.OPT_SORT_KEYS if sort_keys else 0)
    return orjson.dumps(value, default=_default, option=options)


def encode_value(value: object | None) -> bytes | None:
    """A record value: JSON, or None for a tombstone."""
    return None if value is None else encode_json(value)


def encode_key(key: str) -> bytes:
    return key.encode("utf-8")


def decode_key(raw: bytes | None) -> str | None:
    """Strict UTF-8 key decoding."""
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidKeyError(f"key is {not_utf8(raw)}") from None


def check_key(record: Record, *, required: bool = True) -> str | None:
    """The record's key, if it is present (when required) and valid UTF-8; else InvalidKeyError."""
    key = record.key
    if key is None:
        if required:
            raise InvalidKeyError("record has no key")
        return None
    if not key.isascii():  # ASCII (nearly every key) is UTF-8: no encoding to try
        try:
            key.encode("utf-8")
        except UnicodeEncodeError:
            # the bytes as received (Record keeps them with surrogateescape)
            raise InvalidKeyError(f"key is {not_utf8(record.key_bytes or b'')}") from None
    if required and not key:
        raise InvalidKeyError("record key is empty")
    return key


def _check_depth(value: JSONValue, max_depth: int) -> None:
    # Iterative, so a deep value cannot exhaust the Python stack either.
    stack: list[tuple[JSONValue, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: list[JSONValue] | None = list(node.values())
        elif isinstance(node, list):
            children = node
        else:
            children = None
        if children is None:
            continue
        if depth > max_depth:
            raise NestingTooDeepError(f"JSON nests deeper than {max_depth} levels")
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))


def decode_json(
    raw: bytes | bytearray | memoryview | str, limits: DecodeLimits = DEFAULT_LIMITS
) -> JSONValue:
    """Parse JSON within the limits; DecodeError (a subclass) says what is wrong."""
    # a str is encoded once, bytes (what records carry) are used as they are
    text = raw.encode("utf-8") if isinstance(raw, str) else raw
    size = len(text)
    if size > limits.max_record_bytes:
        raise RecordTooLargeError(f"value is {size} bytes, above the limit of {limits.max_record_bytes}")
    try:
        value: JSONValue = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        # orjson's own limit is 1024 levels; report it like ours.
        if "depth limit" in str(exc) or "recursion" in str(exc).lower():
            raise NestingTooDeepError(f"JSON nests deeper than {limits.max_depth} levels") from None
        # orjson says "surrogates not allowed" for any byte that is not UTF-8: say where instead
        undecodable = not_utf8(text) if "UTF-8" in str(exc) else None
        if undecodable is not None:
            raise MalformedJSONError(f"value is {undecodable}") from None
        raise MalformedJSONError(f"value is not valid JSON: {exc}") from None
    # nesting needs one bracket per level: with fewer brackets than the limit in the whole text,
    # the walk cannot find anything (most records), so skip it
    if type(text) is not bytes:
        text = bytes(text)
    if text.count(b"[") + text.count(b"{") > limits.max_depth:
        _check_depth(value, limits.max_depth)
    return value


def decode_object(raw: bytes | None, limits: DecodeLimits = DEFAULT_LIMITS) -> JSONObject | None:
    """A record value that must be a JSON object; None for a tombstone."""
    if raw is None:
        return None
    value = decode_json(raw, limits)
    if not isinstance(value, dict):
        kind = "null" if value is None else type(value).__name__
        raise MalformedJSONError(f"value must be a JSON object, got {kind}")
    return value


class DecodedRecord:
    """A record whose key and value passed decoding (one per record read: a plain class)."""

    def __init__(self, record: Record, key: str, value: JSONObject | None) -> None:
        self.record = record
        self.key = key
        self.value = value

    def __repr__(self) -> str:
        return f"DecodedRecord(key={self.key!r}, value={self.value!r})"

    @property
    def is_tombstone(self) -> bool:
        return self.value is None


def decode_record(record: Record, limits: DecodeLimits = DEFAULT_LIMITS) -> DecodedRecord:
    """Key (required, UTF-8) and object value (or tombstone) of a record, or a DecodeError."""
    key = check_key(record)
    assert key is not None
    return DecodedRecord(record, key, decode_object(record.value, limits))


__all__ = [
    "CONTENT_TYPE",
    "DEFAULT_LIMITS",
    "DecodeError",
    "DecodeLimits",
    "DecodedRecord",
    "JSONObject",
    "JSONValue",
    "check_key",
    "decode_json",
    "decode_key",
    "decode_object",
    "decode_record",
    "encode_json",
    "encode_key",
    "encode_value",
]
