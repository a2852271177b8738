"""Finding plugins and actions: entry points, the built-in table, the plugin manager.

Plugins and actions are found through the entry-point groups
``volcanolib.plugins`` and ``volcanolib.actions``. The built-ins are also
listed in :data:`BUILTIN_PLUGINS` and :data:`BUILTIN_ACTIONS`, used when the
package metadata is missing (a source checkout); a test keeps the tables and
the entry points in agreement.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import logging
import os
import weakref
from collections.abc import Iterable, Mapping
from importlib import metadata
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, runtime_checkable

import attrs
import pluggy

from volcanolib.errors import ConfigError, PluginConfigError, PluginNotFoundError
from volcanolib.framework import hookspecs
from volcanolib.framework.arguments import declared_arguments, parse_arguments, unknown_arguments
from volcanolib.framework.config import DEFAULT_CONFIG, SchedulerConfig, Tier

if TYPE_CHECKING:
    from volcanolib.framework.session import Session

__all__ = [
    "BUILTIN_ACTIONS",
    "BUILTIN_PLUGINS",
    "CONTRIB_DISTRIBUTION",
    "CONTRIB_ACTIONS",
    "CONTRIB_PLUGINS",
    "Action",
    "Plugin",
    "PluginHost",
    "Provider",
    "Registry",
    "check_plugin_class",
    "hookimpl",
    "located",
]

log = logging.getLogger(__name__)

ACTION_GROUP: Final = "volcanolib.actions"
PLUGIN_GROUP: Final = "volcanolib.plugins"
DISABLE_ENV: Final = "VOLCANOLIB_DISABLE_PLUGINS"

#: Marks a plugin method as a hook implementation.
hookimpl: Final = pluggy.HookimplMarker(hookspecs.NAME)

#: Built-in plugins of the ``volcanolib`` distribution.
BUILTIN_PLUGINS: Final[Mapping[str, str]] = {
    "binpack": "volcanolib.plugins.binpack:BinpackPlugin",
    "conformance": "volcanolib.plugins.conformance:ConformancePlugin",
    "drf": "volcanolib.plugins.drf:DrfPlugin",
    "gang": "volcanolib.plugins.gang:GangPlugin",
    "priority": "volcanolib.plugins.priority:PriorityPlugin",
    "proportion": "volcanolib.plugins.proportion:ProportionPlugin",
}
#: Built-in actions of the ``volcanolib`` distribution.
BUILTIN_ACTIONS: Final[Mapping[str, str]] = {
    "allocate": "volcanolib.actions.allocate:Allocate",
    "backfill": "volcanolib.actions.backfill:Backfill",
    "enqueue": "volcanolib.actions.enqueue:Enqueue",
    "preempt": "volcanolib.actions.preempt:Preempt",
    "reclaim": "volcanolib.actions.reclaim:Reclaim",
}
CONTRIB_DISTRIBUTION: Final = "volcanolib-contrib"
#: Plugins shipped by the ``volcanolib-contrib`` distribution, named in errors when it is missing.
CONTRIB_PLUGINS: Final = frozenset(
    {"capacity", "deviceshare", "network-topology-aware", "nodeorder", "overcommit", "predicates", "sla"}
)
#: Actions shipped by the ``volcanolib-contrib`` distribution, named in errors when it is missing.
CONTRIB_ACTIONS: Final = frozenset({"gangpreempt", "gangreclaim", "shuffle"})
#: How to install ``volcanolib-contrib``: no package index serves it, it is built from a source checkout.
CONTRIB_INSTALL: Final = "from a volcanolib source checkout: pip install -e ./plugins_contrib"


@runtime_checkable
class Plugin(Protocol):
    """What a plugin class looks like.

    The class is built once per configuration with its ``arguments``: an
    instance of the class it names in an ``Arguments`` class attribute (see
    :mod:`volcanolib.framework.arguments`), parsed when the configuration is
    installed, or the raw :class:`~volcanolib.framework.config.Arguments`
    mapping when it declares none. It implements hooks as methods marked
    with :data:`hookimpl`.
    """

    name: ClassVar[str]

    def __init__(self, arguments: Any) -> None: ...


@runtime_checkable
class Action(Protocol):
    """What an action looks like: a name and ``execute(ssn)``, run once per cycle.

    An action that names a declaration class in an ``Arguments`` class
    attribute is built with its ``configurations`` arguments parsed into it
    (``Allocate(AllocateArguments(...))``); one without is built with no
    arguments and may read the raw mapping with
    :meth:`Session.action_arguments <volcanolib.framework.session.Session.action_arguments>`.
    """

    name: ClassVar[str]

    def execute(self, ssn: Session) -> None:
        """Run the action over the open session."""


@attrs.frozen
class Provider:
    """Where a plugin or action comes from."""

    name: str
    #: ``module:attribute``.
    target: str
    #: The distribution that registered it (``None`` when given directly).
    distribution: str | None = None
    #: The class itself, when it was given directly rather than by entry point.
    obj: Any = attrs.field(default=None, eq=False, repr=False)

    def load(self) -> Any:
        """Import and return the class."""
        if self.obj is not None:
            return self.obj
        module, _, attr = self.target.partition(":")
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj


def _entry_points(group: str) -> dict[str, Provider]:
    found: dict[str, Provider] = {}
    for ep in metadata.entry_points(group=group):
        dist = ep.dist.name if ep.dist is not None else None
        found.setdefault(ep.name, Provider(ep.name, ep.value, dist))
    return found


class Registry:
    """The installed plugins and actions.

    :param blocked: names to ignore; the environment variable
        ``VOLCANOLIB_DISABLE_PLUGINS`` (comma separated) adds to them.
    :param plugins: extra plugin classes by name, for embedding without
        packaging (they win over installed ones of the same name).
    :param actions: extra action classes by name.
    """

    def __init__(
        self,
        *,
        blocked: Iterable[str] = (),
        plugins: Mapping[str, type[Any]] | None = None,
        actions: Mapping[str, type[Any]] | None = None,
    ) -> None:
        env = os.environ.get(DISABLE_ENV, "")
        self.blocked = frozenset(blocked) | {n.strip() for n in env.split(",") if n.strip()}
        self._plugins = self._discover(PLUGIN_GROUP, BUILTIN_PLUGINS, plugins or {})
        self._actions = self._discover(ACTION_GROUP, BUILTIN_ACTIONS, actions or {})

    def _discover(self, group: str, builtin: Mapping[str, str], extra: Mapping[str, type[Any]]) -> dict[str, Provider]:
        found = _entry_points(group)
        for name, target in builtin.items():
            found.setdefault(name, Provider(name, target, "volcanolib"))
        for name, cls in extra.items():
            found[name] = Provider(name, f"{cls.__module__}:{cls.__qualname__}", None, cls)
        return {name: p for name, p in sorted(found.items()) if name not in self.blocked}

    @staticmethod
    def _load(provider: Provider, what: str) -> Any:
        """Import a provider's class; any failure is one line naming it, its distribution and the error."""
        try:
            return provider.load()
        except Exception as exc:
            origin = f" from distribution {provider.distribution!r}" if provider.distribution else ""
            if what == "plugin":  # the error's prefix names the plugin
                message = f"cannot import {provider.target}{origin}: {one_line(exc)}"
                raise PluginConfigError(message, plugin=provider.name) from exc
            message = f"cannot import {what} {provider.name!r} ({provider.target}){origin}: {one_line(exc)}"
            raise PluginConfigError(message) from exc

    def plugins(self) -> Mapping[str, Provider]:
        """Installed plugins by name."""
        return self._plugins

    def actions(self) -> Mapping[str, Provider]:
        """Installed actions by name."""
        return self._actions

    def plugin_class(self, name: str) -> type[Any]:
        """The class of an installed plugin.

        :raises PluginNotFoundError: naming the installed plugins, and the
            distribution to install when the plugin is a contrib one.
        :raises PluginConfigError: when the plugin's module cannot be
            imported, naming the plugin, its distribution and the error.
        """
        provider = self._plugins.get(name)
        if provider is None:
            installed = ", ".join(self._plugins) or "none"
            if name in CONTRIB_PLUGINS:
                hint = f"; it is provided by the {CONTRIB_DISTRIBUTION} distribution ({CONTRIB_INSTALL})"
            else:
                hint = _did_you_mean(name, self._plugins)
            raise PluginNotFoundError(f"unknown plugin {name!r}{hint}; installed plugins: {installed}")
        return self._load(provider, "plugin")  # type: ignore[no-any-return]

    def default_config(self) -> SchedulerConfig:
        """The default configuration, without the contrib plugins when they are not installed.

        :data:`~volcanolib.framework.config.DEFAULT_CONFIG` names plugins of
        ``volcanolib-contrib``. When that distribution is missing (or its
        plugins are blocked), the configuration returned leaves them out and
        carries one warning, logged once per process, saying what is left
        out and how to install them; otherwise it is ``DEFAULT_CONFIG`` itself.
        """
        wanted = {option.name for option in DEFAULT_CONFIG.plugin_options()}
        missing = (wanted & CONTRIB_PLUGINS) - set(self._plugins)
        return _default_without(tuple(sorted(missing))) if missing else DEFAULT_CONFIG

    def action_class(self, name: str) -> type[Any]:
        """The class of an installed action.

        :raises PluginNotFoundError: naming the installed actions, and the
            distribution to install when the action is a contrib one.
        :raises PluginConfigError: when the action's module cannot be imported.
        """
        provider = self._actions.get(name)
        if provider is None:
            installed = ", ".join(self._actions) or "none"
            if name in CONTRIB_ACTIONS:
                hint = f"; it is provided by the {CONTRIB_DISTRIBUTION} distribution ({CONTRIB_INSTALL})"
            else:
                hint = _did_you_mean(name, self._actions)
            raise PluginNotFoundError(f"unknown action {name!r}{hint}; installed actions: {installed}")
        return self._load(provider, "action")  # type: ignore[no-any-return]

    def action(self, name: str, arguments: Mapping[str, Any] | None = None) -> Action:
        """A new instance of an installed action, built with its arguments.

        :param arguments: the action's ``configurations`` arguments (none
            when omitted), parsed into its declaration if it has one.
        :raises PluginNotFoundError: naming the installed actions.
        :raises ConfigError: when an argument has the wrong type, naming the
            action and the argument.
        :raises PluginConfigError: when the action cannot be imported or built.
        """
        cls = self.action_class(name)
        declaration = declared_arguments(cls)
        try:
            if declaration is None:
                action: Action = cls()
            else:
                action = cls(parse_arguments(declaration, arguments or {}, owner=f"action {name!r}"))
        except ConfigError:
            raise
        except Exception as exc:
            raise PluginConfigError(f"cannot build action {name!r}: {one_line(exc)}") from exc
        return action


