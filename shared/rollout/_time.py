"""Instants with nanosecond resolution.

OCM compares times to the nanosecond (a `"1s5ns"` deadline is valid), which `datetime` cannot
hold, so the engine works on whole nanoseconds since the Unix epoch and converts at the edges.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

NANOS_PER_SECOND: Final = 1_000_000_000
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)

# RFC 3339 as Go's time.Parse(time.RFC3339) reads it: fractional seconds of any length, `Z` or
# a numeric offset.
_RFC3339: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)


@dataclass(frozen=True, order=True, slots=True)
class Instant:
    """A point in time, as nanoseconds since 1970-01-01T00:00:00Z."""

    unix_nanos: int

    @classmethod
    def from_datetime(cls, moment: datetime) -> Instant:
        """Naive datetimes are taken as UTC."""
        aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
        delta = aware - _EPOCH
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        return cls(micros * 1_000)

    @classmethod
    def parse(cls, text: str) -> Instant:
        """Read an RFC 3339 time; raises ValueError when `text` is not one."""
        m = _RFC3339.fullmatch(text)
        if m is None:
            raise ValueError(f"not an RFC 3339 time: {text!r}")
        year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
        whole = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
        if m.group(9) is not None:
            offset = timedelta(hours=int(m.group(10)), minutes=int(m.group(11)))
            whole -= offset if m.group(9) == "+" else -offset
        fraction = m.group(7) or ""
        nanos = int((fraction + "000000000")[:9]) if fraction else 0
        return cls(Instant.from_datetime(whole).unix_nanos + nanos)

    def plus(self, nanos: int) -> Instant:
        return Instant(self.unix_nanos + nanos)

    def to_datetime(self) -> datetime:
        """The instant as an aware UTC datetime (below a microsecond is dropped)."""
        return _EPOCH + timedelta(microseconds=self.unix_nanos // 1_000)

    def rfc3339(self) -> str:
        """UTC with `Z`; a fraction only when there is one, without trailing zeros."""
        seconds, nanos = divmod(self.unix_nanos, NANOS_PER_SECOND)
        whole = _EPOCH + timedelta(seconds=seconds)
        text = (
            f"{whole.year:04d}-{whole.month:02d}-{whole.day:02d}"
            f"T{whole.hour:02d}:{whole.minute:02d}:{whole.second:02d}"
        )
        if nanos:
            text += "." + f"{nanos:09d}".rstrip("0")
        return text + "Z"

    def __str__(self) -> str:
        return self.rfc3339()


def as_instant(moment: datetime | Instant) -> Instant:
    return moment if isinstance(moment, Instant) else Instant.from_datetime(moment)
