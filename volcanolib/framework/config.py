"""volcano-scheduler.conf: actions, tiers of plugins, switches and arguments.

The format is Volcano's own, so an existing configuration loads unchanged::

    actions: "enqueue, allocate, backfill"
    tiers:
    - plugins:
      - name: priority
      - name: gang
        enablePreemptable: false
    - plugins:
      - name: binpack
        arguments: {binpack.weight: 10}
    configurations:
    - name: preempt
      arguments: {enableTopologyAwarePreemption: false}

A switch (``enableXxx``) that is absent means enabled. A key the parser does
not know is a warning naming the closest known key, not an error. A document
without ``actions`` (an empty or truncated file, a Kubernetes object, a
cluster dump) is not a scheduler configuration and is refused; an explicit
``actions: ""`` runs sessions without any action.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final, TypeVar

import attrs
import yaml

from volcanolib._yaml import yaml_error
from volcanolib.errors import ConfigError
from volcanolib.framework.arguments import parse_bool, parse_float, parse_int, parse_str
from volcanolib.framework.hookspecs import SPECS

__all__ = [
    "DEFAULT_CONFIG",
    "DEFAULT_CONFIG_TEXT",
    "HOOK_SWITCHES",
    "Arguments",
    "PluginOption",
    "SchedulerConfig",
    "Tier",
    "is_file_name",
    "load_config",
    "parse_config",
]

log = logging.getLogger(__name__)

#: The configuration used when none is given.
DEFAULT_CONFIG_TEXT: Final = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""

#: The switch consulted for each tiered hook, as the hooks declare it; hooks not listed are not gated.
HOOK_SWITCHES: Final[Mapping[str, str]] = {spec.name: spec.switch for spec in SPECS.values() if spec.switch}

#: Every switch Volcano knows (v1.7.0 and the current release); all default to true.
KNOWN_SWITCHES: Final = frozenset(
    {
        "enableJobOrder",
        "enableNamespaceOrder",
        "enableJobReady",
        "enableJobPipelined",
        "enableJobEnqueued",
        "enableTaskOrder",
        "enablePreemptable",
        "enableReclaimable",
        "enableQueueOrder",
        "enablePredicate",
        "enableBestNode",
        "enableNodeOrder",
        "enableTargetJob",
        "enableReservedNodes",
        "enabledVictim",
        "enableJobStarving",
        "enablePreemptive",
        "enabledOverused",
        "enabledAllocatable",
        "enabledHyperNodeOrder",
        "enabledSubJobReady",
        "enabledSubJobPipelined",
        "enabledSubJobOrder",
        "enabledHyperNodeGradient",
    }
)
#: Switches that default to false.
OFF_BY_DEFAULT: Final = frozenset({"enabledClusterOrder", "EnabledClusterOrder"})
_OTHER_PLUGIN_KEYS: Final = frozenset({"name", "arguments", "enableHierarchy"})
_TOP_KEYS: Final = frozenset({"actions", "tiers", "configurations", "metrics"})

T = TypeVar("T")


@attrs.frozen
class Arguments(Mapping[str, Any]):
    """A plugin's or an action's ``arguments`` as written, with typed getters.

    Plugins and actions that declare their arguments
    (:mod:`volcanolib.framework.arguments`) receive a parsed instance of
    their declaration instead; a plugin without a declaration receives this
    mapping. A value of the wrong type is an error naming the owner and the key.
    """

    data: Mapping[str, Any] = attrs.field(factory=dict)
    #: Who the arguments belong to, for errors: ``plugin 'binpack'``.
    owner: str = ""

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def _get(self, key: str, default: T, parse: Callable[[object], T]) -> T:
        value = self.data.get(key)
        if value is None:
            return default
        try:
            return parse(value)
        except ValueError as exc:
            raise ConfigError(str(exc), key=f"{self.owner} arguments.{key}".strip()) from None

    def get_int(self, key: str, default: int) -> int:
        """An integer argument."""
        return self._get(key, default, parse_int)

    def get_float(self, key: str, default: float) -> float:
        """A number argument (integers are accepted)."""
        return self._get(key, default, parse_float)

    def get_bool(self, key: str, default: bool) -> bool:
        """A boolean argument (``"true"``/``"false"`` strings are accepted)."""
        return self._get(key, default, parse_bool)

    def get_str(self, key: str, default: str) -> str:
        """A string argument."""
        return self._get(key, default, parse_str)


@attrs.frozen
class PluginOption:
    """One plugin's entry in a tier: its name, switches and arguments."""

    name: str
    arguments: Arguments = attrs.field(factory=Arguments)
    #: Switches given explicitly; absent ones are enabled.
    switches: Mapping[str, bool] = attrs.field(factory=dict)
    enable_hierarchy: bool = False

    def enabled(self, switch: str) -> bool:
        """Whether a switch is on (absent means on, except the cluster-order switch)."""
        value = self.switches.get(switch)
        if value is None:
            return switch not in OFF_BY_DEFAULT
        return value

    def hook_enabled(self, hook: str) -> bool:
        """Whether this plugin takes part in a tiered hook."""
        switch = HOOK_SWITCHES.get(hook)
        return True if switch is None else self.enabled(switch)


