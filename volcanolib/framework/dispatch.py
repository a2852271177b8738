"""Compiled dispatch: per hook, the tiers of implementations a session calls.

pluggy declares the hooks and validates implementations; the order and the
combination come from the configuration. At configuration load,
:func:`compile_tables` builds, for every hook, a tuple of tiers, each a tuple
of the implementations of the plugins listed in that tier whose switch for
the hook is on. At session open, :func:`bind` fixes the session argument and guards each
implementation (:func:`~volcanolib.framework.combine.guard`: a failure is
raised naming the plugin and the hook), so a hot-path call is one Python call
per plugin, never ``pm.hook.<name>(...)``.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs

from volcanolib.framework.combine import Table, guard
from volcanolib.framework.hookspecs import SPECS, refuse_own_order

if TYPE_CHECKING:
    from volcanolib.framework.registry import PluginHost

__all__ = ["CompiledHook", "Tables", "bind", "compile_tables", "trace_enabled"]

log = logging.getLogger("volcanolib.trace")
TRACE_ENV: Final = "VOLCANOLIB_TRACE_PLUGINS"


@attrs.frozen
class CompiledHook:
    """One implementation of a hook, before the session is bound."""

    plugin: str
    function: Callable[..., Any]
    #: Positions in the spec's argument list of the implementation's arguments.
    positions: tuple[int, ...]
    #: Whether the implementation takes exactly the spec's arguments.
    exact: bool


#: Per hook name, the tiers of compiled implementations.
Tables = Mapping[str, tuple[tuple[CompiledHook, ...], ...]]


def compile_tables(host: PluginHost) -> dict[str, tuple[tuple[CompiledHook, ...], ...]]:
    """Build the dispatch tables of every hook for a configuration.

    :raises PluginConfigError: when a tiered hook implementation is declared
        ``wrapper``, ``hookwrapper``, ``tryfirst`` or ``trylast``.
    """
    tables: dict[str, tuple[tuple[CompiledHook, ...], ...]] = {}
    for hook, spec in SPECS.items():
        caller = getattr(host.pm.hook, hook)
        spec_args = spec.argnames
        impls = {impl.plugin_name: impl for impl in caller.get_hookimpls()}
        tiers = []
        for tier in host.config.tiers:
            entries = []
            for option in tier.plugins:
                impl = impls.get(option.name)
                if impl is None or not option.hook_enabled(hook):
                    continue
                refuse_own_order(impl, option.name, hook)
                args = tuple(impl.argnames)
                positions = tuple(spec_args.index(a) for a in args)
                entries.append(CompiledHook(option.name, impl.function, positions, args == spec_args))
            tiers.append(tuple(entries))
        tables[hook] = tuple(tiers)
    return tables


def _traced(plugin: str, hook: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def traced(*args: Any) -> Any:
        result = fn(*args)
        log.debug("%s.%s%r -> %r", plugin, hook, args, result)
        return result

    return traced


def trace_enabled() -> bool:
    """Whether plugin calls are logged (the ``VOLCANOLIB_TRACE_PLUGINS`` environment variable is set)."""
    return bool(os.environ.get(TRACE_ENV))


def bind(ssn: object, hook: str, tiers: tuple[tuple[CompiledHook, ...], ...], *, trace: bool | None = None) -> Table:
    """Fix the session argument of every implementation of one hook, and guard it.

    The result takes the hook's arguments without ``ssn``, in spec order; a
    failure is raised as a :class:`~volcanolib.errors.PluginError` naming the
    plugin and ``hook``. Each call is logged when ``trace`` is true (by
    default: when :func:`trace_enabled`).
    """
    if trace is None:
        trace = trace_enabled()
    arity = len(SPECS[hook].argnames) - 1
    out = []
    for tier in tiers:
        entries = []
        for c in tier:
            fn: Callable[..., Any]
            if c.exact:
                fn = guard(c.plugin, hook, c.function, ssn, arity=arity)
            else:
                fn = guard(c.plugin, hook, _adapter(ssn, c.function, c.positions), arity=arity)
            if trace:
                fn = _traced(c.plugin, hook, fn)
            entries.append((c.plugin, fn))
        out.append(tuple(entries))
    return tuple(out)


def _adapter(ssn: object, function: Callable[..., Any], positions: tuple[int, ...]) -> Callable[..., Any]:
    """Call an implementation that takes some of the spec's arguments, picked by position (``ssn`` is 0)."""

    def call(*args: Any) -> Any:
        full = (ssn, *args)
        return function(*[full[i] for i in positions])

    return call