class PluginHost:
    """The plugins of one configuration, registered with their own plugin manager.

    Built once per configuration: plugin and action instances live as long
    as the configuration (plugins reset their state in ``on_session_open``).
    Declared arguments are parsed here, so a configuration with a bad one is
    refused before it runs.

    :raises ConfigError: when the configuration names an unknown plugin or
        action, a plugin or action argument has the wrong type, or a plugin
        refuses its arguments.
    :raises PluginConfigError: when a plugin's hooks do not match the specs,
        or a plugin or action cannot be imported.
    """

    def __init__(self, config: SchedulerConfig, registry: Registry | None = None) -> None:
        self.config = config
        self.registry = registry or Registry()
        self.pm = pluggy.PluginManager(hookspecs.NAME)
        self.pm.add_hookspecs(hookspecs)
        self.plugins: dict[str, Any] = {}
        # Each plugin's class and the arguments it was built with, to build it again (verify mode).
        self._built_with: dict[str, tuple[type[Any], Any]] = {}
        #: Arguments no declaration reads, one message each (logged once per configuration).
        self.warnings: list[str] = []
        where = f"{config.source}: " if config.source else ""
        for tier_index, tier in enumerate(config.tiers):
            for plugin_index, option in enumerate(tier.plugins):
                key = f"tiers[{tier_index}].plugins[{plugin_index}]"
                try:
                    cls = self.registry.plugin_class(option.name)
                except PluginNotFoundError as exc:
                    raise ConfigError(exc.message, key=f"{key}.name", source=config.source) from None
                except PluginConfigError as exc:
                    raise located(exc, config, key) from exc
                declaration = declared_arguments(cls)
                owner = f"plugin {option.name!r}"
                try:
                    if declaration is None:
                        instance_arguments: Any = option.arguments
                    else:
                        instance_arguments = parse_arguments(declaration, option.arguments, owner=owner)
                    instance = cls(instance_arguments)
                    if declaration is not None:
                        unread = unknown_arguments(declaration, option.arguments, owner=owner)
                        self.warnings += [f"{where}{key}.arguments: {message}" for message in unread]
                except ConfigError as exc:
                    if exc.source is None:
                        raise ConfigError(exc.message, key=exc.key, source=config.source) from None
                    raise
                except Exception as exc:
                    raise ConfigError(
                        f"plugin {option.name!r} refused its arguments: {one_line(exc)}",
                        key=f"{key}.arguments",
                        source=config.source,
                    ) from exc
                try:
                    _register(self.pm, instance, option.name)
                except PluginConfigError as exc:
                    raise located(exc, config, key) from exc
                self.plugins[option.name] = instance
                self._built_with[option.name] = (cls, instance_arguments)
        try:
            _check_pending(self.pm)
        except PluginConfigError as exc:
            raise located(exc, config) from exc
        self.actions = []
        for name in config.actions:
            try:
                self.actions.append(self.registry.action(name, config.action_arguments(name)))
            except PluginNotFoundError as exc:
                raise ConfigError(exc.message, key="actions", source=config.source) from None
            except PluginConfigError as exc:
                raise located(exc, config, "actions") from exc
            except ConfigError as exc:
                raise ConfigError(exc.message, key=exc.key, source=exc.source or config.source) from None
            declaration = declared_arguments(self.registry.action_class(name))
            if declaration is not None:
                unread = unknown_arguments(declaration, config.action_arguments(name), owner=f"action {name!r}")
                self.warnings += [f"{where}configurations: {message}" for message in unread]
        _warn_once(config, self.warnings)

    def build(self, name: str) -> Any:
        """A new instance of one of the configuration's plugins, built as its registered one was.

        .. versionadded:: 0.2
        """
        cls, arguments = self._built_with[name]
        return cls(arguments)

    def implemented_hooks(self, name: str) -> list[str]:
        """The hooks one registered plugin implements, in spec order."""
        plugin = self.pm.get_plugin(name)
        if plugin is None:
            return []
        return [c.name for c in self.pm.get_hookcallers(plugin) or ()]


