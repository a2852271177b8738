"""The rules that combine plugin answers across tiers, each written once.

Every builder here takes a compiled table (tiers of ``(plugin name, function)``
entries, see :mod:`volcanolib.framework.dispatch`) and returns a closure that
applies one rule. Closures are specialised for the common shapes (no
implementation, one implementation) so that a hook nobody implements costs
nothing.

An exception raised by a plugin function is re-raised as
:class:`~volcanolib.errors.PluginError` naming the plugin and the hook; the
``try`` blocks cost nothing while no exception is raised. Orders given an
``on_error`` callback report the failure to it instead and treat the failing
plugin as having no opinion, so one broken comparison cannot stop a sort.
Notifications (``call_all``) reach every plugin even when one of them fails,
then raise the first failure, so plugins that keep books from allocate and
deallocate events stay in step with each other.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, TypeAlias, TypeVar

from volcanolib.errors import PluginError
from volcanolib.framework.status import Code, Status, Vote

__all__ = [
    "Entry",
    "Table",
    "all_pass",
    "all_true",
    "any_true",
    "call_all",
    "first_nonzero",
    "first_nonzero_args",
    "first_not_none",
    "intersect_per_tier",
    "key_tuple",
    "tier_decides",
    "union_per_tier",
    "vote_per_tier",
    "weighted_sum",
]

#: One implementation: the plugin's configured name and its bound function.
Entry: TypeAlias = tuple[str, Callable[..., Any]]
#: Implementations of one hook, tier by tier, in configuration order.
Table: TypeAlias = tuple[tuple[Entry, ...], ...]

log = logging.getLogger(__name__)
T = TypeVar("T")
_SUCCESS: Final = Status.success()
#: Receives a plugin failure that an order recovered from.
OnError: TypeAlias = Callable[[PluginError], None]


class _Last:
    """The key of an item whose plugin key failed: after every other key, equal to itself."""

    __slots__ = ()

    def __lt__(self, other: object) -> bool:
        return False

    def __le__(self, other: object) -> bool:
        return other is self

    def __gt__(self, other: object) -> bool:
        return other is not self

    def __ge__(self, other: object) -> bool:
        return True

    def __repr__(self) -> str:
        return "<key failed>"


#: Stands for a plugin key that could not be computed; sorts last.
KEY_FAILED: Final = _Last()


def _flat(table: Table) -> tuple[Entry, ...]:
    return tuple(entry for tier in table for entry in tier)


def plugin_failure(plugin: str, hook: str, exc: BaseException) -> PluginError:
    """Wrap an exception raised by a plugin's hook."""
    if isinstance(exc, PluginError):
        return exc
    return PluginError(f"{type(exc).__name__}: {exc}", plugin=plugin, hook=hook)


def _entries(table: Table) -> Iterator[Entry]:
    for tier in table:
        yield from tier


# ---------------------------------------------------------------------------- orders


def first_nonzero(
    hook: str, table: Table, fallback: Callable[[T, T], int], on_error: OnError | None = None
) -> Callable[[T, T], int]:
    """``first_nonzero``: the first non-zero comparison in tier order, else ``fallback``.

    :param on_error: when given, a failing plugin is reported to it and abstains.
    """
    entries = _flat(table)
    if not entries:
        return fallback

    def compare(left: T, right: T) -> int:
        for plugin, fn in entries:
            try:
                result = fn(left, right)
            except Exception as exc:
                if on_error is None:
                    raise plugin_failure(plugin, hook, exc) from exc
                on_error(plugin_failure(plugin, hook, exc))
                continue
            if result:
                return -1 if result < 0 else 1
        return fallback(left, right)

    return compare


def first_nonzero_args(hook: str, table: Table, on_error: OnError | None = None) -> Callable[..., int]:
    """``first_nonzero`` for comparisons with extra arguments; 0 when every plugin abstains.

    :param on_error: when given, a failing plugin is reported to it and abstains.
    """
    entries = _flat(table)

    def compare(*args: Any) -> int:
        for plugin, fn in entries:
            try:
                result = fn(*args)
            except Exception as exc:
                if on_error is None:
                    raise plugin_failure(plugin, hook, exc) from exc
                on_error(plugin_failure(plugin, hook, exc))
                continue
            if result:
                return -1 if result < 0 else 1
        return 0

    return compare


