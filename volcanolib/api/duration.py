"""Durations written the way Go's ``time.ParseDuration`` reads them.

Volcano reads several settings as Go durations: the sla plugin's
``sla-waiting-time`` (argument and PodGroup annotation), the
``volcano.sh/cooldown-time`` annotation. The syntax is an optional sign and
one or more decimal numbers, each with a unit: ``ns``, ``us`` (or ``µs``,
``μs``), ``ms``, ``s``, ``m``, ``h``; ``"1h2m3.5s"``, ``"-1.5h"``, ``"300ms"``.
The bare number ``"0"`` is the only value without a unit.

>>> parse_duration("1h2m3s")
3723.0
>>> parse_duration("1.5ms")
0.0015
>>> parse_duration("90")
Traceback (most recent call last):
...
ValueError: missing unit in duration '90'

.. versionadded:: 0.2
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["parse_duration", "parse_duration_ns"]

#: Nanoseconds per unit.
_UNITS: Final = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek small letter mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
# One term: a number with an optional fraction (at least one digit overall), then letters (the unit).
_TERM: Final = re.compile(r"(\d*)(?:\.(\d*))?([^\d.]*)")


def parse_duration_ns(text: str) -> int:
    """The duration ``text`` in whole nanoseconds (fractions below a nanosecond are dropped, as Go does).

    :raises ValueError: for an empty string, a number without a unit, an
        unknown unit or anything else Go's parser refuses, naming the text.
    """
    if not isinstance(text, str):
        raise ValueError(f"expected a duration string, got {text!r}")
    rest = text
    sign = 1
    if rest[:1] in ("-", "+"):
        sign = -1 if rest[0] == "-" else 1
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise ValueError(f"invalid duration {text!r}")
    total = 0
    pos = 0
    while pos < len(rest):
        match = _TERM.match(rest, pos)
        assert match is not None  # the pattern matches the empty string
        whole, fraction, unit = match.group(1), match.group(2), match.group(3)
        if not whole and not fraction:
            raise ValueError(f"invalid duration {text!r}")
        if not unit:
            raise ValueError(f"missing unit in duration {text!r}")
        scale = _UNITS.get(unit)
        if scale is None:
            raise ValueError(f"unknown unit {unit!r} in duration {text!r}")
        value = int(whole or "0") * scale
        if fraction:
            value += int(fraction) * scale // 10 ** len(fraction)
        total += value
        pos = match.end()
    return sign * total


def parse_duration(text: str) -> float:
    """The duration ``text`` in seconds.

    :raises ValueError: as :func:`parse_duration_ns`.
    """
    return parse_duration_ns(text) / 1e9