def _did_you_mean(name: str, known: Iterable[str]) -> str:
    match = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _register(pm: pluggy.PluginManager, plugin: object, name: str) -> None:
    try:
        pm.register(plugin, name=name)
    except (pluggy.PluginValidationError, ValueError) as exc:
        raise PluginConfigError(" ".join(str(exc).split()), plugin=name) from exc


def _check_pending(pm: pluggy.PluginManager) -> None:
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        name = pm.get_name(exc.plugin)
        message = str(exc).split(" in plugin ")[0]
        raise PluginConfigError(f"{message}: no such hook specification", plugin=name) from exc


def _place(config: SchedulerConfig, plugin: str | None) -> str | None:
    for tier_index, tier in enumerate(config.tiers):
        for plugin_index, option in enumerate(tier.plugins):
            if option.name == plugin:
                return f"tiers[{tier_index}].plugins[{plugin_index}]"
    return None


def located(exc: PluginConfigError, config: SchedulerConfig, key: str | None = None) -> PluginConfigError:
    """The same error, its message led by the configuration's file and the key of the entry at fault.

    ``plugin 'badhook': unknown hook 'job_ordr' ...`` becomes
    ``sched.conf: tiers[0].plugins[0]: plugin 'badhook': unknown hook 'job_ordr' ...``;
    the ``plugin`` and ``hook`` attributes are kept.

    :param key: the entry at fault; by default the tier entry of the error's plugin.
    """
    if key is None:
        key = _place(config, exc.plugin)
    where = ": ".join(part for part in (config.source, key) if part)
    if not where:
        return exc
    err = PluginConfigError(exc.message, plugin=exc.plugin, hook=exc.hook)
    err.args = (f"{where}: {exc}",)
    return err


