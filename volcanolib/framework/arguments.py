"""Typed arguments: plugins and actions declare theirs, the framework parses them once.

An action or a plugin declares its arguments as a frozen attrs class whose
fields are made with :func:`argument` (one configuration key each) and names
that class in a ``Arguments`` class attribute::

    @attrs.frozen
    class FenceArguments:
        \"\"\"Keeps fenced teams on their nodes.\"\"\"

        weight: int = argument(key="fence.weight", default=1, doc="Multiplies the score.")
        teams: str = argument(key="fence.teams", default="", doc="Comma-separated fenced teams.")

    class FencePlugin:
        name: ClassVar[str] = "fence"
        Arguments: ClassVar[type[FenceArguments]] = FenceArguments

        def __init__(self, arguments: FenceArguments) -> None:
            self.weight = arguments.weight

When a configuration is installed (at start and on every reload) the
framework calls :func:`parse_arguments` with the plugin's ``arguments``
mapping (or the action's ``configurations`` entry) and builds the plugin or
action with the result; a value of the wrong type is a
:class:`~volcanolib.errors.ConfigError` naming the owner and the key, and
the configuration is refused. A key that no field declares is ignored, as in
Volcano. A class without a declaration receives the raw
:class:`~volcanolib.framework.config.Arguments` mapping (plugins) or nothing
(actions).

The field's annotation gives the type: ``bool`` (also the strings
``"true"``/``"false"``), ``int``, ``float`` (integers accepted) or ``str``;
an absent key or a ``null`` value gives the default. Other types need a
``parse`` function. :func:`argument_per_name` declares a key family such as
``binpack.resources.<name>``, read for every name listed in another field.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

import attrs

from volcanolib.errors import ConfigError

__all__ = [
    "NAME_PLACEHOLDER",
    "ArgumentSpec",
    "NoArguments",
    "argument",
    "argument_per_name",
    "argument_specs",
    "argument_table",
    "declared_arguments",
    "parse_arguments",
    "parse_bool",
    "parse_float",
    "parse_int",
    "parse_str",
]

T = TypeVar("T")
A = TypeVar("A")

#: The attrs metadata key under which :func:`argument` stores its declaration.
_META: Final = "volcanolib.argument"
#: The placeholder of a per-name key.
NAME_PLACEHOLDER: Final = "<name>"


# ---------------------------------------------------------------------- scalar parsers


def parse_int(value: object) -> int:
    """An integer (``true``/``false`` are not integers).

    :raises ValueError: ``expected an integer, got ...``.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def parse_float(value: object) -> float:
    """A number; integers are accepted.

    :raises ValueError: ``expected a number, got ...``.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, got {value!r}")
    return float(value)


def parse_bool(value: object) -> bool:
    """A boolean; the strings ``true``/``false``/``t``/``f``/``1``/``0`` (any case) are accepted.

    :raises ValueError: ``expected a boolean, got ...``.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0", "t", "f"):
        return value.strip().lower() in ("true", "1", "t")
    raise ValueError(f"expected a boolean, got {value!r}")


def parse_str(value: object) -> str:
    """A string.

    :raises ValueError: ``expected a string, got ...``.
    """
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {value!r}")
    return value


_PARSERS: Final[Mapping[type, Callable[[object], Any]]] = {
    bool: parse_bool,
    int: parse_int,
    float: parse_float,
    str: parse_str,
}
_TYPE_NAMES: Final[Mapping[type, str]] = {bool: "bool", int: "int", float: "float", str: "string"}


# ---------------------------------------------------------------------- declaration


@attrs.frozen
class _Declared:
    """What :func:`argument` stores in a field's metadata."""

    key: str
    default: Any
    doc: str
    parse: Callable[[object], Any] | None
    #: For a per-name field: the field holding the comma-separated names.
    names: str | None = None


def argument(*, key: str, default: T, doc: str, parse: Callable[[object], T] | None = None) -> T:
    """Declare one argument: a field of a frozen attrs class.

    :param key: the configuration key, as users write it (``binpack.weight``).
    :param default: the value when the key is absent or ``null``.
    :param doc: one line for the configuration reference.
    :param parse: turns the raw value into the field's value, raising
        :class:`ValueError` with a message for a bad one; by default the
        field's annotation (``bool``, ``int``, ``float`` or ``str``) decides.
    :returns: an attrs field (typed as its value, like :func:`attrs.field`).
    """
    declared = _Declared(key, default, doc, parse)
    return attrs.field(default=default, metadata={_META: declared})


def argument_per_name(*, key: str, names: str, default: T, doc: str) -> Mapping[str, T]:
    """Declare a family of arguments, one per name listed in another field.

    ``argument_per_name(key="binpack.resources.<name>", names="resources", default=1, doc=...)``
    reads ``binpack.resources.nvidia.com/gpu`` when the field ``resources``
    is ``"nvidia.com/gpu"``. The field's annotation is ``Mapping[str, X]``
    with ``X`` one of the scalar types; its value maps every listed name
    (comma separated, blanks dropped) to its value or ``default``.

    :param key: the key, with ``<name>`` where the name goes.
    :param names: the attribute name of a ``str`` field declared before this one.
    """
    if NAME_PLACEHOLDER not in key:
        raise ValueError(f"a per-name argument key needs {NAME_PLACEHOLDER!r}: {key!r}")
    declared = _Declared(key, default, doc, None, names)
    return attrs.field(factory=lambda: types.MappingProxyType({}), metadata={_META: declared})


