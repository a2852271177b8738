"""Typed access to manifest fields, with errors naming the file, object and field."""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Mapping
from typing import Any, Final, NoReturn

from volcanolib.api.duration import seconds_or_duration
from volcanolib.api.resource import Resource
from volcanolib.errors import ManifestError, QuantityError

__all__ = ["Ref"]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
#: The largest integer (and quantity, in its unit) a manifest may hold: Kubernetes' int64.
MAX_INT = 2**63 - 1
_timestamps: dict[str, float] = {}
_resource_lists: dict[tuple[Any, ...], Resource] = {}
_RFC3339 = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(\.\d+)?([Zz]|[+-]\d\d:\d\d)?$")


class Ref:
    """Where an object came from: its file, its place in the file, its kind and name."""

    __slots__ = ("kind", "name", "namespace", "source", "where")

    def __init__(self, source: str | None, where: str, kind: str = "", name: str = "", namespace: str = "") -> None:
        self.source = source
        self.where = where
        self.kind = kind
        self.name = name
        self.namespace = namespace

    @property
    def label(self) -> str:
        """``Kind namespace/name`` (or ``Kind name``); the place in the file while the name is unknown."""
        if not self.name:
            return f"{self.kind or 'object'} at {self.where}" if self.where else (self.kind or "object")
        if self.namespace:
            return f"{self.kind} {self.namespace}/{self.name}"
        return f"{self.kind} {self.name}"

    @property
    def location(self) -> str:
        """``file: objects[3]``, for telling two definitions of one object apart."""
        return ": ".join(p for p in (self.source, self.where) if p)

    def error(self, message: str, field: str | None = None) -> ManifestError:
        """A load error naming this object and ``field``."""
        return ManifestError(message, source=self.source, obj=self.label, field=field)

    def fail(self, message: str, field: str | None = None) -> NoReturn:
        """Raise :meth:`error`."""
        raise self.error(message, field)


#: How many characters of a long string an error shows.
_SHOWN: Final = 60


def _type_name(value: object) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str) and len(value) > _SHOWN:
        # A file read as YAML that is not (a CSV table, prose) is one long string: show its start.
        return f"the text {value[:_SHOWN]!r}... ({len(value)} characters)"
    return repr(value)


