"""The rules that combine plugin answers across tiers, each written once.

Every hook declares its rule in :mod:`volcanolib.framework.hookspecs`
(``@hookspec(rule=Rule.ALL_PASS, ...)``); each :class:`Rule` is one function
here. A function takes a compiled table (tiers of ``(plugin name, function)``
entries, see :mod:`volcanolib.framework.dispatch`) and returns a closure that
applies the rule. Closures are specialised for the common shapes (no
implementation, one implementation) so that a hook nobody implements costs
nothing.

The functions in a table are *guarded* (:func:`guard`): a plugin function
that raises surfaces as a :class:`~volcanolib.errors.PluginError` naming the
plugin and the hook, so the loops here never wrap failures themselves.
Orders given an ``on_error`` callback report such a failure to it instead and
treat the failing plugin as having no opinion, so one broken comparison
cannot stop a sort. Notifications (``call_all``) reach every plugin even when
one of them fails, then raise the first failure, so plugins that keep books
from allocate and deallocate events stay in step with each other.
"""

from __future__ import annotations

import enum
import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeAlias, TypeVar

from volcanolib.errors import PluginError
from volcanolib.framework.status import Code, Status, Vote

__all__ = [
    "BUILDERS",
    "KEY_FAILED",
    "Entry",
    "NodeEntry",
    "Rule",
    "Table",
    "all_or_none",
    "all_pass",
    "all_pass_nodes",
    "all_true",
    "any_true",
    "call_all",
    "first_nonzero",
    "first_not_none",
    "guard",
    "intersect_per_tier",
    "key_tuple",
    "one_node",
    "sum_by_name",
    "plugin_failure",
    "tier_decides",
    "union_per_tier",
    "vote_per_tier",
    "weighted_sum",
]

#: One implementation: the plugin's configured name and its bound, guarded function.
Entry: TypeAlias = tuple[str, Callable[..., Any]]
#: Implementations of one hook, tier by tier, in configuration order.
Table: TypeAlias = tuple[tuple[Entry, ...], ...]
#: A plugin that checks or scores nodes: its name, its per-node function and its batch function (either may be
#: ``None``), in configuration order across tiers.
NodeEntry: TypeAlias = tuple[str, Callable[..., Any] | None, Callable[..., Any] | None]
#: Told the first failure of a node (node, status, plugin); returns whether the node stays in (see all_pass_nodes).
Failed: TypeAlias = Callable[[Any, Status, str], bool]

log = logging.getLogger(__name__)
T = TypeVar("T")
N = TypeVar("N")
_SUCCESS: Final = Status.success()
#: Receives a plugin failure that an order recovered from.
OnError: TypeAlias = Callable[[PluginError], None]


class Rule(enum.Enum):
    """How the answers of several plugins and tiers make one answer; the value names the function applying it."""

    CALL_ALL = "call_all"
    FIRST_NONZERO = "first_nonzero"
    FIRST_NOT_NONE = "first_not_none"
    ALL_PASS = "all_pass"
    WEIGHTED_SUM = "weighted_sum"
    ALL_OR_NONE = "all_or_none"
    INTERSECT_PER_TIER = "intersect_per_tier"
    VOTE_PER_TIER = "vote_per_tier"
    ANY_TRUE = "any_true"
    ALL_TRUE = "all_true"
    TIER_DECIDES = "tier_decides"
    UNION_PER_TIER = "union_per_tier"
    SUM_BY_NAME = "sum_by_name"

    @property
    def function(self) -> Callable[..., Any]:
        """The function of this module that applies the rule."""
        return globals()[self.value]  # type: ignore[no-any-return]


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


# ---------------------------------------------------------------------------- failures


def plugin_failure(plugin: str, hook: str, exc: BaseException) -> PluginError:
    """Wrap an exception raised by a plugin's hook (a :class:`PluginError` raised deeper is kept as is)."""
    if isinstance(exc, PluginError):
        return exc
    return PluginError(f"{type(exc).__name__}: {exc}", plugin=plugin, hook=hook)