def key_tuple(
    hook: str, table: Table, fallback: Callable[[T], tuple[Any, ...]], on_error: OnError | None = None
) -> Callable[[T], tuple[Any, ...]]:
    """``first_nonzero`` as a key: the plugins' keys in tier order, then ``fallback``'s.

    :param on_error: when given, a failing plugin is reported to it and its
        key for that item is :data:`KEY_FAILED` (after every other key);
        otherwise the failure is raised as a :class:`PluginError`.
    """
    entries = _flat(table)
    fns = tuple(fn for _, fn in entries)
    if not fns:
        return fallback

    def recover(item: T) -> tuple[Any, ...]:
        parts: list[Any] = []
        for plugin, fn in entries:
            try:
                parts.append(fn(item))
            except Exception as exc:
                if on_error is None:
                    raise plugin_failure(plugin, hook, exc) from exc
                on_error(plugin_failure(plugin, hook, exc))
                parts.append(KEY_FAILED)
        return (*parts, *fallback(item))

    if len(fns) == 1:
        (only,) = fns

        def key1(item: T) -> tuple[Any, ...]:
            try:
                return (only(item), *fallback(item))
            except Exception:
                return recover(item)

        return key1

    def key(item: T) -> tuple[Any, ...]:
        try:
            return (*[fn(item) for fn in fns], *fallback(item))
        except Exception:
            return recover(item)

    return key


def comparator_key(compare: Callable[[T, T], int]) -> Callable[[T], Any]:
    """A key object that compares items with ``compare`` at comparison time."""
    return functools.cmp_to_key(compare)


# ---------------------------------------------------------------------------- predicates


def all_pass(hook: str, table: Table) -> Callable[..., Status]:
    """``all_pass``: every plugin must succeed; the first failure in tier order is returned."""
    entries = _flat(table)
    if not entries:
        return lambda *args: _SUCCESS

    def check(*args: Any) -> Status:
        for plugin, fn in entries:
            try:
                status = fn(*args)
            except Exception as exc:
                raise plugin_failure(plugin, hook, exc) from exc
            if status is not None and status.code is not Code.SUCCESS:
                return status.with_plugin(plugin)  # type: ignore[no-any-return]
        return _SUCCESS

    return check


def weighted_sum(hook: str, table: Table) -> Callable[..., float]:
    """``weighted_sum``: the sum of every plugin's (already weighted) score."""
    entries = _flat(table)
    if not entries:
        return lambda *args: 0.0

    def total(*args: Any) -> float:
        score = 0.0
        for plugin, fn in entries:
            try:
                score += fn(*args) or 0.0
            except Exception as exc:
                raise plugin_failure(plugin, hook, exc) from exc
        return score

    return total


def first_not_none(hook: str, table: Table) -> Callable[..., Any]:
    """The first answer that is not ``None``, in tier order; ``None`` if all abstain."""
    entries = _flat(table)

    def first(*args: Any) -> Any:
        for plugin, fn in entries:
            try:
                result = fn(*args)
            except Exception as exc:
                raise plugin_failure(plugin, hook, exc) from exc
            if result is not None:
                return result
        return None

    return first


# ---------------------------------------------------------------------------- victims


def intersect_per_tier(hook: str, table: Table) -> Callable[[Any, Sequence[Any]], list[Any] | None]:
    """``intersect_per_tier`` (Volcano's Preemptable/Reclaimable).

    Within a tier, each plugin sees the full candidate list; an abstention
    (``None``) is ignored; an empty list ends the tier with no victims; other
    lists are intersected, keeping the order of the first. The first tier
    that ends with victims decides. A tier that ends empty falls through,
    and the next tier starts afresh.
    """

    def victims(actor: Any, candidates: Sequence[Any]) -> list[Any] | None:
        for tier in table:
            chosen: list[Any] | None = None
            for plugin, fn in tier:
                try:
                    result = fn(actor, candidates)
                except Exception as exc:
                    raise plugin_failure(plugin, hook, exc) from exc
                if result is None:
                    continue
                if not result:
                    chosen = None
                    break
                if chosen is None:
                    chosen = list(result)
                else:
                    keep = {id(t) for t in result}
                    chosen = [t for t in chosen if id(t) in keep]
            if chosen:
                return chosen
        return None

    return victims