@attrs.frozen
class Tier:
    """A tier: plugins consulted in order before the next tier."""

    plugins: tuple[PluginOption, ...]


@attrs.frozen
class SchedulerConfig:
    """A parsed scheduler configuration."""

    actions: tuple[str, ...]
    tiers: tuple[Tier, ...]
    #: Per-action arguments, by action name.
    configurations: Mapping[str, Arguments] = attrs.field(factory=dict)
    #: The file the configuration came from, if any.
    source: str | None = None
    #: Warnings found while parsing (unknown keys).
    warnings: tuple[str, ...] = ()

    def plugin_options(self) -> Iterator[PluginOption]:
        """Every plugin entry, in tier order."""
        for tier in self.tiers:
            yield from tier.plugins

    def action_arguments(self, action: str) -> Arguments:
        """The ``configurations`` arguments of one action (empty when none)."""
        return self.configurations.get(action, Arguments(owner=f"action {action!r}"))


def _closest(key: str, known: frozenset[str]) -> str:
    match = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.5)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _expect(value: object, kind: type[T], what: str, key: str, source: str | None) -> T:
    if not isinstance(value, kind):
        names = {dict: "a mapping", list: "a list", str: "a string", bool: "true or false"}
        raise ConfigError(f"expected {names.get(kind, kind.__name__)}, got {value!r}", key=key, source=source)
    return value


def _check_is_scheduler_configuration(data: Mapping[Any, Any], source: str | None) -> None:
    """Refuse a mapping that is not a scheduler configuration: without ``actions`` nothing would be scheduled.

    An explicit ``actions: ""`` (or an empty list) is accepted: it opens and
    closes sessions that run no action, which scenarios that only score
    nodes use. A missing or ``null`` ``actions`` is what an empty, truncated
    or wrong file gives, and is refused, as Volcano refuses it.
    """
    kind = data.get("kind")
    if "actions" not in data and isinstance(kind, str) and ("apiVersion" in data or "metadata" in data):
        hint = ""
        if kind == "ConfigMap":
            hint = "; give the text of its data entry (volcano-scheduler.conf) instead"
        raise ConfigError(f"a Kubernetes {kind}, not a scheduler configuration{hint}", source=source)
    if "actions" not in data:
        close = difflib.get_close_matches("actions", [str(k) for k in data], n=1, cutoff=0.6)
        found = f" (found {close[0]!r}: did you mean 'actions'?)" if close else ""
        raise ConfigError(f"not a scheduler configuration: no 'actions' key{found}", source=source)
    if data["actions"] is None:
        raise ConfigError(
            'no actions given; name the actions to run (e.g. "enqueue, allocate, backfill"), '
            'or write actions: "" for a configuration that runs none',
            key="actions",
            source=source,
        )