def guard(plugin: str, hook: str, fn: Callable[..., T], *bound: Any, arity: int | None = None) -> Callable[..., T]:
    """``fn`` with ``bound`` first; any failure is raised as a :class:`PluginError` naming plugin and hook.

    This is the one place a plugin failure is wrapped; the rules above and
    below call guarded functions only. ``arity`` is the number of arguments
    the result takes, when known: calls of one argument, and of two after one
    bound argument, are unrolled, because a ``*args`` call costs about 100 ns
    more and per-node and per-task hooks are called hundreds of thousands of
    times a session.
    """
    if not bound and arity == 1:

        def call1(a: Any) -> T:
            try:
                return fn(a)
            except Exception as exc:
                raise plugin_failure(plugin, hook, exc) from exc

        return call1
    if len(bound) == 1 and arity in (1, 2):
        (first,) = bound
        if arity == 1:

            def bound1(a: Any) -> T:
                try:
                    return fn(first, a)
                except Exception as exc:
                    raise plugin_failure(plugin, hook, exc) from exc

            bound1.__dict__[_PARTS] = (plugin, hook, fn, first, 1)
            return bound1

        def bound2(a: Any, b: Any) -> T:
            try:
                return fn(first, a, b)
            except Exception as exc:
                raise plugin_failure(plugin, hook, exc) from exc

        bound2.__dict__[_PARTS] = (plugin, hook, fn, first, 2)
        return bound2
    inner = functools.partial(fn, *bound) if bound else fn

    def call(*args: Any) -> T:
        try:
            return inner(*args)
        except Exception as exc:
            raise plugin_failure(plugin, hook, exc) from exc

    return call


#: The attribute under which a guarded function of one bound argument keeps
#: ``(plugin, hook, function, bound argument, arity)``.
_PARTS: Final = "_volcanolib_guarded"


def _unguarded(entries: Sequence[Entry], arity: int) -> tuple[tuple[str, str, Callable[..., Any], Any], ...] | None:
    """``(plugin, hook, function, bound argument)`` of every guarded entry, or ``None`` when one is not plain.

    An entry is plain when :func:`guard` made it from a function, one bound
    argument and ``arity`` more arguments.

    A rule looping over these catches failures itself (through
    :func:`plugin_failure`, as :func:`guard` does) and saves one Python call
    per plugin; a traced or adapted entry keeps the guarded path.
    """
    parts = []
    for _plugin, fn in entries:
        found = getattr(fn, _PARTS, None)
        # A wrapper of a guard (tracing, functools.wraps) copies its attributes but must stay in the call.
        if found is None or found[4] != arity or hasattr(fn, "__wrapped__"):
            return None
        parts.append(found[:4])
    return tuple(parts)


_Call = tuple[str, str, Callable[..., Any], Any]


def _calls(tiers: Sequence[Sequence[Entry]], arity: int) -> tuple[tuple[tuple[_Call, ...], ...], bool]:
    """``(plugin, hook, function, bound)`` per entry, tier by tier, for a rule's one loop.

    When every entry is a plain guard of ``arity`` arguments (see
    :func:`_unguarded`), its parts are given, the loop calls
    ``function(bound, *args)`` and catches failures itself, saving a Python
    call per plugin; the flag is then true. Otherwise every entry is called
    through its guard with the arguments packed in one tuple
    (``function(None, args)``), and the flag is false.
    """
    plain = tuple(_unguarded(tier, arity) for tier in tiers)
    if all(parts is not None for parts in plain):
        return tuple(parts for parts in plain if parts is not None), True
    return tuple(tuple((plugin, "", _packed(fn), None) for plugin, fn in tier) for tier in tiers), False


def _packed(fn: Callable[..., Any]) -> Callable[[Any, tuple[Any, ...]], Any]:
    def call(_bound: Any, args: tuple[Any, ...]) -> Any:
        return fn(*args)

    return call


def _raised(plugin: str, hook: str, exc: Exception) -> PluginError:
    """The :class:`PluginError` a rule's loop raises for ``exc`` (kept as is when it is one already)."""
    err = plugin_failure(plugin, hook, exc)
    if err is not exc:
        err.__cause__ = exc
    return err


# ---------------------------------------------------------------------------- orders


def first_nonzero(table: Table, fallback: Callable[..., int], on_error: OnError | None = None) -> Callable[..., int]:
    """Orders: the first non-zero comparison in tier order decides; when every plugin abstains, the tie-break does.

    :param fallback: the tie-break, called with the same arguments.
    :param on_error: when given, a failing plugin is reported to it and abstains.
    """
    entries = _flat(table)
    if not entries:
        return fallback
    fns = tuple(fn for _, fn in entries)

    def compare(*args: Any) -> int:
        for fn in fns:
            try:
                result = fn(*args)
            except PluginError as err:
                if on_error is None:
                    raise
                on_error(err)
                continue
            if result:
                return -1 if result < 0 else 1
        return fallback(*args)

    return compare