def union_per_tier(hook: str, table: Table) -> Callable[[Sequence[Any]], list[Any]]:
    """The union within a tier; the first tier with a non-empty union wins."""

    def victims(tasks: Sequence[Any]) -> list[Any]:
        for tier in table:
            seen: dict[int, Any] = {}
            for plugin, fn in tier:
                try:
                    result = fn(tasks)
                except Exception as exc:
                    raise plugin_failure(plugin, hook, exc) from exc
                for t in result or ():
                    seen.setdefault(id(t), t)
            if seen:
                return list(seen.values())
        return []

    return victims


# ---------------------------------------------------------------------------- booleans and votes


def vote_per_tier(hook: str, table: Table) -> Callable[[Any], bool]:
    """``vote_per_tier``: a reject decides no at once; a permit seen by the end of a tier decides yes.

    When every tier abstains the answer is yes.
    """

    def vote(item: Any) -> bool:
        permitted = False
        for tier in table:
            for plugin, fn in tier:
                try:
                    result = fn(item)
                except Exception as exc:
                    raise plugin_failure(plugin, hook, exc) from exc
                if result is None or result == Vote.ABSTAIN:
                    continue
                if result == Vote.REJECT or result < 0:
                    return False
                permitted = True
            if permitted:
                return True
        return True

    return vote


def any_true(hook: str, table: Table) -> Callable[..., bool]:
    """``any_true``: true as soon as one plugin says true; false when none does."""
    entries = _flat(table)

    def check(*args: Any) -> bool:
        for plugin, fn in entries:
            try:
                if fn(*args):
                    return True
            except Exception as exc:
                raise plugin_failure(plugin, hook, exc) from exc
        return False

    return check


def all_true(hook: str, table: Table) -> Callable[..., bool]:
    """``all_true``: false as soon as one plugin says false; true when none does."""
    entries = _flat(table)
    if not entries:
        return lambda *args: True

    def check(*args: Any) -> bool:
        for plugin, fn in entries:
            try:
                result = fn(*args)
            except Exception as exc:
                raise plugin_failure(plugin, hook, exc) from exc
            if result is not None and not result:
                return False
        return True

    return check


def tier_decides(hook: str, table: Table) -> Callable[[Any], bool]:
    """``tier_decides``: the first tier with an implementation decides by AND; false if none."""
    tiers = tuple(tier for tier in table if tier)
    if not tiers:
        return lambda item: False
    first = tiers[0]

    def check(item: Any) -> bool:
        for plugin, fn in first:
            try:
                if not fn(item):
                    return False
            except Exception as exc:
                raise plugin_failure(plugin, hook, exc) from exc
        return True

    return check


def call_all(hook: str, table: Table) -> Callable[..., None]:
    """``call_all``: call every implementation in tier order, for its side effects.

    A failing implementation does not stop the others; the first failure is
    raised once all have been called.
    """
    entries = _flat(table)
    if not entries:
        return lambda *args: None
    if len(entries) == 1:
        ((plugin, fn),) = entries

        def call_one(*args: Any) -> None:
            try:
                fn(*args)
            except Exception as exc:
                raise plugin_failure(plugin, hook, exc) from exc

        return call_one

    fns = tuple(fn for _, fn in entries)

    def call(*args: Any) -> None:
        for fn in fns:
            try:
                fn(*args)
            except Exception as exc:
                # Entries are distinct (a plugin is configured once), so the first equal one is this one.
                _call_rest(entries, fns.index(fn), hook, args, exc)

    return call


def _call_rest(entries: tuple[Entry, ...], failed: int, hook: str, args: tuple[Any, ...], exc: Exception) -> None:
    """After entry ``failed`` raised ``exc``, call the entries after it, then raise the first failure."""
    first = plugin_failure(entries[failed][0], hook, exc)
    for plugin, fn in entries[failed + 1 :]:
        try:
            fn(*args)
        except Exception as again:
            log.error("%s (after an earlier failure in the same call)", plugin_failure(plugin, hook, again))
    raise first from exc
