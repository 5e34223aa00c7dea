"""CEL runtime values that Python has no native type for, and the errors evaluation raises.

Values are plain Python objects wherever that is unambiguous, because most expressions only
index maps and compare strings: ``bool``, ``int`` (CEL int), ``float`` (double), ``str``,
``bytes``, ``None`` (null), ``list``/``tuple`` (list) and ``dict`` (map). Only the types below
need a class: unsigned integers (``Uint``, an ``int`` subclass so arithmetic stays cheap),
optionals, type values, timestamps and durations.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
UINT64_MAX: Final = 2**64 - 1


class CelEvalError(Exception):
    """A CEL runtime error value (no such key, no such overload, overflow, ...)."""


class CostLimitExceeded(Exception):
    """The evaluation ran over its cost budget.

    Deliberately not a :class:`CelEvalError`: the logical operators absorb errors
    (``false && error`` is ``false``), but must never absorb a budget overrun.
    """


class Uint(int):
    """A CEL ``uint``; plain Python ints are CEL ``int``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}u"


class CelType:
    """A CEL type value, as returned by ``type(x)`` and named by ``int``, ``string``, ..."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CelType) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("CelType", self.name))

    def __repr__(self) -> str:
        return self.name


class CelOptional:
    """``optional(T)``: either empty (``optional.none()``) or holding one value."""

    __slots__ = ("has_value", "value")

    def __init__(self, has_value: bool, value: Any = None) -> None:
        self.has_value = has_value
        self.value = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CelOptional) or other.has_value != self.has_value:
            return False
        return not self.has_value or cel_equals(self.value, other.value)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"optional.of({self.value!r})" if self.has_value else "optional.none()"


class Timestamp:
    """A point in time, nanoseconds since the Unix epoch (UTC), years 0001–9999."""

    __slots__ = ("ns",)
    MIN_NS: Final = -62135596800 * 10**9
    MAX_NS: Final = 253402300799 * 10**9 + 999999999

    def __init__(self, ns: int) -> None:
        if not self.MIN_NS <= ns <= self.MAX_NS:
            raise CelEvalError("timestamp out of range")
        self.ns = ns

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Timestamp) and other.ns == self.ns

    def __lt__(self, other: Timestamp) -> bool:
        return self.ns < other.ns

    def __le__(self, other: Timestamp) -> bool:
        return self.ns <= other.ns

    def __hash__(self) -> int:
        return hash(("ts", self.ns))


class Duration:
    """A signed span of time in nanoseconds (about ±290 years, like Go's time.Duration)."""

    __slots__ = ("ns",)

    def __init__(self, ns: int) -> None:
        if not INT64_MIN <= ns <= INT64_MAX:
            raise CelEvalError("duration out of range")
        self.ns = ns

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Duration) and other.ns == self.ns

    def __lt__(self, other: Duration) -> bool:
        return self.ns < other.ns

    def __le__(self, other: Duration) -> bool:
        return self.ns <= other.ns

    def __hash__(self) -> int:
        return hash(("dur", self.ns))


_NUMERIC: Final = (int, Uint, float)
_SCALAR_SAME: Final = frozenset({str, int, Uint, float, bytes, bool, type(None)})


def type_name(value: Any) -> str:
    """The CEL type name of a runtime value (used in messages and by ``type()``)."""
    t = type(value)
    if t is bool:
        return "bool"
    if t is int:
        return "int"
    if t is Uint:
        return "uint"
    if t is float:
        return "double"
    if t is str:
        return "string"
    if t is bytes:
        return "bytes"
    if value is None:
        return "null_type"
    if t is list or t is tuple:
        return "list"
    if t is dict or isinstance(value, Mapping):
        return "map"
    if t is CelType:
        return "type"
    if t is CelOptional:
        return "optional_type"
    if t is Timestamp:
        return "google.protobuf.Timestamp"
    if t is Duration:
        return "google.protobuf.Duration"
    name = getattr(value, "cel_type_name", None)
    return name if isinstance(name, str) else t.__name__


_TWO_63: Final = 9223372036854775808.0  # int64's bounds as doubles: -2**63 and 2**63
_TWO_64: Final = 18446744073709551616.0  # uint64's upper bound as a double


def _double_against_integer(d: float, i: int) -> int:
    if d != d:
        return 2  # NaN: unordered
    if type(i) is Uint:
        if d < 0.0:
            return -1
        if d > _TWO_64:
            return 1
    else:
        if d < -_TWO_63:
            return -1
        if d > _TWO_63:
            return 1
    f = float(i)
    return (d > f) - (d < f)


def numeric_compare(a: Any, b: Any) -> int:
    """-1, 0 or 1 for two numbers of any of int, uint and double, as cel-go orders them; 2 when
    either is NaN. Integers compare exactly with each other; an integer meets a double as a
    double (so ``9223372036854775807`` equals ``9223372036854775808.0``), except that a double
    beyond the integer type's range is simply greater or smaller."""
    if type(a) is float:
        if type(b) is float:
            return (a > b) - (a < b) if a == a and b == b else 2
        return _double_against_integer(a, b)
    if type(b) is float:
        r = _double_against_integer(b, a)
        return r if r == 2 else -r
    return int(a > b) - int(a < b)


def cel_equals(a: Any, b: Any) -> bool:
    """CEL heterogeneous equality: numbers compare by value across int/uint/double, values of
    different kinds are simply unequal (never an error), lists and maps compare deeply."""
    ta, tb = type(a), type(b)
    if ta is tb and ta in _SCALAR_SAME:
        return bool(a == b)
    if ta in _NUMERIC and tb in _NUMERIC:
        return numeric_compare(a, b) == 0
    if (ta is list or ta is tuple) and (tb is list or tb is tuple):
        return len(a) == len(b) and all(cel_equals(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if len(a) != len(b):
            return False
        for k, v in a.items():
            found, other = map_lookup(b, k)
            if not found or not cel_equals(v, other):
                return False
        return True
    if ta is tb:
        return bool(a == b)
    return False


def map_lookup(m: Mapping[Any, Any], key: Any) -> tuple[bool, Any]:
    """Find ``key`` in a CEL map; numeric keys match across int/uint/double (CEL spec)."""
    tk = type(key)
    if tk is bool:
        # Python would let True find the key 1; CEL keeps bool and int keys apart
        for k, v in m.items():
            if type(k) is bool and k == key:
                return True, v
        return False, None
    if tk is float:
        if not key.is_integer():
            return False, None
        key = int(key)
        tk = int
    if tk is int or tk is Uint:
        for k, v in m.items():
            if type(k) in (int, Uint) and k == key:
                return True, v
        return False, None
    try:
        return (True, m[key]) if key in m else (False, None)
    except TypeError:
        return False, None
