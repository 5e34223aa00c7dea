"""Kubernetes ``resource.Quantity``: the one parser, the exact value, the canonical string and
the approximate double.

A quantity is a signed decimal number followed by a suffix: a decimal SI suffix (``n u m k M G
T P E`` or none), a binary SI suffix (``Ki Mi Gi Ti Pi Ei``) or a decimal exponent (``e3``,
``E-3``). Anything else is :class:`InvalidQuantity`.

Three readings of a parsed quantity are used:

* the exact value (:func:`parse_quantity`), kept as a fraction. Kubernetes rounds anything finer
  than a nano-unit up (away from zero), and so do we. CEL's quantity library computes on it;
* the canonical text (:func:`canonical`, :func:`canonicalize`): what the typed round trip of a
  ManagedCluster shows in CEL, so ``"2000m"`` reads ``"2"`` and ``"1024Mi"`` reads ``"1Gi"``;
* the approximate double (:func:`approximate_float`), Kubernetes' ``AsApproximateFloat64``, which
  the resource prioritizers compare. It is not a correctly rounded decimal→double conversion,
  and the difference is observable in the truncated scores, so it follows Kubernetes' own two
  representations: an int64 mantissa with a decimal scale (``"300m"`` → 300 × 10⁻³) when the
  digits fit, otherwise the exact value rounded *up* to nano units.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache
from typing import Final, NamedTuple

__all__ = [
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "DECIMAL_SI",
    "InvalidQuantity",
    "Quantity",
    "approximate_float",
    "canonical",
    "canonicalize",
    "parse_quantity",
]

DECIMAL_SI: Final = "DecimalSI"
BINARY_SI: Final = "BinarySI"
DECIMAL_EXPONENT: Final = "DecimalExponent"

_DECIMAL_SUFFIX: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX_BY_EXP: Final = {v: k for k, v in _DECIMAL_SUFFIX.items()}
_BINARY_SUFFIX: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BINARY_SUFFIX_BY_EXP: Final = {v: k for k, v in _BINARY_SUFFIX.items()}
_SYNTAX: Final = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([a-zA-Z]*|[eE][+-]?[0-9]+)")
_EXPONENT: Final = re.compile(r"[eE][+-]?[0-9]+")
_MAX_EXPONENT: Final = 1000  # a larger exact value is not worth computing
_MAX_INT64: Final = 2**63 - 1
_NANO_SCALE: Final = -9
_NANO: Final = Fraction(1, 10**9)


class InvalidQuantity(ValueError):
    """The text is not a Kubernetes quantity."""


class _Parts(NamedTuple):
    positive: bool
    whole: str  # integer digits as written, possibly empty
    frac: str  # fraction digits as written, possibly empty
    base: int  # 10 or 2
    exponent: int  # of the base
    fmt: str


def _split(text: str) -> _Parts:
    """The syntax of a quantity; raises :class:`InvalidQuantity`."""
    m = _SYNTAX.fullmatch(text)
    if m is None or not (m.group(2) or m.group(3)):
        raise InvalidQuantity(f"quantities must match the regular expression: {text!r}")
    sign, whole, frac, suffix = m.group(1), m.group(2), m.group(3) or "", m.group(4)
    if suffix in _DECIMAL_SUFFIX:
        return _Parts(sign != "-", whole, frac, 10, _DECIMAL_SUFFIX[suffix], DECIMAL_SI)
    if suffix in _BINARY_SUFFIX:
        return _Parts(sign != "-", whole, frac, 2, _BINARY_SUFFIX[suffix], BINARY_SI)
    if _EXPONENT.fullmatch(suffix):
        return _Parts(sign != "-", whole, frac, 10, int(suffix[1:]), DECIMAL_EXPONENT)
    raise InvalidQuantity(f"unable to parse quantity's suffix: {text!r}")


class Quantity:
    """An exact quantity plus the suffix family it was written in (which decides its format)."""

    __slots__ = ("fmt", "text", "value")
    cel_type_name = "kubernetes.Quantity"

    def __init__(self, value: Fraction, fmt: str, text: str | None = None) -> None:
        self.value = value
        self.fmt = fmt
        self.text = text  # as parsed; None for the result of arithmetic

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({canonical(self)!r})"

    def approximate_float(self) -> float:
        """``AsApproximateFloat64``: as parsed when parsed, else the value's nearest double."""
        return approximate_float(self.text) if self.text is not None else float(self.value)


def _round_to_nano(value: Fraction) -> Fraction:
    scaled = value / _NANO
    if scaled.denominator == 1:
        return value
    # round up, away from zero, to whole nano-units (Kubernetes' inf.RoundUp)
    whole = math.ceil(scaled) if scaled > 0 else math.floor(scaled)
    return whole * _NANO


