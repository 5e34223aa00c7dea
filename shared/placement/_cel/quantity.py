"""Kubernetes ``resource.Quantity``: parsing, exact arithmetic and the canonical string form.

The canonical form is what ``managedCluster.status.allocatable.cpu`` shows in CEL (spec §4.1.3):
the typed round trip re-serialises every quantity, so ``"2000m"`` reads ``"2"`` and ``"1024Mi"``
reads ``"1Gi"``. Values are kept as exact fractions; Kubernetes rounds anything finer than a
nano-unit up (away from zero), and so do we.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache
from typing import Final

_DECIMAL_SUFFIX: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX_BY_EXP: Final = {v: k for k, v in _DECIMAL_SUFFIX.items()}
_BINARY_SUFFIX: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BINARY_SUFFIX_BY_EXP: Final = {v: k for k, v in _BINARY_SUFFIX.items()}
_SYNTAX: Final = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([a-zA-Z]*|[eE][+-]?[0-9]+)")
_NANO: Final = Fraction(1, 10**9)

DECIMAL_SI: Final = "DecimalSI"
BINARY_SI: Final = "BinarySI"
DECIMAL_EXPONENT: Final = "DecimalExponent"


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


class Quantity:
    """An exact quantity plus the suffix family it was written in (which decides its format)."""

    __slots__ = ("fmt", "value")
    cel_type_name = "kubernetes.Quantity"

    def __init__(self, value: Fraction, fmt: str) -> None:
        self.value = value
        self.fmt = fmt

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({canonical(self)!r})"


def _round_to_nano(value: Fraction) -> Fraction:
    scaled = value / _NANO
    if scaled.denominator == 1:
        return value
    # round up, away from zero, to whole nano-units (Kubernetes' inf.RoundUp)
    whole = math.ceil(scaled) if scaled > 0 else math.floor(scaled)
    return whole * _NANO


@lru_cache(maxsize=4096)
def parse_quantity(text: str) -> Quantity:
    """``resource.ParseQuantity``; raises :class:`QuantityError`."""
    if not text:
        raise QuantityError("quantities must match the regular expression")
    m = _SYNTAX.fullmatch(text)
    if m is None:
        raise QuantityError("quantities must match the regular expression")
    sign, whole, frac, suffix = m.group(1), m.group(2), m.group(3), m.group(4)
    if not whole and not frac:
        raise QuantityError("quantities must match the regular expression")
    digits = (whole or "") + (frac or "")
    number = Fraction(int(digits or "0"), 10 ** len(frac or ""))
    if suffix in _DECIMAL_SUFFIX:
        fmt, factor = DECIMAL_SI, Fraction(10) ** _DECIMAL_SUFFIX[suffix]
    elif suffix in _BINARY_SUFFIX:
        fmt, factor = BINARY_SI, Fraction(2 ** _BINARY_SUFFIX[suffix])
    elif suffix[:1] in ("e", "E") and len(suffix) > 1 and re.fullmatch(r"[eE][+-]?[0-9]+", suffix):
        exponent = int(suffix[1:])
        if abs(exponent) > 1000:
            raise QuantityError("quantity exponent out of range")
        fmt, factor = DECIMAL_EXPONENT, Fraction(10) ** exponent
    else:
        raise QuantityError("unable to parse quantity's suffix")
    value = number * factor
    if sign == "-":
        value = -value
    return Quantity(_round_to_nano(value), fmt)


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
    """``Quantity.String()`` for a parsed quantity."""
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
        raise QuantityError("quantity must be a string or a number")
    if isinstance(raw, int):
        text = str(raw)
    elif isinstance(raw, float):
        text = repr(raw) if not raw.is_integer() else str(int(raw))
    elif isinstance(raw, str):
        text = raw.strip()
    else:
        raise QuantityError("quantity must be a string or a number")
    return canonical(parse_quantity(text))