@attrs.frozen
class NoArguments:
    """The declaration of an action or plugin that takes no arguments."""


@attrs.frozen
class ArgumentSpec:
    """One declared argument, as the parser and the documentation see it."""

    #: The attribute name in the declaration class.
    field: str
    key: str
    default: Any
    doc: str
    #: The type as the configuration reference writes it (``bool``, ``int``, ``float``, ``string``).
    type_name: str
    parse: Callable[[object], Any] = attrs.field(repr=False)
    #: For a per-name argument, the attribute holding the names.
    names: str | None = None


def _scalar(hint: Any, where: str) -> tuple[Callable[[object], Any], str]:
    parser = _PARSERS.get(hint)
    if parser is None:
        raise TypeError(f"{where}: declare a parse function for type {hint!r}")
    return parser, _TYPE_NAMES[hint]


_SPECS: dict[type[Any], tuple[ArgumentSpec, ...]] = {}


def argument_specs(cls: type[Any]) -> tuple[ArgumentSpec, ...]:
    """The declared arguments of a declaration class, in field order.

    :raises TypeError: when ``cls`` is not an attrs class whose fields are
        all declared with :func:`argument` or :func:`argument_per_name`, or
        a type has no parser.
    """
    known = _SPECS.get(cls)
    if known is not None:
        return known
    if not attrs.has(cls):
        raise TypeError(f"{cls.__qualname__} is not an attrs class")
    hints = typing.get_type_hints(cls)
    specs: list[ArgumentSpec] = []
    seen: dict[str, ArgumentSpec] = {}
    for field in attrs.fields(cls):
        declared = field.metadata.get(_META)
        where = f"{cls.__qualname__}.{field.name}"
        if not isinstance(declared, _Declared):
            raise TypeError(f"{where} is not declared with argument()")
        hint: Any = hints.get(field.name)
        if declared.names is not None:
            source = seen.get(declared.names)
            if source is None or source.type_name != "string":
                raise TypeError(f"{where}: names must be a str argument declared before it")
            (value_hint,) = typing.get_args(hint)[1:] or (None,)
            parser, type_name = _scalar(value_hint, where)
        elif declared.parse is not None:
            parser = declared.parse
            type_name = _TYPE_NAMES[hint] if hint in _TYPE_NAMES else getattr(hint, "__name__", str(hint))
        else:
            parser, type_name = _scalar(hint, where)
        spec = ArgumentSpec(field.name, declared.key, declared.default, declared.doc, type_name, parser, declared.names)
        specs.append(spec)
        seen[field.name] = spec
    _SPECS[cls] = tuple(specs)
    return _SPECS[cls]


def declared_arguments(owner: type[Any]) -> type[Any] | None:
    """The declaration class a plugin or action class names in ``Arguments``, or ``None``.

    A class attribute ``Arguments`` that is not an attrs class made of
    :func:`argument` fields is not a declaration (``None``).
    """
    cls = getattr(owner, "Arguments", None)
    if not isinstance(cls, type) or not attrs.has(cls):
        return None
    if not all(_META in field.metadata for field in attrs.fields(cls)):
        return None
    return cls


# ---------------------------------------------------------------------- parsing


def parse_arguments(cls: type[A], mapping: Mapping[str, Any], *, owner: str = "") -> A:
    """Build a declaration class from a raw ``arguments`` mapping.

    :param owner: who the arguments belong to, for errors: ``plugin 'binpack'``.
    :raises ConfigError: for a value of the wrong type, with the key
        ``<owner> arguments.<key>`` and the parser's message
        (``expected an integer, got 'ten'``).
    """
    values: dict[str, Any] = {}
    for spec in argument_specs(cls):
        if spec.names is None:
            values[spec.field] = _value(spec, spec.key, mapping, owner)
            continue
        listed = (name.strip() for name in values[spec.names].split(","))
        per_name = {
            name: _value(spec, spec.key.replace(NAME_PLACEHOLDER, name), mapping, owner) for name in listed if name
        }
        values[spec.field] = types.MappingProxyType(per_name)
    return cls(**values)


def _value(spec: ArgumentSpec, key: str, mapping: Mapping[str, Any], owner: str) -> Any:
    raw = mapping.get(key)
    if raw is None:
        return spec.default
    try:
        return spec.parse(raw)
    except ConfigError as exc:
        raise ConfigError(exc.message, key=f"{owner} arguments.{key}".strip()) from None
    except ValueError as exc:
        raise ConfigError(str(exc), key=f"{owner} arguments.{key}".strip()) from None


# ---------------------------------------------------------------------- documentation


def _default_text(value: Any) -> str:
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f"`{value}`" if value else '`""`'
    if isinstance(value, (int, float)):
        return f"`{value!r}`"
    if isinstance(value, (frozenset, set, tuple, list, dict)) and not value:
        return "none"
    return f"`{value!r}`"


def argument_table(cls: type[Any]) -> str:
    """The Markdown table of a declaration class: argument, type, default, meaning.

    An empty declaration gives ``None.``; the configuration reference
    (``docs/configuration.md``) is written from these tables.
    """
    specs = argument_specs(cls)
    if not specs:
        return "None.\n"
    rows = ["| argument | type | default | meaning |", "|---|---|---|---|"]
    rows += [f"| `{s.key}` | {s.type_name} | {_default_text(s.default)} | {s.doc} |" for s in specs]
    return "\n".join(rows) + "\n"
