"""CloudEvents binary-mode headers, and dead-letter records.

Binary mode keeps the payload as plain JSON in the record value and puts the
event attributes in headers (`ce_*`, per the CloudEvents Kafka binding), the way
OCM's own CloudEvents protocol does; `ce_resourceversion` is the monotonic
extension OCM uses on outputs.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from fleetplace.shared.bus.codec import CONTENT_TYPE, JSONObject, encode_json
from fleetplace.shared.bus.errors import EnvelopeError
from fleetplace.shared.bus.records import Headers, OutgoingRecord, Record

SPEC_VERSION = "1.0"
DEADLETTER_TYPE = "io.fleetplace.deadletter"

H_SPECVERSION = "ce_specversion"
H_ID = "ce_id"
H_TYPE = "ce_type"
H_SOURCE = "ce_source"
H_TIME = "ce_time"
H_SCHEMAVERSION = "ce_schemaversion"
H_RESOURCEVERSION = "ce_resourceversion"
H_CONTENT_TYPE = "content-type"


@functools.lru_cache(maxsize=1024)  # a batch writes one moment into each of its records
def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC with a `Z`; milliseconds, or microseconds when they are not whole milliseconds."""
    if moment.tzinfo is None:
        raise ValueError("ce_time needs a timezone-aware datetime")
    spec = "microseconds" if moment.microsecond % 1000 else "milliseconds"
    return moment.astimezone(UTC).isoformat(timespec=spec).replace("+00:00", "Z")


def parse_time(text: str) -> datetime:
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    if parsed.tzinfo is None:
        raise ValueError("time has no offset")
    return parsed


@dataclass(frozen=True, slots=True)
class Envelope:
    """The CloudEvents attributes of one record."""

    id: str
    type: str
    source: str
    time: datetime
    schema_version: str = "1"
    resource_version: int | None = None
    content_type: str = CONTENT_TYPE
    spec_version: str = SPEC_VERSION

    def to_headers(self) -> Headers:
        headers: list[tuple[str, bytes]] = [
            (H_SPECVERSION, self.spec_version.encode()),
            (H_ID, self.id.encode()),
            (H_TYPE, self.type.encode()),
            (H_SOURCE, self.source.encode()),
            (H_TIME, format_time(self.time).encode()),
            (H_CONTENT_TYPE, self.content_type.encode()),
            (H_SCHEMAVERSION, self.schema_version.encode()),
        ]
        if self.resource_version is not None:
            headers.append((H_RESOURCEVERSION, str(self.resource_version).encode()))
        return tuple(headers)

    @classmethod
    def from_headers(cls, headers: Headers) -> Envelope:
        """Parse the `ce_*` headers; EnvelopeError names the first missing or malformed one."""
        found: dict[str, str] = {}
        for name, raw in headers:
            if name.startswith("ce_") or name == H_CONTENT_TYPE:
                try:
                    found[name] = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise EnvelopeError(f"header {name} is not valid UTF-8") from None
        for name in (H_SPECVERSION, H_ID, H_TYPE, H_SOURCE, H_TIME):
            if not found.get(name):
                raise EnvelopeError(f"header {name} is missing")
        if found[H_SPECVERSION] != SPEC_VERSION:
            raise EnvelopeError(f"unsupported {H_SPECVERSION} {found[H_SPECVERSION]!r}")
        try:
            moment = parse_time(found[H_TIME])
        except ValueError:
            raise EnvelopeError(f"header {H_TIME} is not an RFC 3339 time: {found[H_TIME]!r}") from None
        resource_version: int | None = None
        if H_RESOURCEVERSION in found:
            try:
                resource_version = int(found[H_RESOURCEVERSION])
            except ValueError:
                raise EnvelopeError(f"header {H_RESOURCEVERSION} is not an integer") from None
        return cls(
            id=found[H_ID],
            type=found[H_TYPE],
            source=found[H_SOURCE],
            time=moment,
            schema_version=found.get(H_SCHEMAVERSION, "1"),
            resource_version=resource_version,
            content_type=found.get(H_CONTENT_TYPE, CONTENT_TYPE),
        )


class HeaderStamp:
    """The headers of many records of one type, source and time (one batch of output): only
    `ce_id` (fresh per record) and `ce_resourceversion` differ, so the rest is encoded once.
    `headers()` equals `Envelope.to_headers()` of the same attributes."""

    def __init__(self, type: str, source: str, time: datetime, schema_version: str = "1") -> None:
        self._before_id = ((H_SPECVERSION, SPEC_VERSION.encode()),)
        self._after_id = (
            (H_TYPE, type.encode()),
            (H_SOURCE, source.encode()),
            (H_TIME, format_time(time).encode()),
            (H_CONTENT_TYPE, CONTENT_TYPE.encode()),
            (H_SCHEMAVERSION, schema_version.encode()),
        )

    def headers(self, resource_version: int | None = None, id: str | None = None) -> Headers:
        out: Headers = (*self._before_id, (H_ID, (id or str(uuid.uuid4())).encode()), *self._after_id)
        if resource_version is None:
            return out
        return (*out, (H_RESOURCEVERSION, str(resource_version).encode()))