_reported: set[int] = set()


def _warn_once(config: SchedulerConfig, messages: Iterable[str]) -> None:
    """Log a configuration's warnings once, however many schedulers install that same configuration."""
    messages = list(messages)
    if not messages or id(config) in _reported:
        return
    _reported.add(id(config))
    weakref.finalize(config, _reported.discard, id(config))
    for message in messages:
        log.warning("%s", message)


@functools.cache
def _default_without(missing: tuple[str, ...]) -> SchedulerConfig:
    tiers = tuple(Tier(tuple(p for p in tier.plugins if p.name not in missing)) for tier in DEFAULT_CONFIG.tiers)
    names = ", ".join(missing)
    message = (
        f"{CONTRIB_DISTRIBUTION} is not installed: the default configuration runs without {names}"
        f"{' (node affinity, taints and host ports are not checked)' if 'predicates' in missing else ''}; "
        f"to install it, {CONTRIB_INSTALL}"
    )
    log.warning("%s", message)
    return SchedulerConfig(
        actions=DEFAULT_CONFIG.actions,
        tiers=tiers,
        configurations=DEFAULT_CONFIG.configurations,
        source=DEFAULT_CONFIG.source,
        warnings=(*DEFAULT_CONFIG.warnings, message),
    )


def check_plugin_class(name: str, cls: type[Any]) -> None:
    """Check a plugin class against the hook specifications, as installing a configuration would.

    Used to list installed plugins without building them (building needs
    arguments): every method marked with :data:`hookimpl` must name a hook
    and take only the hook's arguments, and may not ask for its own order
    (``tryfirst``, ``trylast``, ``wrapper``, ``hookwrapper``).

    :raises PluginConfigError: naming the plugin, the hook and the fault.
    """
    pm = pluggy.PluginManager(hookspecs.NAME)
    pm.add_hookspecs(hookspecs)
    _register(pm, cls, name)
    _check_pending(pm)
    for hook in hookspecs.HOOK_NAMES:
        for impl in getattr(pm.hook, hook).get_hookimpls():
            hookspecs.refuse_own_order(impl, name, hook)


def one_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def hooks_of(cls: type[Any]) -> list[str]:
    """The hook names a plugin class implements (methods marked with :data:`hookimpl`)."""
    names = []
    for hook in hookspecs.HOOK_NAMES:
        method = getattr(cls, hook, None)
        if method is not None and hasattr(method, f"{hookspecs.NAME}_impl"):
            names.append(hook)
    return names
