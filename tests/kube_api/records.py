"""The records the store keeps: one stored version of an object, one change event, the
bounded history of one resource type, and a programmed fault."""

from __future__ import annotations

import bisect
import json
import time
from dataclasses import dataclass
from typing import Any

from . import errors

Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects
Obj = dict[str, Any]

_ENCODE = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


def dumps(obj: Any) -> bytes:
    """Compact JSON bytes."""
    return _ENCODE(obj).encode()


def now_iso(t: float | None = None) -> str:
    """A Kubernetes timestamp (RFC 3339, seconds, UTC)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if t is None else t))


class Stored:
    """One version of an object: the dict (never mutated once stored) and its JSON encoding."""

    __slots__ = ("obj", "raw", "rv")

    def __init__(self, obj: Obj, rv: int) -> None:
        self.obj = obj
        self.rv = rv
        self.raw = dumps(obj)

    def copy(self) -> Obj:
        """A deep copy of the object, safe to modify."""
        return json.loads(self.raw)  # type: ignore[no-any-return]


class Event:
    """One change: ``ADDED``, ``MODIFIED`` or ``DELETED``, with the previous version for selectors."""

    __slots__ = ("namespace", "new", "old", "rv", "type")

    def __init__(self, rv: int, type: str, new: Stored, old: Stored | None, namespace: str) -> None:
        self.rv = rv
        self.type = type
        self.new = new
        self.old = old
        self.namespace = namespace


class History:
    """The events of one resource type, oldest first, bounded; a watch from a version older than
    the oldest kept event gets ``410 Gone``."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.rvs: list[int] = []
        self.events: list[Event] = []
        self.compacted_rv = 0  # events with rv <= compacted_rv are gone

    def append(self, event: Event) -> None:
        self.rvs.append(event.rv)
        self.events.append(event)
        if len(self.events) > 2 * self.size:
            self.trim(self.size)

    def trim(self, keep: int) -> None:
        drop = len(self.events) - keep
        if drop <= 0:
            return
        self.compacted_rv = max(self.compacted_rv, self.rvs[drop - 1])
        del self.rvs[:drop]
        del self.events[:drop]

    def expire(self, rv: int) -> None:
        self.rvs.clear()
        self.events.clear()
        self.compacted_rv = max(self.compacted_rv, rv)

    def since(self, rv: int) -> list[Event]:
        """Events newer than ``rv``.

        :raises ApiError: ``410 Expired`` when events after ``rv`` were already dropped.
        """
        if self.size and len(self.events) > self.size:
            self.trim(self.size)
        if rv < self.compacted_rv:
            raise errors.expired(f"too old resource version: {rv} ({self.compacted_rv + 1})")
        i = bisect.bisect_right(self.rvs, rv)
        return self.events[i:]


@dataclass
class Fault:
    """A programmed failure or delay for requests that match (None matches anything)."""

    method: str | None
    plural: str | None
    subresource: str | None
    name: str | None
    code: int
    remaining: int  # negative = for ever
    delay: float = 0.0
    message: str = "injected failure"
    #: Close the connection without answering (the answer is lost), after applying the request
    #: when ``apply`` (it took effect) or without (it did not).
    drop_answer: bool = False
    apply: bool = True
    #: The ``Retry-After`` seconds of an injected ``429`` or ``503``.
    retry_after: int = 1

    def matches(self, method: str, plural: str | None, subresource: str | None, name: str | None) -> bool:
        return (
            (self.method is None or self.method == method)
            and (self.plural is None or self.plural == plural)
            and (self.subresource is None or self.subresource == (subresource or ""))
            and (self.name is None or self.name == name)
        )