@lru_cache(maxsize=4096)
def parse_quantity(text: str) -> Quantity:
    """``resource.ParseQuantity``: the exact value; raises :class:`InvalidQuantity`."""
    parts = _split(text)
    if parts.base == 10 and abs(parts.exponent) > _MAX_EXPONENT:
        raise InvalidQuantity("quantity exponent out of range")
    number = Fraction(int(parts.whole + parts.frac or "0"), 10 ** len(parts.frac))
    value = number * Fraction(parts.base) ** parts.exponent
    return Quantity(_round_to_nano(value if parts.positive else -value), parts.fmt, text)


def _decimal_parts(value: Fraction) -> tuple[int, int]:
    """``value`` = mantissa × 10**exponent with the exponent a multiple of 3 and the mantissa an
    integer (Kubernetes' AsCanonicalBytes)."""
    exponent = 0
    v = value
    while v.denominator != 1:
        v *= 10
        exponent -= 1
    mantissa = int(v)
    while mantissa != 0 and mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    aligned = (exponent // 3) * 3  # floor to a multiple of three
    return mantissa * 10 ** (exponent - aligned), aligned


def canonical(q: Quantity) -> str:
    """``Quantity.String()``."""
    value = q.value
    if value == 0:
        return "0"
    fmt = q.fmt
    if fmt == BINARY_SI and (-1024 < value < 1024 or value.denominator != 1):
        # small or fractional binary quantities are shown in decimal to avoid rounding
        fmt = DECIMAL_SI
    if fmt == BINARY_SI:
        mantissa, exponent = int(value), 0
        while mantissa % 1024 == 0 and exponent < 60:
            mantissa //= 1024
            exponent += 10
        return f"{mantissa}{_BINARY_SUFFIX_BY_EXP[exponent]}"
    mantissa, exponent = _decimal_parts(value)
    if fmt == DECIMAL_SI and exponent in _DECIMAL_SUFFIX_BY_EXP:
        return f"{mantissa}{_DECIMAL_SUFFIX_BY_EXP[exponent]}"
    return f"{mantissa}e{exponent}" if exponent != 0 else str(mantissa)


def canonicalize(raw: object) -> str:
    """The canonical text of a quantity as written in JSON (a string or a number)."""
    if isinstance(raw, bool) or raw is None:
        raise InvalidQuantity("quantity must be a string or a number")
    if isinstance(raw, int):
        text = str(raw)
    elif isinstance(raw, float):
        text = repr(raw) if not raw.is_integer() else str(int(raw))
    elif isinstance(raw, str):
        text = raw.strip()
    else:
        raise InvalidQuantity("quantity must be a string or a number")
    return canonical(parse_quantity(text))


def _pow10(n: int) -> float:
    """Go's math.Pow10 for the small exponents quantities use: the double nearest 10**n."""
    if n > 308:
        return math.inf  # Go: Pow10 overflows to +Inf
    if n >= 0:
        return float(10**n)
    return float(Fraction(1, 10**-n))


@lru_cache(maxsize=65536)
def approximate_float(text: str) -> float:
    """``resource.MustParse(text).AsApproximateFloat64()``, surrounding blanks ignored as the JSON
    decoding of a quantity does; raises :class:`InvalidQuantity`."""
    positive, num, frac, base, exponent, _ = _split(text.strip())
    digits = (num + frac).lstrip("0") or "0"
    # Go's parser strips the integer part's leading zeros ("" -> "0") before counting digits
    int_digits = len(num.lstrip("0") or "0")
    # fast path (int64Amount): precision = remaining int64 digits after the number's own
    if base == 10:
        precision = 18 - (int_digits + len(frac))
        scale = exponent - len(frac)
        if precision >= 0 and scale >= _NANO_SCALE:
            value = int(num + frac) if (num + frac) else 0
            if not positive:
                value = -value
            return float(value) if scale == 0 else float(value) * _pow10(scale)
    elif not frac and exponent >= 0:
        precision = 15 - int_digits - int(exponent * 3 / 10) - 1
        if precision >= 0:
            value = int(num or "0") << exponent
            if value <= _MAX_INT64:
                return float(value if positive else -value)
    # slow path (inf.Dec): exact value, rounded up (away from zero) to nano units
    # (exact rationals: a decimal context's 28 digits would overflow on 20-digit values)
    exact = Fraction(int(digits), 10 ** len(frac))
    exact *= Fraction(10) ** exponent if base == 10 else 2**exponent
    unscaled = math.ceil(exact * 10**9)  # exact >= 0 here: ceil is "up"
    if not positive:
        unscaled = -unscaled
    return float(unscaled) * _pow10(_NANO_SCALE)
