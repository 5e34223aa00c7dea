"""The CEL standard library: size, string predicates, ``matches``, type conversions,
timestamps and durations, and the optional-type functions (cel-go ``OptionalTypes``)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import re2  # type: ignore[import-untyped]

from fleetplace.shared.placement._cel.library import Frame, function, size_cost
from fleetplace.shared.placement._cel.operators import format_double, format_duration, no_overload
from fleetplace.shared.placement._cel.values import (
    INT64_MAX,
    INT64_MIN,
    UINT64_MAX,
    CelEvalError,
    CelOptional,
    CelType,
    Duration,
    Timestamp,
    Uint,
    type_name,
)

# -- regular expressions --------------------------------------------------------------------------
# cel-go uses Go's RE2 syntax, so RE2 itself compiles them: a look-ahead or back-reference that
# Python's `re` would accept is an error, and `[[:alpha:]]`, `\pL` or `\z` work.

_RE2_OPTIONS: Final = re2.Options()
_RE2_OPTIONS.log_errors = False


@lru_cache(maxsize=1024)
def compile_regex(pattern: str) -> Any:
    """A compiled RE2 pattern (``search``/``finditer`` like :mod:`re`); raises CelEvalError."""
    try:
        return re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as e:
        reason = e.args[0] if e.args else ""
        text = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        raise CelEvalError(f"invalid regular expression: {text}") from None


# -- size and string predicates ------------------------------------------------------------------


def _size(value: Any) -> int:
    t = type(value)
    if t is str or t is bytes or t is list or t is tuple or isinstance(value, Mapping):
        return len(value)
    no_overload("size", value)


@function("size", "(string) -> int", "(bytes) -> int", "(list) -> int", "(map) -> int")
def size_global(frame: Frame, value: Any) -> int:
    return _size(value)


@function("size", "(string) -> int", "(bytes) -> int", "(list) -> int", "(map) -> int", member=True)
def size_member(frame: Frame, value: Any) -> int:
    return _size(value)


def _strings(name: str, a: Any, b: Any) -> None:
    if type(a) is not str or type(b) is not str:
        no_overload(name, a, b)


@function("contains", "(string, string) -> bool", member=True)
def contains(frame: Frame, s: Any, sub: Any) -> bool:
    _strings("contains", s, sub)
    frame.charge(size_cost(len(s)))
    return sub in s


@function("startsWith", "(string, string) -> bool", member=True)
def starts_with(frame: Frame, s: Any, prefix: Any) -> bool:
    _strings("startsWith", s, prefix)
    frame.charge(size_cost(len(prefix)))
    return bool(s.startswith(prefix))


@function("endsWith", "(string, string) -> bool", member=True)
def ends_with(frame: Frame, s: Any, suffix: Any) -> bool:
    _strings("endsWith", s, suffix)
    frame.charge(size_cost(len(suffix)))
    return bool(s.endswith(suffix))


def _matches(frame: Frame, s: Any, pattern: Any) -> bool:
    _strings("matches", s, pattern)
    frame.charge(size_cost(len(s)) * max(1, size_cost(len(pattern))))
    return compile_regex(pattern).search(s) is not None


@function("matches", "(string, string) -> bool", member=True)
def matches_member(frame: Frame, s: Any, pattern: Any) -> bool:
    return _matches(frame, s, pattern)


@function("matches", "(string, string) -> bool")
def matches_global(frame: Frame, s: Any, pattern: Any) -> bool:
    return _matches(frame, s, pattern)


# -- conversions ---------------------------------------------------------------------------------

_INT_TEXT: Final = re.compile(r"[+-]?[0-9]+")
_FLOAT_TEXT: Final = re.compile(
    r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)", re.IGNORECASE
)


@function("int", "(int) -> int", "(uint) -> int", "(double) -> int", "(string) -> int", "(timestamp) -> int")
def to_int(frame: Frame, v: Any) -> int:
    t = type(v)
    if t is int:
        return int(v)
    if t is Uint:
        if v > INT64_MAX:
            raise CelEvalError("integer overflow")
        return int(v)
    if t is float:
        # cel-go rejects doubles outside the open int64 range
        if math.isnan(v) or not (-9.223372036854775808e18 < v < 9.223372036854775807e18):
            raise CelEvalError("integer overflow")
        return int(v)
    if t is str:
        if not _INT_TEXT.fullmatch(v):
            raise CelEvalError(f"cannot convert string '{v}' to int")
        n = int(v)
        if not INT64_MIN <= n <= INT64_MAX:
            raise CelEvalError("integer overflow")
        return n
    if t is Timestamp:
        return int(v.ns // 10**9)
    no_overload("int", v)


@function("uint", "(int) -> uint", "(uint) -> uint", "(double) -> uint", "(string) -> uint")
def to_uint(frame: Frame, v: Any) -> Uint:
    t = type(v)
    if t is Uint:
        return v  # type: ignore[no-any-return]
    if t is int:
        if v < 0:
            raise CelEvalError("unsigned integer overflow")
        return Uint(v)
    if t is float:
        if math.isnan(v) or not (-1.0 < v < 1.8446744073709552e19):
            raise CelEvalError("unsigned integer overflow")
        return Uint(int(v))
    if t is str:
        if not re.fullmatch(r"\+?[0-9]+", v):
            raise CelEvalError(f"cannot convert string '{v}' to uint")
        n = int(v)
        if n > UINT64_MAX:
            raise CelEvalError("unsigned integer overflow")
        return Uint(n)
    no_overload("uint", v)


@function("double", "(int) -> double", "(uint) -> double", "(double) -> double", "(string) -> double")
def to_double(frame: Frame, v: Any) -> float:
    t = type(v)
    if t is float:
        return v  # type: ignore[no-any-return]
    if t is int or t is Uint:
        return float(v)
    if t is str:
        if not _FLOAT_TEXT.fullmatch(v):
            raise CelEvalError(f"cannot convert string '{v}' to double")
        return float(v)
    no_overload("double", v)


def to_string_value(v: Any) -> str:
    t = type(v)
    if t is str:
        return v  # type: ignore[no-any-return]
    if t is bool:
        return "true" if v else "false"
    if t is int or t is Uint:
        return str(int(v))
    if t is float:
        return format_double(v)
    if t is bytes:
        try:
            return v.decode("utf-8")  # type: ignore[no-any-return]
        except UnicodeDecodeError:
            raise CelEvalError("invalid UTF-8 in bytes, cannot convert to string") from None
    if t is Timestamp:
        return format_timestamp(v)
    if t is Duration:
        return format_duration(v)
    text = getattr(v, "cel_string", None)
    if callable(text):
        return str(text())
    no_overload("string", v)


@function(
    "string",
    "(string) -> string",
    "(bool) -> string",
    "(int) -> string",
    "(uint) -> string",
    "(double) -> string",
    "(bytes) -> string",
    "(timestamp) -> string",
    "(duration) -> string",
    "(net.IP) -> string",
    "(net.CIDR) -> string",
)
def to_string(frame: Frame, v: Any) -> str:
    result = to_string_value(v)
    frame.charge(size_cost(len(result)))
    return result


@function("bytes", "(string) -> bytes", "(bytes) -> bytes")
def to_bytes(frame: Frame, v: Any) -> bytes:
    if type(v) is bytes:
        return v
    if type(v) is str:
        return v.encode("utf-8")
    no_overload("bytes", v)


_BOOL_TEXT: Final = {
    "1": True,
    "t": True,
    "T": True,
    "TRUE": True,
    "true": True,
    "True": True,
    "0": False,
    "f": False,
    "F": False,
    "FALSE": False,
    "false": False,
    "False": False,
}


@function("bool", "(bool) -> bool", "(string) -> bool")
def to_bool(frame: Frame, v: Any) -> bool:
    if type(v) is bool:
        return v
    if type(v) is str:
        if v in _BOOL_TEXT:
            return _BOOL_TEXT[v]
        raise CelEvalError(f"type conversion error from 'string' to 'bool': {v}")
    no_overload("bool", v)


@function("dyn", "(dyn) -> dyn")
def to_dyn(frame: Frame, v: Any) -> Any:
    return v


@function("type", "(dyn) -> type")
def type_of(frame: Frame, v: Any) -> CelType:
    return CelType(type_name(v))


# -- timestamps and durations ---------------------------------------------------------------------

_RFC3339: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})", re.ASCII
)
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def parse_timestamp(text: str) -> Timestamp:
    m = _RFC3339.fullmatch(text)
    if m is None:
        raise CelEvalError(f"timestamp parse error: {text}")
    try:
        year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
        base = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        raise CelEvalError(f"timestamp parse error: {text}") from None
    frac = (m.group(7) or "").ljust(9, "0")
    zone = m.group(8)
    offset = 0
    if zone != "Z":
        offset = (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60) * (-1 if zone[0] == "-" else 1)
    seconds = (base - _EPOCH) // timedelta(seconds=1) - offset
    return Timestamp(seconds * 10**9 + int(frac))


def format_timestamp(ts: Timestamp) -> str:
    seconds, nanos = divmod(ts.ns, 10**9)
    dt = _EPOCH + timedelta(seconds=seconds)
    # not strftime: glibc does not zero-pad years before 1000
    text = f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
    if nanos:
        text += "." + f"{nanos:09d}".rstrip("0")
    return text + "Z"


_DURATION_PART: Final = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_NS: Final = {
    "ns": 1,
    "us": 1000,
    "µs": 1000,
    "μs": 1000,
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}


def parse_duration(text: str) -> Duration:
    """Go's ``time.ParseDuration``."""
    s = text
    sign = 1
    if s[:1] in ("+", "-"):
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if s == "0":
        return Duration(0)
    if not s:
        raise CelEvalError(f"invalid duration: {text}")
    total = 0
    pos = 0
    from fractions import Fraction

    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if m is None or m.group(1) in ("", "."):
            raise CelEvalError(f"invalid duration: {text}")
        total += int(Fraction(m.group(1)) * _UNIT_NS[m.group(2)])
        pos = m.end()
    if total > 2**63 - 1 + (1 if sign < 0 else 0):
        raise CelEvalError(f"invalid duration: {text}")
    return Duration(sign * total)


