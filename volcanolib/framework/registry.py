"""Finding plugins and actions: entry points, the built-in table, the plugin manager.

Plugins and actions are found through the entry-point groups
``volcanolib.plugins`` and ``volcanolib.actions``. The built-ins are also
listed in :data:`BUILTIN_PLUGINS` and :data:`BUILTIN_ACTIONS`, used when the
package metadata is missing (a source checkout); a test keeps the tables and
the entry points in agreement.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable, Mapping
from importlib import metadata
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, runtime_checkable

import attrs
import pluggy

from volcanolib.errors import ConfigError, PluginConfigError, PluginNotFoundError
from volcanolib.framework import hookspecs
from volcanolib.framework.arguments import declared_arguments, parse_arguments
from volcanolib.framework.config import SchedulerConfig

if TYPE_CHECKING:
    from volcanolib.framework.session import Session

__all__ = [
    "BUILTIN_ACTIONS",
    "BUILTIN_PLUGINS",
    "CONTRIB_DISTRIBUTION",
    "CONTRIB_PLUGINS",
    "Action",
    "Plugin",
    "PluginHost",
    "Provider",
    "Registry",
    "hookimpl",
]

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
CONTRIB_PLUGINS: Final = frozenset({"capacity", "nodeorder", "overcommit", "predicates"})


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
            hint = ""
            if name in CONTRIB_PLUGINS:
                hint = (
                    f"; it is provided by the {CONTRIB_DISTRIBUTION} distribution (pip install {CONTRIB_DISTRIBUTION})"
                )
            raise PluginNotFoundError(f"unknown plugin {name!r}{hint}; installed plugins: {installed}")
        return self._load(provider, "plugin")  # type: ignore[no-any-return]

    def action_class(self, name: str) -> type[Any]:
        """The class of an installed action.

        :raises PluginNotFoundError: naming the installed actions.
        :raises PluginConfigError: when the action's module cannot be imported.
        """
        provider = self._actions.get(name)
        if provider is None:
            installed = ", ".join(self._actions) or "none"
            raise PluginNotFoundError(f"unknown action {name!r}; installed actions: {installed}")
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
        for tier_index, tier in enumerate(config.tiers):
            for plugin_index, option in enumerate(tier.plugins):
                key = f"tiers[{tier_index}].plugins[{plugin_index}]"
                try:
                    cls = self.registry.plugin_class(option.name)
                except PluginNotFoundError as exc:
                    raise ConfigError(exc.message, key=f"{key}.name", source=config.source) from None
                declaration = declared_arguments(cls)
                try:
                    if declaration is None:
                        instance = cls(option.arguments)
                    else:
                        instance = cls(parse_arguments(declaration, option.arguments, owner=f"plugin {option.name!r}"))
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
                self._register(instance, option.name)
                self.plugins[option.name] = instance
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            name = self.pm.get_name(exc.plugin)
            message = str(exc).split(" in plugin ")[0]
            raise PluginConfigError(f"{message}: no such hook specification", plugin=name) from exc
        self.actions = []
        for name in config.actions:
            try:
                self.actions.append(self.registry.action(name, config.action_arguments(name)))
            except PluginNotFoundError as exc:
                raise ConfigError(exc.message, key="actions", source=config.source) from None
            except ConfigError as exc:
                raise ConfigError(exc.message, key=exc.key, source=exc.source or config.source) from None

    def _register(self, instance: object, name: str) -> None:
        try:
            self.pm.register(instance, name=name)
        except pluggy.PluginValidationError as exc:
            raise PluginConfigError(str(exc), plugin=name) from exc
        except ValueError as exc:
            raise PluginConfigError(str(exc), plugin=name) from exc

    def implemented_hooks(self, name: str) -> list[str]:
        """The hooks one registered plugin implements, in spec order."""
        plugin = self.pm.get_plugin(name)
        if plugin is None:
            return []
        return [c.name for c in self.pm.get_hookcallers(plugin) or ()]


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