def key_tuple(
    table: Table, fallback: Callable[[T], tuple[Any, ...]], on_error: OnError | None = None
) -> Callable[[T], tuple[Any, ...]]:
    """``first_nonzero`` as a sort key: the plugins' keys in tier order, then ``fallback``'s.

    :param on_error: when given, a failing plugin is reported to it and its
        key for that item is :data:`KEY_FAILED` (after every other key);
        otherwise the failure is raised.
    """
    fns = tuple(fn for _, fn in _flat(table))
    if not fns:
        return fallback

    def recover(item: T) -> tuple[Any, ...]:
        parts: list[Any] = []
        for fn in fns:
            try:
                parts.append(fn(item))
            except PluginError as err:
                if on_error is None:
                    raise
                on_error(err)
                parts.append(KEY_FAILED)
        return (*parts, *fallback(item))

    if len(fns) == 1:
        (only,) = fns

        def key1(item: T) -> tuple[Any, ...]:
            try:
                return (only(item), *fallback(item))
            except PluginError:
                return recover(item)

        return key1

    def key(item: T) -> tuple[Any, ...]:
        try:
            return (*[fn(item) for fn in fns], *fallback(item))
        except PluginError:
            return recover(item)

    return key


# ---------------------------------------------------------------------------- predicates and scores


def all_pass(table: Table) -> Callable[..., Status]:
    """Every plugin must succeed; the first failure in tier order is the answer, naming its plugin."""
    entries = _flat(table)
    if not entries:
        return lambda *args: _SUCCESS

    def check(*args: Any) -> Status:
        for plugin, fn in entries:
            status = fn(*args)
            if status is not None and status.code is not Code.SUCCESS:
                return status.with_plugin(plugin)  # type: ignore[no-any-return]
        return _SUCCESS

    return check


def one_node(entries: Sequence[NodeEntry]) -> Table:
    """The per-node table of node hooks: each plugin's per-node function, else its batch asked about one node."""
    out: list[Entry] = []
    for plugin, single, many in entries:
        if single is not None:
            out.append((plugin, single))
        elif many is not None:
            out.append((plugin, _asked_about_one(many)))
    return (tuple(out),)


def _asked_about_one(many: Callable[..., Mapping[str, Any] | None]) -> Callable[[Any, Any], Any]:
    def one(task: Any, node: Any) -> Any:
        return (many(task, [node]) or {}).get(node.name)

    return one


def all_pass_nodes(entries: Sequence[NodeEntry]) -> Callable[[Any, Sequence[N], Failed | None], list[N]]:
    """``all_pass`` over many nodes: the nodes, in the given order, that every plugin passes.

    A plugin with a batch function is asked once about every node still in
    the running; others once per node. ``failed(node, status, plugin)``, when
    given, is told each node's first failure (tier order); when it returns
    true, the node stays in but no later plugin checks it.
    """
    entries = tuple(entries)

    def check(task: Any, nodes: Sequence[N], failed: Failed | None) -> list[N]:
        # The batch stays the caller's object until a node fails, so that a batch of every
        # ready node reaches the plugins as ``ssn.node_list`` itself.
        candidates: Sequence[N] = nodes
        spared: set[str] | None = None
        for plugin, single, many in entries:
            if not candidates:
                break
            keep: list[N] = []
            if many is not None:
                failures = many(task, candidates)
                if not failures:
                    continue
                for node in candidates:
                    status = failures.get(node.name)  # type: ignore[attr-defined]
                    if status is None or status.code is Code.SUCCESS:
                        keep.append(node)
                    elif failed is not None and failed(node, status, plugin):
                        spared = spared or set()
                        spared.add(node.name)  # type: ignore[attr-defined]
            else:
                assert single is not None
                for node in candidates:
                    status = single(task, node)
                    if status is None or status.code is Code.SUCCESS:
                        keep.append(node)
                    elif failed is not None and failed(node, status, plugin):
                        spared = spared or set()
                        spared.add(node.name)  # type: ignore[attr-defined]
            if len(keep) != len(candidates):
                candidates = keep
        if spared:
            alive = {n.name for n in candidates} | spared  # type: ignore[attr-defined]
            return [n for n in nodes if n.name in alive]  # type: ignore[attr-defined]
        return list(candidates)

    return check


