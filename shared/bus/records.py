"""Typed records: what the bus layer hands to workers and takes from them.

aiokafka's own record types are untyped; everything outside `fleetplace.shared.bus` sees only these.
"""

from __future__ import annotations

from dataclasses import dataclass

Headers = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class Record:
    """A record read from a topic.

    `key` is decoded from UTF-8. A key that is not valid UTF-8 is kept with
    `surrogateescape`, so `key_bytes` always gives the original bytes back;
    `fleetplace.shared.bus.codec.check_key` rejects such a key with a reason.
    """

    topic: str
    partition: int
    offset: int
    key: str | None
    value: bytes | None
    headers: Headers = ()
    timestamp_ms: int = -1

    @property
    def is_tombstone(self) -> bool:
        return self.value is None

    @property
    def key_bytes(self) -> bytes | None:
        return None if self.key is None else self.key.encode("utf-8", "surrogateescape")

    def header(self, name: str) -> bytes | None:
        """The last value of header `name`, or None."""
        found: bytes | None = None
        for k, v in self.headers:
            if k == name:
                found = v
        return found


@dataclass(frozen=True, slots=True)
class OutgoingRecord:
    """A record to produce. `key` may be bytes only to re-send a key exactly as received (dead letters)."""

    topic: str
    key: str | bytes | None
    value: bytes | None
    headers: Headers = ()
    timestamp_ms: int | None = None
    # The key the partition is chosen by when it is not the record's key (a rollout-status
    # record lands on its rollout's partition: `topics.rollout_partition`).
    partition_key: str | None = None

    @property
    def key_bytes(self) -> bytes | None:
        if self.key is None or isinstance(self.key, bytes):
            return self.key
        return self.key.encode("utf-8")


@dataclass(frozen=True, slots=True)
class Delivered:
    """Where a produced record landed."""

    topic: str
    partition: int
    offset: int


def decode_key_lossless(raw: bytes | None) -> str | None:
    return None if raw is None else raw.decode("utf-8", "surrogateescape")
