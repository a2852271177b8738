"""Kubernetes resource quantities: ``"500m"``, ``"1.5"``, ``"2Gi"``, ``"1e3"``.

A quantity is a signed decimal number followed by an optional suffix: a binary
multiple (``Ki Mi Gi Ti Pi Ei``), a decimal multiple (``n u m k M G T P E``) or
an exponent (``e3``, ``E-2``). Values are kept exact as :class:`fractions.Fraction`
and converted to integers the way Kubernetes does (rounding up).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from volcanolib.errors import QuantityError

__all__ = ["milli_value", "parse_quantity", "value"]

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_PATTERN = re.compile(
    r"^(?P<sign>[+-]?)(?P<num>\d+(?:\.\d*)?|\.\d+)"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE](?P<exp>[+-]?\d+))?$"
)
_cache: dict[str, Fraction] = {}


def parse_quantity(text: object) -> Fraction:
    """Return the exact value of a Kubernetes quantity.

    Integers and floats (as YAML may give them) are accepted too.

    :raises QuantityError: naming the text when it is not a quantity.

    >>> parse_quantity("500m")
    Fraction(1, 2)
    >>> parse_quantity("2Ki")
    Fraction(2048, 1)
    """
    if isinstance(text, bool):
        raise QuantityError(f"invalid quantity {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(f"invalid quantity {text!r}")
        return Fraction(str(text))
    if not isinstance(text, str):
        raise QuantityError(f"invalid quantity {text!r}: expected a string or a number")
    cached = _cache.get(text)
    if cached is not None:
        return cached
    match = _PATTERN.match(text.strip())
    if match is None:
        raise QuantityError(f"invalid quantity {text!r}")
    number = Fraction(match["num"])
    if match["exp"] is not None:
        exponent = int(match["exp"])
        if abs(exponent) > 60:
            raise QuantityError(f"invalid quantity {text!r}: exponent out of range")
        number *= Fraction(10) ** exponent
    else:
        suffix = match["suffix"] or ""
        number *= _BINARY[suffix] if suffix in _BINARY else _DECIMAL[suffix]
    if match["sign"] == "-":
        number = -number
    if len(_cache) < 4096:
        _cache[text] = number
    return number


def value(text: object) -> int:
    """Return the quantity as an integer, rounded up (Kubernetes ``Value()``)."""
    return math.ceil(parse_quantity(text))


def milli_value(text: object) -> int:
    """Return the quantity in thousandths, rounded up (Kubernetes ``MilliValue()``).

    >>> milli_value("1.5")
    1500
    >>> milli_value("0.0001")
    1
    """
    return math.ceil(parse_quantity(text) * 1000)
