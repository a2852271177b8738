"""The exceptions volcanolib raises.

Every error derives from one base, and doubly from a builtin where one fits,
so callers may catch either::

    VolcanolibError
    ├── ConfigError (ValueError)            a bad scheduler configuration
    ├── ManifestError (ValueError)          a bad Kubernetes manifest / scenario
    │   ├── QuantityError                   a bad resource quantity
    │   └── TraceError                      a bad row of a trace file (file, row, column)
    ├── ResourceError (ArithmeticError)     resource arithmetic below zero
    ├── PluginError                         a plugin misbehaved
    │   ├── PluginNotFoundError (LookupError)  no plugin or action of that name
    │   └── PluginConfigError (ValueError)     a plugin refused at load time
    ├── CacheError                          a cache operation failed
    ├── VerifyError (AssertionError)        verify mode: a shortcut differs from computing afresh
    └── MissingExtraError (ImportError)     an optional part needs an extra that is not installed

Errors caused by user input (configuration, manifests, plugin arguments)
carry enough context to be printed as a single line naming the file, the
object and the field.
"""

from __future__ import annotations

__all__ = [
    "CacheError",
    "ConfigError",
    "ManifestError",
    "MissingExtraError",
    "PluginConfigError",
    "PluginError",
    "PluginNotFoundError",
    "QuantityError",
    "ResourceError",
    "TraceError",
    "VerifyError",
    "VolcanolibError",
]


class VolcanolibError(Exception):
    """Base class of every error raised by volcanolib."""


class ConfigError(VolcanolibError, ValueError):
    """A scheduler configuration (volcano-scheduler.conf) is invalid.

    :param message: what is wrong.
    :param key: the offending key, as a dotted path (``tiers[1].plugins[0].name``).
    :param source: the file or text the configuration came from, if known.
    """

    def __init__(self, message: str, *, key: str | None = None, source: str | None = None) -> None:
        self.message = message
        self.key = key
        self.source = source
        super().__init__(self._render())

    def _render(self) -> str:
        where = ": ".join(part for part in (self.source, self.key) if part)
        return f"{where}: {self.message}" if where else self.message


class ManifestError(VolcanolibError, ValueError):
    """A Kubernetes manifest or scenario file is invalid.

    :param message: what is wrong.
    :param source: the file name, if known.
    :param obj: the object, as ``Kind namespace/name`` or ``Kind name``.
    :param field: the offending field, as a dotted path.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        obj: str | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.source = source
        self.obj = obj
        self.field = field
        super().__init__(self._render())

    def _render(self) -> str:
        parts = [p for p in (self.source, self.obj, self.field) if p]
        return ": ".join([*parts, self.message])

    def located(self, *, source: str | None = None, obj: str | None = None) -> ManifestError:
        """Return a copy of this error with the file and object filled in where unknown."""
        err = type(self).__new__(type(self))
        ManifestError.__init__(
            err,
            self.message,
            source=self.source or source,
            obj=self.obj or obj,
            field=self.field,
        )
        return err


class QuantityError(ManifestError):
    """A Kubernetes resource quantity (``"500m"``, ``"2Gi"``) cannot be parsed."""


class TraceError(ManifestError):
    """A row of a trace file (a CSV table such as the openb pod list) is invalid.

    The message names the file, the row (1-based, the header being row 1) and
    the column: ``pods.csv: row 12: column deletion_time: before creation_time``.

    :param message: what is wrong.
    :param source: the file name.
    :param row: the 1-based row number, counting the header as row 1.
    :param column: the offending column, if one is.
    """

    row: int | None = None
    column: str | None = None

    def __init__(
        self, message: str, *, source: str | None = None, row: int | None = None, column: str | None = None
    ) -> None:
        super().__init__(
            message,
            source=source,
            obj=f"row {row}" if row is not None else None,
            field=f"column {column}" if column else None,
        )
        self.row = row
        self.column = column


class ResourceError(VolcanolibError, ArithmeticError):
    """Resource arithmetic would go below zero, or mixes incompatible values."""


class PluginError(VolcanolibError):
    """A plugin failed: it raised inside a hook, or broke the plugin contract.

    :param plugin: the plugin's configured name.
    :param hook: the hook being called, if any.
    """

    def __init__(self, message: str, *, plugin: str | None = None, hook: str | None = None) -> None:
        self.message = message
        self.plugin = plugin
        self.hook = hook
        parts = [p for p in (f"plugin {plugin!r}" if plugin else None, f"hook {hook!r}" if hook else None) if p]
        super().__init__(f"{', '.join(parts)}: {message}" if parts else message)


class PluginNotFoundError(PluginError, LookupError):
    """No installed plugin or action has the configured name."""


class PluginConfigError(PluginError, ValueError):
    """A plugin was refused at load time (bad hookimpl, wrong options)."""


class CacheError(VolcanolibError):
    """A cache operation (bind, evict, status update) failed."""


class VerifyError(VolcanolibError, AssertionError):
    """Verify mode found a shortcut of an incremental cycle that differs from computing afresh.

    See ``docs/incremental.md``. The message names the plugin (or the job,
    or the node class token) and what differs.

    :param plugin: the plugin at fault, when one is known.

    .. versionadded:: 0.2
    """

    def __init__(self, message: str, *, plugin: str | None = None) -> None:
        self.message = message
        self.plugin = plugin
        super().__init__(f"plugin {plugin!r}: {message}" if plugin else message)


class MissingExtraError(VolcanolibError, ImportError):
    """An optional part of volcanolib needs a package that is not installed.

    The message is one line: what needs it, the extra that installs it and
    the command, e.g. ``--plot needs the 'plot' extra (matplotlib): pip
    install 'volcanolib[plot]'``.

    :param extra: the extra that installs the package (``cli``, ``plot``...).
    :param package: the package it installs.
    :param feature: what needs it, the subject of the sentence.
    :param hint: what the user may do instead, if anything.
    """

    def __init__(self, extra: str, package: str, feature: str, *, hint: str | None = None) -> None:
        self.extra = extra
        self.package = package
        message = f"{feature} needs the {extra!r} extra ({package}): pip install 'volcanolib[{extra}]'"
        super().__init__(f"{message} ({hint})" if hint else message)