def new_envelope(
    type: str,
    source: str,
    *,
    time: datetime | None = None,
    schema_version: str = "1",
    resource_version: int | None = None,
    id: str | None = None,
) -> Envelope:
    """An envelope with a fresh id; `time` defaults to the wall clock (this is shell code, not the engine)."""
    return Envelope(
        id=id or str(uuid.uuid4()),
        type=type,
        source=source,
        time=time or datetime.now(UTC),
        schema_version=schema_version,
        resource_version=resource_version,
    )


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A record that failed, as it was, and why. Nothing is lost: the value keeps the original bytes."""

    record: Record
    error: str

    def to_value(self) -> JSONObject:
        """`{"topic", "partition", "offset", "error", "key", "value_b64", ...}`: the original bytes, base64."""
        record = self.record
        key_bytes = record.key_bytes
        body: JSONObject = {
            "topic": record.topic,
            "partition": record.partition,
            "offset": record.offset,
            "error": self.error,
            "key": None,
            "value_b64": None if record.value is None else _b64(record.value),
            "timestamp_ms": record.timestamp_ms,
            "headers": [[name, _b64(value)] for name, value in record.headers],
        }
        if key_bytes is not None:
            try:
                body["key"] = key_bytes.decode("utf-8")
            except UnicodeDecodeError:
                # Not representable as a JSON string: keep the exact bytes instead.
                body["key_b64"] = _b64(key_bytes)
        return body

    def to_record(self, *, topic: str, source: str, time: datetime | None = None) -> OutgoingRecord:
        """The record to send to the dead-letter `topic`; its Kafka key is the original key bytes."""
        envelope = new_envelope(DEADLETTER_TYPE, source, time=time)
        return OutgoingRecord(
            topic=topic,
            key=self.record.key_bytes,
            value=encode_json(self.to_value()),
            headers=envelope.to_headers(),
        )

    @classmethod
    def from_value(cls, value: JSONObject) -> DeadLetter:
        def text(name: str) -> str | None:
            item = value.get(name)
            return item if isinstance(item, str) else None

        def number(name: str) -> int:
            item = value.get(name)
            return item if isinstance(item, int) else -1

        key: str | None = text("key")
        key_b64 = text("key_b64")
        if key_b64 is not None:
            key = base64.b64decode(key_b64).decode("utf-8", "surrogateescape")
        value_b64 = text("value_b64")
        raw_headers = value.get("headers")
        headers: list[tuple[str, bytes]] = []
        if isinstance(raw_headers, list):
            for pair in raw_headers:
                if isinstance(pair, list) and len(pair) == 2:
                    name, b64 = pair
                    if isinstance(name, str) and isinstance(b64, str):
                        headers.append((name, base64.b64decode(b64)))
        return cls(
            record=Record(
                topic=text("topic") or "",
                partition=number("partition"),
                offset=number("offset"),
                key=key,
                value=None if value_b64 is None else base64.b64decode(value_b64),
                headers=tuple(headers),
                timestamp_ms=number("timestamp_ms"),
            ),
            error=text("error") or "",
        )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# What a dead letter keeps of the original (base64 makes it 4/3 larger): well under 1 MiB in all.
DEADLETTER_VALUE_BYTES = 256 * 1024
DEADLETTER_KEY_BYTES = 16 * 1024


def dead_letter(
    record: Record, error: str, *, topic: str, source: str, time: datetime | None = None
) -> OutgoingRecord:
    """`DeadLetter(record, error).to_record(topic=..., source=...)`, with the original key and
    value cut to a size that can still be produced.

    A dead letter carries the original bytes base64-encoded; for a record above the size limit
    that is larger than the producer (and Kafka's default message.max.bytes) accepts, and a
    worker that cannot send it would stop on the same record after every restart. The
    topic/partition/offset in the letter still point at the whole original."""
    cut = []
    key = record.key_bytes
    if key is not None and len(key) > DEADLETTER_KEY_BYTES:
        cut.append(f"key truncated to {DEADLETTER_KEY_BYTES} of {len(key)} bytes")
        key = key[:DEADLETTER_KEY_BYTES]
    value = record.value
    if value is not None and len(value) > DEADLETTER_VALUE_BYTES:
        cut.append(f"value truncated to {DEADLETTER_VALUE_BYTES} of {len(value)} bytes")
        value = value[:DEADLETTER_VALUE_BYTES]
    headers = record.headers
    if sum(len(k) + len(v) for k, v in headers) > DEADLETTER_KEY_BYTES:
        cut.append("headers dropped")
        headers = ()
    if cut:
        error = f"{error} ({'; '.join(cut)} in this dead letter)"
        record = dataclasses.replace(
            record,
            key=None if key is None else key.decode("utf-8", "surrogateescape"),
            value=value,
            headers=headers,
        )
    return DeadLetter(record, error).to_record(topic=topic, source=source, time=time)
