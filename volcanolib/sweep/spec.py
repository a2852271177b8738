"""Sweep files: what to replay, under which configurations, at which loads and seeds.

A sweep file is YAML::

    workload: [workload.yaml]            # files, relative to the sweep file
    # format: openb                      # a trace format instead (with nodes:)
    # nodes: openb_node_list.csv
    replay: {period: 1s, until: 12h}     # optional replay settings for every point
    configurations:
      - name: proportion                 # a whole configuration file
        file: proportion.conf
      - base: base.conf                  # one base file, varied by a grid
        vary:
          - plugin: drf
            enabled: [true, false]       # in its tier, or left out
          - plugin: binpack
            argument: binpack.weight     # a plugin argument
            values: [1, 10]
          - plugin: gang
            switch: enablePreemptable    # an enableXxx switch
            values: [true, false]
          - plugin: proportion
            tier: [1, 2]                 # move the plugin to tier N (1-based)
          - actions: ["enqueue, allocate, backfill", "enqueue, allocate, backfill, reclaim"]
    load: [1.0, 1.5]                     # arrival times compressed by each factor
    seeds: [0, 1]

The points are every configuration (a grid expands to the cross product of its
axes) times every load factor times every seed. Every configuration is built
and parsed, and every file checked, before any replay starts: a bad sweep file
is one :class:`~volcanolib.errors.ConfigError` naming the sweep file, the point
or key, and what is wrong.
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import attrs
import yaml

from volcanolib._yaml import yaml_error
from volcanolib.errors import ConfigError, VolcanolibError
from volcanolib.framework.config import parse_config
from volcanolib.replay.inputs import load_factor

__all__ = ["Point", "Sweep", "load_sweep", "parse_sweep"]

_TOP_KEYS: Final = frozenset({"workload", "format", "nodes", "replay", "configurations", "load", "seeds"})
_AXIS_KEYS: Final = frozenset({"plugin", "enabled", "argument", "switch", "values", "tier", "actions"})


@attrs.frozen
class Point:
    """One replay of a sweep: a configuration, a load factor and a seed."""

    #: The configuration's name (a grid point's name lists its axis values).
    configuration: str
    #: The configuration as YAML text, ready for the scheduler.
    config_text: str = attrs.field(repr=False)
    #: Arrival times are divided by this factor (after the first arrival).
    load: float
    #: The replay's seed.
    seed: int

    @property
    def key(self) -> str:
        """A name unique within the sweep, safe as a file name."""
        conf = re.sub(r"[^A-Za-z0-9_.=+-]+", "_", self.configuration)
        return f"{conf}__load{self.load:g}__seed{self.seed}"

    def parameters(self) -> dict[str, Any]:
        """The point's parameters, as a results row starts."""
        return {"configuration": self.configuration, "load": self.load, "seed": self.seed}


@attrs.frozen
class Sweep:
    """A parsed sweep file: the workload and every point."""

    #: The sweep file, named in errors.
    source: str
    #: Workload files (absolute, or as given when relative to nowhere).
    workload: tuple[Path, ...]
    #: Trace format of the workload files, or ``None`` for Kubernetes objects.
    format: str | None
    #: The node list of a trace format that needs one.
    nodes: Path | None
    #: Replay settings shared by every point (``period``, ``until``, ...), as written.
    replay: Mapping[str, Any]
    points: tuple[Point, ...]


def _fail(source: str, key: str, message: str) -> ConfigError:
    return ConfigError(message, key=key, source=source)


def _list(data: Mapping[str, Any], key: str, source: str, default: list[Any] | None = None) -> list[Any]:
    value = data.get(key, default)
    if value is None:
        raise _fail(source, key, "is required")
    if not isinstance(value, list):
        value = [value]
    if not value:
        raise _fail(source, key, "is empty: the sweep would have no points")
    return value


def _plugin_entry(conf: dict[str, Any], name: str) -> tuple[int, int] | None:
    for ti, tier in enumerate(conf.get("tiers") or []):
        for pi, plugin in enumerate((tier or {}).get("plugins") or []):
            if isinstance(plugin, dict) and plugin.get("name") == name:
                return ti, pi
    return None


Transform = Callable[[dict[str, Any]], None]


