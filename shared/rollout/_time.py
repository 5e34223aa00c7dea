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
_SECONDS_PER_DAY: Final = 86_400
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)

# RFC 3339 as Go's time.Parse(time.RFC3339) reads it: fractional seconds of any length, `Z` or
# a numeric offset.
_RFC3339: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:(Z)|([+-])(\d{2}):(\d{2}))",
    re.ASCII,
)


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if _is_leap(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a date of the proleptic Gregorian calendar (any year)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146_097 + day_of_era - 719_468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """The (year, month, day) that many days after 1970-01-01 (any year)."""
    days += 719_468
    era = days // 146_097
    day_of_era = days - era * 146_097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36_524 - day_of_era // 146_096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted_month = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * shifted_month + 2) // 5 + 1
    month = shifted_month + (3 if shifted_month < 10 else -9)
    return year_of_era + era * 400 + (month <= 2), month, day


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
        """Read an RFC 3339 time (years 0000-9999, as Go reads them); raises ValueError when
        `text` is not one."""
        m = _RFC3339.fullmatch(text)
        if m is None:
            raise ValueError(f"not an RFC 3339 time: {text!r}")
        year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
        if not (
            1 <= month <= 12
            and 1 <= day <= _days_in_month(year, month)
            and hour < 24
            and minute < 60
            and second < 60
            and (m.group(9) is None or (int(m.group(10)) <= 24 and int(m.group(11)) <= 60))
        ):
            raise ValueError(f"not an RFC 3339 time: {text!r}")
        seconds = _days_from_civil(year, month, day) * _SECONDS_PER_DAY + hour * 3600 + minute * 60 + second
        if m.group(9) is not None:
            offset = int(m.group(10)) * 3600 + int(m.group(11)) * 60
            seconds -= offset if m.group(9) == "+" else -offset
        fraction = m.group(7) or ""
        nanos = int((fraction + "000000000")[:9]) if fraction else 0
        return cls(seconds * NANOS_PER_SECOND + nanos)

    def plus(self, nanos: int) -> Instant:
        return Instant(self.unix_nanos + nanos)

    def to_datetime(self) -> datetime:
        """The instant as an aware UTC datetime (below a microsecond is dropped)."""
        return _EPOCH + timedelta(microseconds=self.unix_nanos // 1_000)

    def rfc3339(self, *, fraction: bool = True) -> str:
        """UTC with `Z`; a fraction only when there is one, without trailing zeros. Without
        `fraction`, whole seconds (the fraction truncated), as Kubernetes writes a `metav1.Time`.
        The year has at least four digits (more past 9999, a sign before year 0)."""
        seconds, nanos = divmod(self.unix_nanos, NANOS_PER_SECOND)
        days, clock = divmod(seconds, _SECONDS_PER_DAY)
        year, month, day = _civil_from_days(days)
        hour, rest = divmod(clock, 3600)
        minute, second = divmod(rest, 60)
        sign = "-" if year < 0 else ""
        text = f"{sign}{abs(year):04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"
        if nanos and fraction:
            text += "." + f"{nanos:09d}".rstrip("0")
        return text + "Z"

    def __str__(self) -> str:
        return self.rfc3339()


def as_instant(moment: datetime | Instant) -> Instant:
    return moment if isinstance(moment, Instant) else Instant.from_datetime(moment)