@function("timestamp", "(string) -> timestamp", "(int) -> timestamp", "(timestamp) -> timestamp")
def to_timestamp(frame: Frame, v: Any) -> Timestamp:
    if type(v) is Timestamp:
        return v
    if type(v) is str:
        return parse_timestamp(v)
    if type(v) is int:
        return Timestamp(v * 10**9)
    no_overload("timestamp", v)


@function("duration", "(string) -> duration", "(duration) -> duration")
def to_duration(frame: Frame, v: Any) -> Duration:
    if type(v) is Duration:
        return v
    if type(v) is str:
        return parse_duration(v)
    no_overload("duration", v)


def _zone(name: str) -> tzinfo:
    m = re.fullmatch(r"([+-])?(\d{2}):(\d{2})", name)
    if m:
        offset = timedelta(hours=int(m.group(2)), minutes=int(m.group(3)))
        return timezone(-offset if m.group(1) == "-" else offset)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CelEvalError(f"unknown time zone: {name}") from None


def _local(ts: Any, zone: Any, name: str) -> tuple[datetime, int]:
    if type(ts) is not Timestamp or (zone is not None and type(zone) is not str):
        no_overload(name, ts) if zone is None else no_overload(name, ts, zone)
    seconds, nanos = divmod(ts.ns, 10**9)
    dt = _EPOCH + timedelta(seconds=seconds)
    if zone is not None:
        dt = dt.astimezone(_zone(zone))
    return dt, nanos