def _parse_plugin(raw: object, key: str, source: str | None, warnings: list[str]) -> PluginOption:
    entry = _expect(raw, dict, "plugin", key, source)
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError("a plugin needs a 'name'", key=f"{key}.name", source=source)
    switches: dict[str, bool] = {}
    for opt, value in entry.items():
        opt = str(opt)
        if opt in _OTHER_PLUGIN_KEYS:
            continue
        if opt in KNOWN_SWITCHES or opt in OFF_BY_DEFAULT:
            switches[opt] = _expect(value, bool, "switch", f"{key}.{opt}", source)
        else:
            where = f"{source}: " if source else ""
            msg = f"{where}{key}: unknown plugin option {opt!r}{_closest(opt, KNOWN_SWITCHES)}; ignored"
            warnings.append(msg)
            log.warning(msg)
    hierarchy = entry.get("enableHierarchy", False)
    hierarchy = _expect(hierarchy, bool, "switch", f"{key}.enableHierarchy", source)
    args = entry.get("arguments") or {}
    args = _expect(args, dict, "arguments", f"{key}.arguments", source)
    return PluginOption(
        name=name.strip(),
        arguments=Arguments({str(k): v for k, v in args.items()}, owner=f"plugin {name.strip()!r}"),
        switches=switches,
        enable_hierarchy=hierarchy,
    )


#: Documents read, at most, to describe a text of several (a cluster file given as a configuration).
_DOCUMENTS_SHOWN: Final = 1000


def _several_documents(text: str) -> str | None:
    """What a text of several YAML documents is, as an error; ``None`` when it is not that.

    A configuration is one document; a file of several is most likely a
    cluster (Kubernetes objects, one per document) given in its place.
    """
    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    count = 0
    kinds: list[str] = []
    try:
        for doc in yaml.load_all(text, Loader=loader):
            if doc is None:
                continue
            count += 1
            kind = doc.get("kind") if isinstance(doc, dict) else None
            if isinstance(kind, str) and kind not in kinds:
                kinds.append(kind)
            if count > _DOCUMENTS_SHOWN:
                break
    except yaml.YAMLError:
        return None
    if count < 2:
        return None
    shown = f"more than {_DOCUMENTS_SHOWN}" if count > _DOCUMENTS_SHOWN else str(count)
    held = f" of Kubernetes objects ({', '.join(sorted(kinds))})" if kinds else ""
    return (
        f"{shown} YAML documents{held}, not a scheduler configuration: "
        "a configuration is one mapping with 'actions' and 'tiers' (cluster files are given as FILE arguments)"
    )


