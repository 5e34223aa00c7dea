"""maxFailures and maxConcurrency: an integer, or a percentage of a total.

A percentage's number is read like Go's `strconv.ParseFloat` (so `"5.5%"`, `"1e2%"`, `"-10%"`,
`"0x1p3%"` and `"inf%"` are numbers) and rounded up over the total. A result that is not
positive or exceeds the total falls back to a default, so `"200%"` or `-1` mean "the default".
"""

from __future__ import annotations

import math
import re
from typing import Final

from ._errors import ThresholdError

IntOrString = int | str

_DECIMAL: Final = re.compile(r"[+-]?(?:[0-9_]+(?:\.[0-9_]*)?|\.[0-9_]+)(?:[eE][+-]?[0-9][0-9_]*)?")
_HEX: Final = re.compile(
    r"[+-]?0[xX](?:[0-9a-fA-F_]+(?:\.[0-9a-fA-F_]*)?|\.[0-9a-fA-F_]+)[pP][+-]?[0-9][0-9_]*"
)
# Case is ignored for ASCII letters only ("ınf" with a dotless i is not infinity).
_INFINITY: Final = re.compile(r"[+-]?(?:inf|infinity)", re.IGNORECASE | re.ASCII)
_NAN: Final = re.compile(r"nan", re.IGNORECASE | re.ASCII)
_ESCAPES: Final = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_strconv_quote(text: str) -> str:
    """Quote `text` like Go's `strconv.Quote` (used in its number parsers' messages)."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch == " " or (ch.isprintable() and code != 0x7F):
            out.append(ch)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _underscores_ok(text: str) -> bool:
    """Go's rule: an underscore only between digits, or between a base prefix and a digit."""
    saw = "^"
    i = 0
    if text[:1] in ("+", "-"):
        text = text[1:]
    hexadecimal = False
    if len(text) >= 2 and text[0] == "0" and text[1].lower() in "box":
        i = 2
        saw = "0"
        hexadecimal = text[1].lower() == "x"
    while i < len(text):
        ch = text[i]
        if "0" <= ch <= "9" or (hexadecimal and "a" <= ch.lower() <= "f"):
            saw = "0"
        elif ch == "_":
            if saw != "0":
                return False
            saw = "_"
        else:
            if saw == "_":
                return False
            saw = "!"
        i += 1
    return saw != "_"


def _syntax_error(text: str) -> ThresholdError:
    return ThresholdError(f"strconv.ParseFloat: parsing {go_strconv_quote(text)}: invalid syntax")


def parse_go_float(text: str) -> float:
    """A float64 from `text` as Go's `strconv.ParseFloat(text, 64)` reads it, or its error."""
    if _INFINITY.fullmatch(text):
        return -math.inf if text.startswith("-") else math.inf
    if _NAN.fullmatch(text):
        return math.nan
    hexadecimal = _HEX.fullmatch(text) is not None
    if not hexadecimal:
        mantissa = re.split(r"[eE]", text, maxsplit=1)[0]
        if _DECIMAL.fullmatch(text) is None or not any(c.isdigit() for c in mantissa):
            raise _syntax_error(text)
    elif not any(c in "0123456789abcdefABCDEF" for c in re.split(r"[pP]", text[text.index("0") + 2 :])[0]):
        raise _syntax_error(text)
    if "_" in text and not _underscores_ok(text):
        raise _syntax_error(text)
    plain = text.replace("_", "")
    try:
        value = float.fromhex(plain) if hexadecimal else float(plain)
    except OverflowError:
        value = math.inf
    if math.isinf(value):
        raise ThresholdError(f"strconv.ParseFloat: parsing {go_strconv_quote(text)}: value out of range")
    return value


def check_threshold(value: IntOrString) -> None:
    """Raise ThresholdError unless `value` is an integer or a parseable percentage."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ThresholdError(f"invalid maximum threshold type {value!r}")
    if isinstance(value, str):
        if not value.endswith("%"):
            raise ThresholdError(
                f"'{value}' is an invalid maximum threshold value: string is not a percentage"
            )
        parse_go_float(value[:-1])


def threshold_of(value: IntOrString, total: int, default: int) -> int:
    """The threshold `value` over `total` clusters; `default` when it is not in 1..total.

    A percentage is `ceil(p / 100 * total)` in floating point, in that order, so `"7%"` of 100
    is 8 (0.07 * 100 is a little above 7).
    """
    check_threshold(value)
    if isinstance(value, str):
        scaled = parse_go_float(value[:-1]) / 100 * float(total)
        if not math.isfinite(scaled):
            return default
        size = math.ceil(scaled)
    else:
        size = value
    if size <= 0 or size > total:
        return default
    return size
