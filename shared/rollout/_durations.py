"""Durations as OCM reads them: Go's `time.ParseDuration` and the progressDeadline check.

Durations are whole nanoseconds held in a signed 64-bit range, like Go's `time.Duration`.
"The largest duration" is what OCM uses for "no deadline", so a deadline written as exactly that
many nanoseconds also means none.
"""

from __future__ import annotations

import re
from typing import Final

from ._errors import DurationError

MAX_DURATION: Final = (1 << 63) - 1
NO_DEADLINE: Final = MAX_DURATION

_UNITS: Final = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek small letter mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}

# OCM's pattern for a progressDeadline. It is not anchored at both ends: the first branch only
# needs the text to *start* with digits and one of `h`, `|`, `m`, `s`; the second only needs it
# to *end* with `None`. Whatever passes then goes through the duration parser.
_DEADLINE_PATTERN: Final = re.compile(r"^(([0-9])+[h|m|s])|None\Z")


def go_quote(text: str) -> str:
    """Quote `text` the way Go's time package does in its error messages."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if code >= 0x80 or code < 0x20:
            out.extend(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogateescape"))
        elif ch in '"\\':
            out.append("\\" + ch)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _invalid(original: str) -> DurationError:
    return DurationError(f"time: invalid duration {go_quote(original)}")


def _leading_int(text: str) -> tuple[int, str]:
    """Consume leading ASCII digits; raises on a value past 2**63."""
    i = 0
    value = 0
    while i < len(text) and "0" <= text[i] <= "9":
        if value > (1 << 63) // 10:
            raise OverflowError
        value = value * 10 + ord(text[i]) - 48
        if value > 1 << 63:
            raise OverflowError
        i += 1
    return value, text[i:]


def _leading_fraction(text: str) -> tuple[int, float, str]:
    """Consume leading digits after a point; past 2**63 the extra digits only lose precision."""
    i = 0
    value = 0
    scale = 1.0
    overflow = False
    while i < len(text) and "0" <= text[i] <= "9":
        if not overflow:
            if value > ((1 << 63) - 1) // 10:
                overflow = True
            else:
                candidate = value * 10 + ord(text[i]) - 48
                if candidate > 1 << 63:
                    overflow = True
                else:
                    value = candidate
                    scale *= 10
        i += 1
    return value, scale, text[i:]


def parse_go_duration(text: str) -> int:
    """Nanoseconds of a Go duration string (`"1h30m"`, `"90ms"`, `"-1.5s"`, `"0"`).

    Raises DurationError with Go's message when the text is not a duration or overflows.
    """
    original = text
    negative = False
    if text and text[0] in "+-":
        negative = text[0] == "-"
        text = text[1:]
    if text == "0":
        return 0
    if text == "":
        raise _invalid(original)
    total = 0
    while text:
        if not (text[0] == "." or "0" <= text[0] <= "9"):
            raise _invalid(original)
        before = len(text)
        try:
            whole, text = _leading_int(text)
        except OverflowError:
            raise _invalid(original) from None
        had_whole = before != len(text)
        fraction, scale, had_fraction = 0, 1.0, False
        if text and text[0] == ".":
            text = text[1:]
            before = len(text)
            fraction, scale, text = _leading_fraction(text)
            had_fraction = before != len(text)
        if not had_whole and not had_fraction:
            raise _invalid(original)
        i = 0
        while i < len(text) and not (text[i] == "." or "0" <= text[i] <= "9"):
            i += 1
        if i == 0:
            raise DurationError(f"time: missing unit in duration {go_quote(original)}")
        unit_text, text = text[:i], text[i:]
        unit = _UNITS.get(unit_text)
        if unit is None:
            raise DurationError(f"time: unknown unit {go_quote(unit_text)} in duration {go_quote(original)}")
        if whole > (1 << 63) // unit:
            raise _invalid(original)
        whole *= unit
        if fraction > 0:
            # Go adds the fraction in floating point, truncated towards zero.
            whole += int(float(fraction) * (float(unit) / scale))
            if whole > 1 << 63:
                raise _invalid(original)
        total += whole
        if total > 1 << 63:
            raise _invalid(original)
    if negative:
        return -total
    if total > MAX_DURATION:
        raise _invalid(original)
    return total


def parse_progress_deadline(text: str | None) -> int:
    """The deadline in nanoseconds, or NO_DEADLINE for absent, `""` and `"None"`."""
    if text is None or text in ("", "None"):
        return NO_DEADLINE
    if _DEADLINE_PATTERN.search(text) is None:
        raise DurationError("invalid timeout format")
    return parse_go_duration(text)
