"""Kubernetes resource quantities as the resource prioritizers read them.

The resource prioritizers compare `Quantity.AsApproximateFloat64()` values (spec §5.4). That is
not a correctly rounded decimal→double conversion, and the difference is observable in the
truncated scores, so the conversion below follows Kubernetes' own two representations:

* the fast path, an int64 mantissa with a decimal scale (``"300m"`` → 300 × 10⁻³);
* the slow path, an arbitrary-precision decimal rounded *up* to nano units.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

__all__ = ["InvalidQuantity", "approximate_float", "parse_quantity"]


class InvalidQuantity(ValueError):
    """The text is not a Kubernetes quantity."""


_DECIMAL_SUFFIX = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIX = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_QUANTITY = re.compile(r"^([+-]?)([0-9]*)(?:\.([0-9]*))?([a-zA-Z]*|[eE][+-]?[0-9]+)$")
_MAX_INT64 = 2**63 - 1
_NANO = -9


def _pow10(n: int) -> float:
    """Go's math.Pow10 for the small exponents quantities use: the double nearest 10**n."""
    if n > 308:
        return math.inf  # Go: Pow10 overflows to +Inf
    if n >= 0:
        return float(10**n)
    return float(Fraction(1, 10**-n))


def _split(text: str) -> tuple[bool, str, str, int, int]:
    """(positive, integer digits, fraction digits, base 10|2, exponent)."""
    m = _QUANTITY.match(text)
    if m is None:
        raise InvalidQuantity(f"quantities must match the regular expression: {text!r}")
    sign, num, frac, suffix = m.group(1), m.group(2), m.group(3) or "", m.group(4)
    if not num and not frac:
        raise InvalidQuantity(f"quantities must match the regular expression: {text!r}")
    if suffix in _DECIMAL_SUFFIX:
        base, exponent = 10, _DECIMAL_SUFFIX[suffix]
    elif suffix in _BINARY_SUFFIX:
        base, exponent = 2, _BINARY_SUFFIX[suffix]
    elif suffix[:1] in ("e", "E") and len(suffix) > 1:
        base, exponent = 10, int(suffix[1:])
    else:
        raise InvalidQuantity(f"unable to parse quantity's suffix: {text!r}")
    return sign != "-", num, frac, base, exponent


@lru_cache(maxsize=65536)
def approximate_float(text: str) -> float:
    """`resource.MustParse(text).AsApproximateFloat64()` (spec §5.4)."""
    positive, num, frac, base, exponent = _split(text.strip())
    digits = (num + frac).lstrip("0") or "0"
    # Go's parser strips the integer part's leading zeros ("" -> "0") before counting digits
    int_digits = len(num.lstrip("0") or "0")
    # fast path (int64Amount): precision = remaining int64 digits after the number's own
    if base == 10:
        precision = 18 - (int_digits + len(frac))
        scale = exponent - len(frac)
        if precision >= 0 and scale >= _NANO:
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
    return float(unscaled) * _pow10(_NANO)


def parse_quantity(text: str) -> float:
    """Validate and convert; raises :class:`InvalidQuantity` with the reason."""
    return approximate_float(text)