_TS_GETTERS: Final = {
    "getFullYear": lambda dt, ns: dt.year,
    "getMonth": lambda dt, ns: dt.month - 1,
    "getDate": lambda dt, ns: dt.day,
    "getDayOfMonth": lambda dt, ns: dt.day - 1,
    "getDayOfWeek": lambda dt, ns: (dt.weekday() + 1) % 7,
    "getDayOfYear": lambda dt, ns: dt.timetuple().tm_yday - 1,
    "getHours": lambda dt, ns: dt.hour,
    "getMinutes": lambda dt, ns: dt.minute,
    "getSeconds": lambda dt, ns: dt.second,
    "getMilliseconds": lambda dt, ns: ns // 10**6,
}
_DURATION_GETTERS: Final = {
    "getHours": 3600 * 10**9,
    "getMinutes": 60 * 10**9,
    "getSeconds": 10**9,
    "getMilliseconds": 10**6,
}


def _register_time_getters() -> None:
    for name, getter in _TS_GETTERS.items():
        unit = _DURATION_GETTERS.get(name)

        def no_zone(frame: Frame, v: Any, _n: str = name, _g: Any = getter, _u: int | None = unit) -> int:
            if type(v) is Duration and _u is not None:
                q = abs(v.ns) // _u
                return q if v.ns >= 0 else -q
            dt, ns = _local(v, None, _n)
            return int(_g(dt, ns))

        def with_zone(frame: Frame, v: Any, zone: Any, _n: str = name, _g: Any = getter) -> int:
            dt, ns = _local(v, zone, _n)
            return int(_g(dt, ns))

        sigs = ["(timestamp) -> int"] + (["(duration) -> int"] if unit else [])
        function(name, *sigs, member=True)(no_zone)
        function(name, "(timestamp, string) -> int", member=True)(with_zone)