def _axis(raw: object, where: str, source: str) -> list[tuple[str, Transform]]:
    """One grid axis: a list of (label, change to a configuration mapping)."""
    if not isinstance(raw, dict):
        raise _fail(source, where, f"an axis is a mapping, got {raw!r}")
    unknown = sorted(set(map(str, raw)) - _AXIS_KEYS)
    if unknown:
        raise _fail(source, f"{where}.{unknown[0]}", f"unknown key (known: {', '.join(sorted(_AXIS_KEYS))})")
    if "actions" in raw:
        if len(raw) > 1:
            raise _fail(source, where, "an 'actions' axis has no other keys")
        values = raw["actions"]
        if not isinstance(values, list) or not values:
            raise _fail(source, f"{where}.actions", "expected a non-empty list of action lists")

        def set_actions(value: str) -> Transform:
            def change(conf: dict[str, Any]) -> None:
                conf["actions"] = value

            return change

        return [(f"actions={str(v).replace(' ', '')}", set_actions(str(v))) for v in values]
    plugin = raw.get("plugin")
    if not isinstance(plugin, str) or not plugin:
        raise _fail(source, f"{where}.plugin", "an axis names a plugin (or gives 'actions')")
    kinds = [k for k in ("enabled", "argument", "switch", "tier") if k in raw]
    if len(kinds) != 1:
        raise _fail(source, where, "an axis varies exactly one of enabled, argument, switch or tier")
    kind = kinds[0]
    if kind in ("argument", "switch"):
        field = raw[kind]
        if not isinstance(field, str) or not field:
            raise _fail(source, f"{where}.{kind}", "expected a name")
        values = raw.get("values")
        values_key = f"{where}.values"
    else:
        field = ""
        values = raw[kind]
        values_key = f"{where}.{kind}"
    if not isinstance(values, list) or not values:
        raise _fail(source, values_key, "expected a non-empty list of values")

    def entry(conf: dict[str, Any]) -> dict[str, Any]:
        at = _plugin_entry(conf, plugin)
        if at is None:
            raise _fail(source, where, f"plugin {plugin!r} is not in the base configuration's tiers")
        entry: dict[str, Any] = conf["tiers"][at[0]]["plugins"][at[1]]
        return entry

    def change_for(value: Any) -> Transform:
        def change(conf: dict[str, Any]) -> None:
            if kind == "argument":
                entry(conf).setdefault("arguments", {})[field] = value
            elif kind == "switch":
                entry(conf)[field] = value
            elif kind == "enabled":
                if not isinstance(value, bool):
                    raise _fail(source, values_key, f"expected true or false, got {value!r}")
                if not value:
                    at = _plugin_entry(conf, plugin)
                    if at is None:
                        raise _fail(source, where, f"plugin {plugin!r} is not in the base configuration's tiers")
                    del conf["tiers"][at[0]]["plugins"][at[1]]
            else:
                if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                    raise _fail(source, values_key, f"a tier is a number from 1, got {value!r}")
                at = _plugin_entry(conf, plugin)
                if at is None:
                    raise _fail(source, where, f"plugin {plugin!r} is not in the base configuration's tiers")
                moved = conf["tiers"][at[0]]["plugins"].pop(at[1])
                tiers = conf.setdefault("tiers", [])
                while len(tiers) < value:
                    tiers.append({"plugins": []})
                tiers[value - 1].setdefault("plugins", []).append(moved)

        return change

    label = {"argument": f"{plugin}.{field}", "switch": f"{plugin}.{field}", "enabled": plugin}.get(
        kind, f"{plugin}.tier"
    )

    def show(value: Any) -> str:
        if kind == "enabled":
            return "on" if value is True else "off" if value is False else repr(value)
        return str(value).lower() if isinstance(value, bool) else str(value)

    return [(f"{label}={show(v)}", change_for(v)) for v in values]