def mapping(value: Any, ref: Ref, field: str) -> Mapping[str, Any]:
    """A mapping field; absent (``None``) is an empty mapping."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        ref.fail(f"expected a mapping, got {_type_name(value)}", field)
    return value


def seq(value: Any, ref: Ref, field: str) -> list[Any]:
    """A list field; absent (``None``) is an empty list."""
    if value is None:
        return []
    if not isinstance(value, list):
        ref.fail(f"expected a list, got {_type_name(value)}", field)
    return value


def string(value: Any, ref: Ref, field: str, default: str = "") -> str:
    """A string field.

    A number is refused, as the Kubernetes API refuses it (``name: 123``
    is not the name ``"123"``): the error says to quote it.
    """
    if value is None:
        return default
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        ref.fail(f"expected a string, got the number {_short(value)} (quote it to make it a string)", field)
    ref.fail(f"expected a string, got {_type_name(value)}", field)


def integer(value: Any, ref: Ref, field: str, default: int, *, minimum: int | None = None) -> int:
    """An integer field (a string of digits is accepted, as Kubernetes' int-or-string).

    Values beyond a 64-bit integer are refused, as Kubernetes would.
    """
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        ref.fail(f"expected an integer, got {_type_name(value)}", field)
    number: int
    if isinstance(value, str):
        try:
            number = int(value.strip())
        except ValueError:
            ref.fail(f"expected an integer, got {value!r}", field)
    else:
        number = value
    if minimum is not None and number < minimum:
        ref.fail(f"must be at least {minimum}, got {_short(number)}", field)
    if number > MAX_INT or number < -MAX_INT - 1:
        ref.fail(f"out of range for a 64-bit integer: {_short(number)}", field)
    return number


def _short(number: float) -> str:
    text = str(number)
    return text if len(text) <= 24 else f"{text[:10]}... ({len(text)} digits)"


def boolean(value: Any, ref: Ref, field: str, default: bool | None) -> bool | None:
    """A boolean field (``"true"``/``"false"`` strings are accepted)."""
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    ref.fail(f"expected true or false, got {_type_name(value)}", field)


def _label_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def string_map(value: Any, ref: Ref, field: str) -> dict[str, str]:
    """Labels, annotations, a node selector: a mapping of strings (scalars are written as text)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        ref.fail(f"expected a mapping, got {_type_name(value)}", field)
    out: dict[str, str] = {}
    for key, item in value.items():
        if isinstance(item, (dict, list)):
            ref.fail(f"expected a string, got {_type_name(item)}", f"{field}.{key}")
        out[str(key)] = item if item.__class__ is str else _label_value(item)
    return out


def resources(value: Any, ref: Ref, field: str) -> Resource:
    """A ResourceList (``{cpu: "2", memory: 4Gi}``) as a :class:`Resource`."""
    if value is None:
        return Resource()
    if not isinstance(value, dict):
        ref.fail(f"expected a mapping of quantities, got {_type_name(value)}", field)
    # Manifests repeat the same few request lists; parsing quantities is the costly part.
    try:
        key: tuple[Any, ...] | None = tuple(value.items())
        cached = _resource_lists.get(key)  # type: ignore[arg-type]
    except TypeError:  # an unhashable value: let from_list report it
        key, cached = None, None
    if cached is not None:
        return cached.clone()
    try:
        res = Resource.from_list(value, field=field)
    except QuantityError as exc:
        raise QuantityError(exc.message, source=ref.source, obj=ref.label, field=exc.field) from None
    for name in res.all_names():
        if res.get(name) > MAX_INT:  # Kubernetes keeps quantities in 64 bits (cpu in millicores)
            raise QuantityError("quantity too large", source=ref.source, obj=ref.label, field=f"{field}.{name}")
    if key is not None and len(_resource_lists) < 10_000:
        _resource_lists[key] = res.clone()
    return res


def optional_resources(value: Any, ref: Ref, field: str) -> Resource | None:
    """Like :func:`resources`, but ``None`` when the field is absent."""
    return None if value is None else resources(value, ref, field)


def timestamp(value: Any, ref: Ref, field: str) -> float:
    """An RFC 3339 time (``2024-05-01T10:00:00Z``) as seconds since the epoch; absent is 0."""
    if value is None or value == "":
        return 0.0
    if isinstance(value, str):
        cached = _timestamps.get(value)
        if cached is not None:
            return cached
        match = _RFC3339.match(value.strip())
        if match is None:
            ref.fail(f"expected an RFC 3339 time, got {value!r}", field)
        year, month, day, hour, minute, second, fraction, zone = match.groups()
        try:
            parsed = _dt.datetime(int(year), int(month), int(day), int(hour), int(minute), int(second))
        except ValueError:
            ref.fail(f"expected an RFC 3339 time, got {value!r}", field)
        seconds = _seconds(parsed) + (float(fraction) if fraction else 0.0)
        if zone and zone not in "Zz":
            sign = 1 if zone[0] == "+" else -1
            seconds -= sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
        if len(_timestamps) < 100_000:
            _timestamps[value] = seconds
        return seconds
    if isinstance(value, _dt.datetime):
        return _seconds(value)
    if isinstance(value, _dt.date):
        return _seconds(_dt.datetime(value.year, value.month, value.day))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if (isinstance(value, int) and abs(value) > MAX_INT) or not math.isfinite(value):
            ref.fail(f"expected a time, got {_short(value)}", field)
        return float(value)
    ref.fail(f"expected an RFC 3339 time, got {_type_name(value)}", field)


def _seconds(value: _dt.datetime) -> float:
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    return (value - _EPOCH).total_seconds()


def duration(value: Any, ref: Ref, field: str) -> float | None:
    """A Go duration (``90s``, ``1h30m``, ``250ms``) or a number of seconds, in seconds; absent is ``None``.

    A negative duration is refused.
    """
    if value is None:
        return None
    try:
        seconds = seconds_or_duration(value)
    except ValueError as exc:
        ref.fail(f"expected a duration such as '90s' or '1h30m': {exc}", field)
    if seconds < 0:
        ref.fail(f"expected a non-negative duration, got {value!r}", field)
    return seconds


def format_timestamp(seconds: float) -> str:
    """Seconds since the epoch as an RFC 3339 time (``1970-01-01T00:01:30Z``), the inverse of :func:`timestamp`."""
    moment = _EPOCH + _dt.timedelta(seconds=seconds)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}".rstrip("0")
    return text + "Z"
