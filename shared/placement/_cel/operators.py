"""CEL operators on runtime values: arithmetic with int64/uint64 overflow checks, ordering,
membership, indexing, and the Go-compatible text forms of doubles and durations."""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, NoReturn

from fleetplace.shared.placement._cel.values import (
    INT64_MAX,
    INT64_MIN,
    UINT64_MAX,
    CelEvalError,
    CelOptional,
    Duration,
    Timestamp,
    Uint,
    cel_equals,
    map_lookup,
    numeric_compare,
    type_name,
)


def no_overload(name: str, *args: Any) -> NoReturn:
    types = ", ".join(type_name(a) for a in args)
    raise CelEvalError(f"no such overload: {name}({types})")


def check_int(v: int) -> int:
    if not INT64_MIN <= v <= INT64_MAX:
        raise CelEvalError("integer overflow")
    return v


def check_uint(v: int) -> Uint:
    if not 0 <= v <= UINT64_MAX:
        raise CelEvalError("unsigned integer overflow")
    return Uint(v)


def add(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return check_int(a + b)
    if ta is str and tb is str:
        return a + b
    if ta is float and tb is float:
        return a + b
    if ta is Uint and tb is Uint:
        return check_uint(a + b)
    if (ta is list or ta is tuple) and (tb is list or tb is tuple):
        return [*a, *b]
    if ta is bytes and tb is bytes:
        return a + b
    if ta is Duration and tb is Duration:
        return Duration(a.ns + b.ns)
    if ta is Timestamp and tb is Duration:
        return Timestamp(a.ns + b.ns)
    if ta is Duration and tb is Timestamp:
        return Timestamp(a.ns + b.ns)
    no_overload("_+_", a, b)


def sub(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return check_int(a - b)
    if ta is float and tb is float:
        return a - b
    if ta is Uint and tb is Uint:
        return check_uint(a - b)
    if ta is Duration and tb is Duration:
        return Duration(a.ns - b.ns)
    if ta is Timestamp and tb is Duration:
        return Timestamp(a.ns - b.ns)
    if ta is Timestamp and tb is Timestamp:
        return Duration(a.ns - b.ns)
    no_overload("_-_", a, b)


def mul(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return check_int(a * b)
    if ta is float and tb is float:
        return a * b
    if ta is Uint and tb is Uint:
        return check_uint(a * b)
    no_overload("_*_", a, b)


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def div(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        if b == 0:
            raise CelEvalError("division by zero")
        return check_int(_trunc_div(a, b))
    if ta is float and tb is float:
        if b == 0.0:
            if a == 0.0 or math.isnan(a):
                return math.nan
            return math.copysign(math.inf, a) * math.copysign(1.0, b)
        return a / b
    if ta is Uint and tb is Uint:
        if b == 0:
            raise CelEvalError("division by zero")
        return Uint(a // b)
    no_overload("_/_", a, b)


def mod(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        if b == 0:
            raise CelEvalError("modulus by zero")
        # Go: the result takes the sign of the dividend
        return check_int(a - b * _trunc_div(a, b))
    if ta is Uint and tb is Uint:
        if b == 0:
            raise CelEvalError("modulus by zero")
        return Uint(a % b)
    no_overload("_%_", a, b)


def neg(a: Any) -> Any:
    ta = type(a)
    if ta is int:
        return check_int(-a)
    if ta is float:
        return -a
    if ta is Duration:
        return Duration(-a.ns)
    no_overload("-_", a)


def logical_not(a: Any) -> bool:
    if type(a) is bool:
        return not a
    no_overload("!_", a)


_NUMBERS = (int, Uint, float)
_ORDERED_SAME = (str, bytes, bool, Timestamp, Duration)


def compare(name: str, a: Any, b: Any) -> int:
    """-1, 0 or 1; numbers compare across int/uint/double (NaN compares as unordered)."""
    ta, tb = type(a), type(b)
    if ta in _NUMBERS and tb in _NUMBERS:
        if ta is tb and ta is not float:
            return int(a > b) - int(a < b)
        return numeric_compare(a, b)  # 2 for NaN: every ordering comparison is false
    if ta is tb and ta in _ORDERED_SAME:
        return -1 if a < b else (0 if a == b else 1)
    no_overload(name, a, b)


def less(a: Any, b: Any) -> bool:
    return compare("_<_", a, b) == -1


def less_equal(a: Any, b: Any) -> bool:
    return compare("_<=_", a, b) in (-1, 0)


def greater(a: Any, b: Any) -> bool:
    return compare("_>_", a, b) == 1


def greater_equal(a: Any, b: Any) -> bool:
    return compare("_>=_", a, b) in (0, 1)


def contains_element(elem: Any, container: Any) -> bool:
    """``elem in container``: list membership by CEL equality, map membership by key."""
    tc = type(container)
    if tc is list or tc is tuple:
        return any(cel_equals(elem, x) for x in container)
    if isinstance(container, Mapping):
        return map_lookup(container, elem)[0]
    no_overload("@in", elem, container)


def list_index(lst: list[Any] | tuple[Any, ...], index: Any) -> tuple[bool, Any]:
    ti = type(index)
    if ti is float:
        if not index.is_integer():
            raise CelEvalError(f"unsupported index value: {index}")
        index = int(index)
    elif ti is not int and ti is not Uint:
        raise CelEvalError(f"unsupported index type '{type_name(index)}' in list")
    if 0 <= index < len(lst):
        return True, lst[index]
    return False, index


def index(container: Any, key: Any) -> Any:
    tc = type(container)
    if tc is dict:
        if type(key) is str:
            try:
                return container[key]
            except KeyError:
                raise CelEvalError(f"no such key: {key}") from None
        found, value = map_lookup(container, key)
        if not found:
            raise CelEvalError(f"no such key: {key}")
        return value
    if tc is list or tc is tuple:
        found, value = list_index(container, key)
        if not found:
            raise CelEvalError(f"index out of bounds: {value}")
        return value
    if isinstance(container, Mapping):
        found, value = map_lookup(container, key)
        if not found:
            raise CelEvalError(f"no such key: {key}")
        return value
    if tc is CelOptional:
        return optional_index(container, key)
    no_overload("_[_]", container, key)


def optional_index(container: Any, key: Any) -> CelOptional:
    """``container[?key]`` and indexing past an optional (optional chaining)."""
    if type(container) is CelOptional:
        if not container.has_value:
            return container
        container = container.value
    tc = type(container)
    if tc is list or tc is tuple:
        found, value = list_index(container, key)
        return CelOptional(True, value) if found else CelOptional(False)
    if isinstance(container, Mapping):
        found, value = map_lookup(container, key)
        return CelOptional(True, value) if found else CelOptional(False)
    no_overload("_[?_]", container, key)


def select(operand: Any, field: str) -> Any:
    if type(operand) is dict:
        try:
            return operand[field]
        except KeyError:
            raise CelEvalError(f"no such key: {field}") from None
    if isinstance(operand, Mapping):
        if field in operand:
            return operand[field]
        raise CelEvalError(f"no such key: {field}")
    if type(operand) is CelOptional:
        return optional_select(operand, field)
    raise CelEvalError(f"type '{type_name(operand)}' does not support field selection")


def optional_select(operand: Any, field: str) -> CelOptional:
    if type(operand) is CelOptional:
        if not operand.has_value:
            return operand
        operand = operand.value
    if isinstance(operand, Mapping):
        return CelOptional(True, operand[field]) if field in operand else CelOptional(False)
    raise CelEvalError(f"type '{type_name(operand)}' does not support field selection")


def has_field(operand: Any, field: str) -> bool:
    if isinstance(operand, Mapping):
        return field in operand
    if type(operand) is CelOptional:
        return operand.has_value and has_field(operand.value, field)
    raise CelEvalError(f"invalid type for field selection: {type_name(operand)}")


# -- Go-compatible text forms ----------------------------------------------------------------


def format_double(f: float) -> str:
    """Go's ``strconv.FormatFloat(f, 'g', -1, 64)`` (what ``string(double)`` produces)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0.0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    sign, digit_tuple, exp = Decimal(repr(f)).as_tuple()
    assert isinstance(exp, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    stripped = len("".join(map(str, digit_tuple))) - len(digits)
    exp += stripped
    point = len(digits) + exp  # position of the decimal point relative to digits
    x = point - 1
    prefix = "-" if sign else ""
    if x < -4 or x >= 6:  # shortest %g switches to exponent form at 1e+06
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{prefix}{mantissa}e{'-' if x < 0 else '+'}{abs(x):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{prefix}{digits}{'0' * (point - len(digits))}"
    return f"{prefix}{digits[:point]}.{digits[point:]}"


def format_duration(d: Duration) -> str:
    """cel-go renders a duration as its seconds with an ``s`` suffix (``"90s"``, ``"1.5s"``)."""
    seconds = Decimal(d.ns).scaleb(-9).normalize()
    text = format(seconds, "f")
    return f"{text}s"