_register_time_getters()


# -- optional types -------------------------------------------------------------------------------


@function("optional.of", "(dyn) -> optional")
def optional_of(frame: Frame, v: Any) -> CelOptional:
    return CelOptional(True, v)


@function("optional.none", "() -> optional")
def optional_none(frame: Frame) -> CelOptional:
    return CelOptional(False)


def is_zero_value(v: Any) -> bool:
    if v is None or v is False:
        return True
    t = type(v)
    if t in (int, Uint, float):
        return bool(v == 0)
    if t in (str, bytes, list, tuple) or isinstance(v, Mapping):
        return len(v) == 0
    if t is Duration or t is Timestamp:
        return bool(v.ns == 0)
    return False


@function("optional.ofNonZeroValue", "(dyn) -> optional")
def optional_of_non_zero(frame: Frame, v: Any) -> CelOptional:
    return CelOptional(False) if is_zero_value(v) else CelOptional(True, v)


def _optional(name: str, v: Any) -> CelOptional:
    if type(v) is not CelOptional:
        no_overload(name, v)
    return v


@function("hasValue", "(optional) -> bool", member=True)
def has_value(frame: Frame, v: Any) -> bool:
    return _optional("hasValue", v).has_value


@function("value", "(optional) -> dyn", member=True)
def optional_value(frame: Frame, v: Any) -> Any:
    opt = _optional("value", v)
    if not opt.has_value:
        raise CelEvalError("optional.none() dereference")
    return opt.value


@function("or", "(optional, optional) -> optional", member=True)
def optional_or(frame: Frame, v: Any, other: Any) -> CelOptional:
    opt = _optional("or", v)
    return opt if opt.has_value else _optional("or", other)


@function("orValue", "(optional, dyn) -> dyn", member=True)
def optional_or_value(frame: Frame, v: Any, default: Any) -> Any:
    opt = _optional("orValue", v)
    return opt.value if opt.has_value else default