def weighted_sum(entries: Sequence[NodeEntry]) -> Callable[[Any, Sequence[Any]], dict[str, float]]:
    """Each node's score is the sum of every plugin's (already weighted) score; a node a plugin leaves out scores 0.

    A plugin with a batch function is asked once about all the nodes; others once per node.
    """
    entries = tuple(entries)

    def scores(task: Any, nodes: Sequence[Any]) -> dict[str, float]:
        total = dict.fromkeys((n.name for n in nodes), 0.0)
        for _plugin, single, many in entries:
            if many is not None:
                for name, score in (many(task, nodes) or {}).items():
                    if name in total:
                        total[name] += score
            else:
                assert single is not None
                for node in nodes:
                    total[node.name] += single(task, node) or 0.0
        return total

    return scores


def first_not_none(table: Table) -> Callable[..., Any]:
    """The first answer that is not ``None``, in tier order; ``None`` when every plugin abstains."""
    fns = tuple(fn for _, fn in _flat(table))

    def first(*args: Any) -> Any:
        for fn in fns:
            result = fn(*args)
            if result is not None:
                return result
        return None

    return first


def all_or_none(table: Table) -> Callable[..., tuple[Any, ...] | None]:
    """Every plugin's answer, in tier order; ``None`` as soon as one plugin abstains (answers ``None``)."""
    fns = tuple(fn for _, fn in _flat(table))

    def answers(*args: Any) -> tuple[Any, ...] | None:
        out = []
        for fn in fns:
            answer = fn(*args)
            if answer is None:
                return None
            out.append(answer)
        return tuple(out)

    return answers


# ---------------------------------------------------------------------------- victims


def intersect_per_tier(table: Table) -> Callable[[Any, Sequence[Any]], list[Any] | None]:
    """Victims: lists intersected within a tier, afresh after an empty one; the first tier with victims decides.

    Each plugin sees the full candidate list; an abstention (``None``) is
    ignored; an empty list ends the tier with no victims; other lists are
    intersected, keeping the order of the first. When an intersection comes
    out empty, the next plugin of the tier starts afresh with its own list,
    as if no plugin had answered before it. A tier that ends empty falls
    through, and the next tier starts afresh (Volcano's
    Preemptable/Reclaimable).
    """

    tiers, plain = _calls(table, 2)
    tiers = tuple(tier for tier in tiers if tier)

    def victims(actor: Any, candidates: Sequence[Any]) -> list[Any] | None:
        for tier in tiers:
            chosen: list[Any] | None = None
            for plugin, hook, fn, first in tier:
                try:
                    result = fn(first, actor, candidates) if plain else fn(None, (actor, candidates))
                except Exception as exc:
                    raise _raised(plugin, hook, exc)  # noqa: B904 - the cause is set on the new error
                if result is None:
                    continue
                if not result:
                    chosen = None
                    break
                if chosen is None:
                    chosen = list(result)
                else:
                    keep = {id(t) for t in result}
                    # Volcano holds an empty intersection as a nil list: the next plugin starts over.
                    chosen = [t for t in chosen if id(t) in keep] or None
            if chosen:
                return chosen
        return None

    return victims


def union_per_tier(table: Table) -> Callable[[Sequence[Any]], list[Any]]:
    """Victims chosen by plugins: within a tier the lists are joined; the first tier that names any decides.

    An abstention (``None``) or an empty list adds nothing; a task named by
    several plugins appears once, where it was first named (tier order,
    then each plugin's order). Empty when no tier names any (Volcano's
    VictimTasks, whose set has no order; this one is deterministic).
    """
    tiers = tuple(tuple(fn for _, fn in tier) for tier in table if tier)

    def victims(candidates: Sequence[Any]) -> list[Any]:
        for tier in tiers:
            chosen: dict[int, Any] = {}
            for fn in tier:
                result = fn(candidates)
                if result:
                    for task in result:
                        chosen.setdefault(id(task), task)
            if chosen:
                return list(chosen.values())
        return []

    return victims


def sum_by_name(table: Table) -> Callable[..., dict[str, float]]:
    """Scores by name summed over every plugin of every tier; a name a plugin leaves out gets 0 from it.

    The sum covers the names any plugin scored; an empty mapping when no
    plugin has an opinion (Volcano's HyperNodeOrderMapFn).
    """
    fns = tuple(fn for _, fn in _flat(table))

    def summed(*args: Any) -> dict[str, float]:
        total: dict[str, float] = {}
        for fn in fns:
            for name, score in (fn(*args) or {}).items():
                total[name] = total.get(name, 0.0) + score
        return total

    return summed