def _read_yaml(path: Path, source: str, key: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        what = f"cannot read {path}" if key else "cannot read the sweep file"
        raise _fail(source, key, f"{what}: {exc.strerror or exc}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(yaml_error(exc, text), source=str(path)) from None


def _configurations(raw: list[Any], base_dir: Path, source: str) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for ci, item in enumerate(raw):
        where = f"configurations[{ci}]"
        if isinstance(item, str):
            item = {"file": item}
        if not isinstance(item, dict):
            raise _fail(source, where, f"expected a mapping with 'file' or 'base', got {item!r}")
        unknown = sorted(set(map(str, item)) - {"name", "file", "base", "vary"})
        if unknown:
            raise _fail(source, f"{where}.{unknown[0]}", "unknown key (known: base, file, name, vary)")
        if ("file" in item) == ("base" in item):
            raise _fail(source, where, "give either 'file' (a whole configuration) or 'base' (with 'vary')")
        if "file" in item and "vary" in item:
            raise _fail(source, f"{where}.vary", "'vary' goes with 'base', not with 'file'")
        file_key = "file" if "file" in item else "base"
        path = base_dir / str(item[file_key])
        data = _read_yaml(path, source, f"{where}.{file_key}")
        if not isinstance(data, dict):
            raise ConfigError("not a scheduler configuration: expected a mapping", source=str(path))
        name = item.get("name")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise _fail(source, f"{where}.name", f"expected a non-empty name, got {name!r}")
        stem = (name or path.stem).strip()
        if "file" in item:
            out.append((stem, data))
            continue
        raw_axes = item.get("vary") or []
        if not isinstance(raw_axes, list):
            raise _fail(source, f"{where}.vary", "expected a list of axes")
        axes = [_axis(axis, f"{where}.vary[{ai}]", source) for ai, axis in enumerate(raw_axes)]
        for combo in itertools.product(*axes):
            conf = copy.deepcopy(data)
            for _, change in combo:
                change(conf)
            label = ",".join(lab for lab, _ in combo)
            out.append((f"{stem}[{label}]" if label else stem, conf))
    names = [n for n, _ in out]
    for n in names:
        if names.count(n) > 1:
            raise _fail(source, "configurations", f"two configurations are named {n!r}; give them distinct names")
    return out


def _number(value: object, key: str, source: str, *, integer: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        raise _fail(source, key, f"expected {'an integer' if integer else 'a number'}, got {value!r}")
    return value


def parse_sweep(data: object, *, source: str, base_dir: Path) -> Sweep:
    """Build a sweep from an already-loaded sweep document.

    :param source: the sweep file's name, used in errors.
    :param base_dir: the folder relative file names are read from.
    :raises ConfigError: naming the sweep file, the key or point, and what is wrong.
    """
    if not isinstance(data, dict):
        raise ConfigError("not a sweep file: expected a mapping with 'workload' and 'configurations'", source=source)
    unknown = sorted(set(map(str, data)) - _TOP_KEYS)
    if unknown:
        raise _fail(source, unknown[0], f"unknown key (known: {', '.join(sorted(_TOP_KEYS))})")
    workload = tuple(base_dir / str(p) for p in _list(data, "workload", source))
    for wi, path in enumerate(workload):
        if not path.is_file():
            raise _fail(source, f"workload[{wi}]", f"no such file: {path}")
    fmt = data.get("format")
    if fmt is not None and not isinstance(fmt, str):
        raise _fail(source, "format", f"expected a trace format name, got {fmt!r}")
    nodes = base_dir / str(data["nodes"]) if data.get("nodes") is not None else None
    if nodes is not None and not nodes.is_file():
        raise _fail(source, "nodes", f"no such file: {nodes}")
    replay = data.get("replay") or {}
    if not isinstance(replay, dict):
        raise _fail(source, "replay", "expected a mapping of replay settings")
    configurations = _configurations(_list(data, "configurations", source), base_dir, source)
    loads = []
    for i, value in enumerate(_list(data, "load", source, [1])):
        if isinstance(value, str):  # a number is wanted here; load_factor would read "2" from the command line
            raise _fail(source, f"load[{i}]", f"expected a number, got {value!r}")
        try:
            loads.append(load_factor(value))
        except ValueError as exc:
            raise _fail(source, f"load[{i}]", str(exc)) from None
    seeds = [
        int(_number(v, f"seeds[{i}]", source, integer=True)) for i, v in enumerate(_list(data, "seeds", source, [0]))
    ]
    points = []
    for (name, conf), load, seed in itertools.product(configurations, loads, seeds):
        text = yaml.safe_dump(conf, sort_keys=False)
        try:
            parse_config(text, source=f"{source}: point {name}")
        except VolcanolibError as exc:
            raise ConfigError(str(exc)) from None
        points.append(Point(configuration=name, config_text=text, load=float(load), seed=seed))
    keys = [p.key for p in points]
    if len(set(keys)) != len(keys):
        raise _fail(source, "load", "two points share a name (repeated load factors or seeds?)")
    return Sweep(source=source, workload=workload, format=fmt, nodes=nodes, replay=replay, points=tuple(points))


def load_sweep(path: str | Path) -> Sweep:
    """Read and check a sweep file; relative names in it are read from its folder.

    :raises ConfigError: naming the sweep file, the key or point, and what is wrong.
    """
    path = Path(path)
    data = _read_yaml(path, str(path), "")
    return parse_sweep(data, source=str(path), base_dir=path.parent)
