"""Fast paths under one contract: each one registered with the reference computation it stands for.

A fast path gives the answer its reference gives, faster (one node per
class in place of every node, a key remembered in place of one taken
again...). Each registers here, by name, with what its reference is. With
the environment variable ``VOLCANOLIB_CHECK_FAST_PATHS`` set to ``1`` (the
test suite's ``--check-fast-paths`` option sets it), every fast path also
runs its reference and raises :class:`~volcanolib.errors.VerifyError`
naming the path when the two disagree; the decisions are the fast path's.
A reference run leaves no trace a decision reads: the session's random
generator is put back as the fast path found it, and caches are copies.

:data:`ROUTES` lists the registered paths; ``docs/incremental.md`` says
which are switched off by what.

.. versionadded:: 0.2
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from typing import Final, TypeVar

import attrs

from volcanolib.errors import VerifyError

__all__ = ["CHECK_ENV", "CHECKED", "ROUTES", "FastPath", "agree", "checking", "register"]

T = TypeVar("T")

#: The environment variable that has every fast path checked against its reference.
CHECK_ENV: Final = "VOLCANOLIB_CHECK_FAST_PATHS"


@attrs.frozen
class FastPath:
    """One fast path: its name, and the reference computation it must agree with."""

    name: str
    reference: str


#: Every registered fast path, by name.
ROUTES: Final[dict[str, FastPath]] = {}
#: How many times each fast path was checked against its reference in this process (while checking).
CHECKED: Final[Counter[str]] = Counter()


def register(name: str, reference: str) -> FastPath:
    """Register a fast path with the reference computation it stands for (once per name)."""
    path = ROUTES.setdefault(name, FastPath(name, reference))
    if path.reference != reference:
        raise ValueError(f"fast path {name!r} is registered with another reference")
    return path


def checking() -> bool:
    """Whether fast paths are checked against their references (``VOLCANOLIB_CHECK_FAST_PATHS=1``)."""
    return os.environ.get(CHECK_ENV, "") not in ("", "0")


def agree(path: FastPath, fast: T, reference: T, *, same: Callable[[T, T], bool] | None = None) -> T:
    """Return ``fast`` when it agrees with ``reference`` (``==``, or ``same``); else raise.

    :raises VerifyError: naming the fast path and both answers.
    """
    CHECKED[path.name] += 1
    if not (same(fast, reference) if same is not None else fast == reference):
        raise VerifyError(f"fast path {path.name!r} gave {fast!r}, its reference ({path.reference}) {reference!r}")
    return fast