# ---------------------------------------------------------------------------- booleans and votes


def vote_per_tier(table: Table) -> Callable[[Any], bool]:
    """Votes: a reject decides no at once; a permit seen by the end of a tier decides yes; all abstaining is yes."""

    def vote(item: Any) -> bool:
        permitted = False
        for tier in table:
            for _plugin, fn in tier:
                result = fn(item)
                if result is None or result == Vote.ABSTAIN:
                    continue
                if result == Vote.REJECT or result < 0:
                    return False
                permitted = True
            if permitted:
                return True
        return True

    return vote


def any_true(table: Table) -> Callable[..., bool]:
    """True as soon as one plugin says true; false when none does."""
    fns = tuple(fn for _, fn in _flat(table))

    def check(*args: Any) -> bool:
        for fn in fns:  # noqa: SIM110 - a plain loop: any() over a generator costs more per call
            if fn(*args):
                return True
        return False

    return check


def all_true(table: Table) -> Callable[..., bool]:
    """False as soon as one plugin says false (``None`` abstains); true when none does."""
    fns = tuple(fn for _, fn in _flat(table))
    if not fns:
        return lambda *args: True

    def check(*args: Any) -> bool:
        for fn in fns:
            result = fn(*args)
            if result is not None and not result:
                return False
        return True

    return check


def tier_decides(table: Table) -> Callable[[Any], bool]:
    """The first tier with an implementation decides, by AND; false when no plugin implements the hook."""
    tiers = tuple(tier for tier in table if tier)
    if not tiers:
        return lambda item: False
    fns = tuple(fn for _, fn in tiers[0])

    def check(item: Any) -> bool:
        for fn in fns:  # noqa: SIM110 - a plain loop: all() over a generator costs more per call
            if not fn(item):
                return False
        return True

    return check


def call_all(table: Table) -> Callable[..., None]:
    """Notifications: every implementation is called, in tier order.

    A failing implementation does not stop the others; the first failure is
    raised once all have been called, later ones are logged.
    """
    fns = tuple(fn for _, fn in _flat(table))
    if not fns:
        return lambda *args: None
    if len(fns) == 1:
        return fns[0]
    (calls,), plain = _calls((_flat(table),), 1)

    def notify(args: Any) -> None:
        first: PluginError | None = None
        for plugin, hook, fn, bound in calls:
            try:
                fn(bound, args)
            except Exception as exc:
                err = _raised(plugin, hook, exc)
                if first is None:
                    first = err
                else:
                    log.error("%s (after an earlier failure in the same call)", err)
        if first is not None:
            raise first

    if plain:
        return notify

    def call(*args: Any) -> None:
        notify(args)

    return call


def timed(table: Table, seconds: dict[str, float]) -> Table:
    """The same table, each implementation adding the seconds it takes to ``seconds[plugin]`` (failing or not).

    For the hooks called once a session (opening and closing): the per-plugin
    latency Volcano reports. Not for hooks called per task or node.
    """

    def clocked(plugin: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args)
            finally:
                seconds[plugin] = seconds.get(plugin, 0.0) + time.perf_counter() - start

        return call

    return tuple(tuple((plugin, clocked(plugin, fn)) for plugin, fn in tier) for tier in table)


#: The rules a session applies from a hook's table alone, by rule. The others need more than the table: orders
#: a tie-break, node hooks both their per-node and batch functions, ``all_or_none`` the plugins that must answer.
BUILDERS: Final[Mapping[Rule, Callable[[Table], Callable[..., Any]]]] = {
    Rule.CALL_ALL: call_all,
    Rule.FIRST_NOT_NONE: first_not_none,
    Rule.ALL_PASS: all_pass,
    Rule.INTERSECT_PER_TIER: intersect_per_tier,
    Rule.VOTE_PER_TIER: vote_per_tier,
    Rule.ANY_TRUE: any_true,
    Rule.ALL_TRUE: all_true,
    Rule.TIER_DECIDES: tier_decides,
    Rule.UNION_PER_TIER: union_per_tier,
    Rule.SUM_BY_NAME: sum_by_name,
}