def parse_config(conf: str | Mapping[str, Any], *, source: str | None = None) -> SchedulerConfig:
    """Parse a configuration given as YAML text or as an already-loaded mapping.

    :param source: where the configuration came from, named in errors.
    :raises ConfigError: naming the offending key; also for a document that
        is not a scheduler configuration: empty, without an ``actions`` key
        or with ``actions`` left empty (``null``), or a Kubernetes object.
    """
    if isinstance(conf, str):
        try:
            data = yaml.safe_load(conf)
        except yaml.YAMLError as exc:
            several = _several_documents(conf)
            raise ConfigError(several or yaml_error(exc, conf), source=source) from None
    else:
        data = conf
    if data is None or data == {}:
        raise ConfigError("empty: not a scheduler configuration (it names no actions)", source=source)
    if not isinstance(data, dict):
        # a cluster dump can be megabytes long: name its type, not its content
        got = f"the text {data!r}" if isinstance(data, str) and len(data) < 80 else f"a {type(data).__name__}"
        hint = "; to read a file, use load_config" if isinstance(data, str) else ""
        raise ConfigError(f"not a scheduler configuration: expected a mapping, got {got}{hint}", source=source)
    _check_is_scheduler_configuration(data, source)
    warnings: list[str] = []
    for key in data:
        if key not in _TOP_KEYS:
            msg = f"{source + ': ' if source else ''}unknown key {key!r}{_closest(str(key), _TOP_KEYS)}; ignored"
            warnings.append(msg)
            log.warning(msg)

    raw_actions = data["actions"]
    if isinstance(raw_actions, list):
        names = [str(a).strip() for a in raw_actions]
    elif isinstance(raw_actions, str):
        names = [a.strip() for a in raw_actions.split(",")]
    else:
        raise ConfigError(f"expected a comma-separated string, got {raw_actions!r}", key="actions", source=source)
    actions = tuple(a for a in names if a)

    tiers: list[Tier] = []
    seen: dict[str, str] = {}
    raw_tiers = data.get("tiers") or []
    for ti, raw_tier in enumerate(_expect(raw_tiers, list, "tiers", "tiers", source)):
        tkey = f"tiers[{ti}]"
        tier_map = _expect(raw_tier, dict, "tier", tkey, source)
        plugins = []
        for pi, raw_plugin in enumerate(
            _expect(tier_map.get("plugins") or [], list, "plugins", f"{tkey}.plugins", source)
        ):
            pkey = f"{tkey}.plugins[{pi}]"
            option = _parse_plugin(raw_plugin, pkey, source, warnings)
            if option.name in seen:
                raise ConfigError(
                    f"plugin {option.name!r} is listed twice (first at {seen[option.name]})",
                    key=f"{pkey}.name",
                    source=source,
                )
            seen[option.name] = pkey
            plugins.append(option)
        names_in_tier = {p.name for p in plugins}
        if "proportion" in names_in_tier and any(p.name == "drf" and p.enable_hierarchy for p in plugins):
            # Volcano's file loader refuses this pairing, while its own tests use it; both plugins then
            # order queues, proportion's answer first if listed first. Warn rather than refuse.
            where = f"{source}: " if source else ""
            msg = f"{where}{tkey}: drf with enableHierarchy and proportion in one tier both order queues"
            warnings.append(msg)
            log.warning(msg)
        tiers.append(Tier(tuple(plugins)))

    configurations: dict[str, Arguments] = {}
    raw_confs = data.get("configurations") or []
    for ci, raw_conf in enumerate(_expect(raw_confs, list, "configurations", "configurations", source)):
        ckey = f"configurations[{ci}]"
        conf_map = _expect(raw_conf, dict, "configuration", ckey, source)
        name = conf_map.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ConfigError("a configuration needs a 'name'", key=f"{ckey}.name", source=source)
        args = _expect(conf_map.get("arguments") or {}, dict, "arguments", f"{ckey}.arguments", source)
        configurations[name.strip()] = Arguments({str(k): v for k, v in args.items()}, owner=f"action {name.strip()!r}")

    return SchedulerConfig(
        actions=actions,
        tiers=tuple(tiers),
        configurations=configurations,
        source=source,
        warnings=tuple(warnings),
    )


def is_file_name(text: str) -> bool:
    """Whether a configuration given as a string names a file rather than holding the configuration.

    The rule has no overlap: configuration text is YAML for a mapping (a
    configuration always has ``actions:``), so a string is a file name when
    it is one non-blank line that YAML reads as a single value, not a
    mapping or a list (``"sched.conf"``, ``"/etc/volcano/volcano-scheduler.conf"``).
    A multi-line string, and a line that is not valid YAML, are
    configuration text (the latter is then an error naming the YAML fault).
    """
    line = text.strip()
    if not line or "\n" in line:
        return False
    try:
        data = yaml.safe_load(line)
    except yaml.YAMLError:
        return False
    return not isinstance(data, (dict, list))


def load_config(path: str | Path) -> SchedulerConfig:
    """Read and parse a configuration file.

    :raises ConfigError: naming the file when it cannot be read or parsed.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None
    return parse_config(text.strip(), source=str(path))


#: The default configuration, parsed.
DEFAULT_CONFIG: Final = parse_config(DEFAULT_CONFIG_TEXT, source="<default>")
