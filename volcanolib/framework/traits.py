"""What a plugin declares about itself, so that the framework knows which fast paths it may take.

A plugin class states its traits next to its code, in one class attribute::

    class DeadlinePlugin:
        name: ClassVar[str] = "deadline"
        traits: ClassVar[Traits] = Traits(clock_free=True, local_job_keys=True)

Each trait is a promise the plugin makes (see ``docs/incremental.md``); a
plugin that declares none makes none, and the fast paths that need the
promise are switched off for every configuration that lists it (logged
once per configuration, naming the plugin). Two more traits follow from the
hooks a plugin implements rather than from a declaration: it *resumes*
(``on_session_resume``) and it *groups nodes* (``node_class_key``).
:func:`fast_paths_off` says which fast paths a configuration's plugins
switch off, and why.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs

__all__ = [
    "CLASSES",
    "JOB_KEYS",
    "KEPT_JOB_KEYS",
    "KEPT_TASK_KEYS",
    "SETTLED_JOBS",
    "Traits",
    "fast_paths_off",
    "log_fast_paths_off",
    "trait_names",
    "traits_of",
]

log = logging.getLogger(__name__)

# The fast paths :func:`fast_paths_off` names.
#: Settled jobs left alone and unchanged jobs not written again (every plugin: ``status_through_session``).
SETTLED_JOBS: Final = "settled jobs (status_through_session)"
#: One node per class checked and scored (every plugin checking or scoring nodes: ``node_class_key``).
CLASSES: Final = "node classes (node_class_key)"
#: Jobs sorted by keys rather than comparators (every job order plugin: ``job_order_key``).
JOB_KEYS: Final = "job order by key (job_order_key)"
#: Each job's key kept while its tasks do not change (every job key: ``local_job_keys``).
KEPT_JOB_KEYS: Final = "kept job keys (local_job_keys)"
#: Each task's key kept while it does not change (every task key: ``local_task_keys``).
KEPT_TASK_KEYS: Final = "kept task keys (local_task_keys)"


@attrs.frozen
class Traits:
    """The promises a plugin makes about itself; each one switches on a fast path when every plugin makes it.

    .. versionadded:: 0.2
    """

    #: Its decisions do not read the session's clock (``ssn.clock``) or the time: a replay may skip a
    #: session that would see the same cluster as the last one.
    clock_free: bool = False
    #: Its ``job_order_key`` reads nothing but the job (its fields, its tasks' statuses, and state the
    #: plugin changes in ``on_allocate``/``on_deallocate`` for that job's tasks): a job's key is kept
    #: until one of its tasks changes.
    local_job_keys: bool = False
    #: Its ``task_order_key`` reads nothing but the task (its fields and status): a task's key is kept
    #: until the task changes.
    local_task_keys: bool = False
    #: It changes a job's PodGroup status (phase, conditions, annotations) only through the session
    #: (``ssn.update_pod_group_condition``, or after ``ssn.unsettle(job)``), or not at all: a session
    #: that follows another may leave settled jobs alone and skip writing unchanged ones.
    status_through_session: bool = False


#: The declared traits, by their names in :class:`Traits`.
_DECLARED: Final = tuple(field.name for field in attrs.fields(Traits))
#: Class attributes of earlier releases, read as the trait they stood for.
_OLDER: Final = {"job_order_key_is_local": "local_job_keys", "task_order_key_is_local": "local_task_keys"}


def traits_of(plugin: object) -> Traits:
    """The traits a plugin (class or instance) declares: its ``traits`` attribute, else none.

    The older class attributes ``job_order_key_is_local`` and
    ``task_order_key_is_local`` still count as the traits that replaced them.
    """
    declared = getattr(plugin, "traits", None)
    traits = declared if isinstance(declared, Traits) else Traits()
    older = {trait: True for attribute, trait in _OLDER.items() if getattr(plugin, attribute, False) is True}
    return attrs.evolve(traits, **older) if older else traits


def trait_names(plugin: object, hooks: Iterable[str] = ()) -> list[str]:
    """A plugin's traits by name, declared ones first, then ``resumes`` and ``node-classes`` from its hooks."""
    traits = traits_of(plugin)
    names = [name.replace("_", "-") for name in _DECLARED if getattr(traits, name)]
    implemented = set(hooks)
    if "on_session_resume" in implemented:
        names.append("resumes")
    if "node_class_key" in implemented:
        names.append("node-classes")
    return names


def fast_paths_off(plugins: Mapping[str, Any], tables: Mapping[str, Any]) -> dict[str, list[str]]:
    """The fast paths the plugins of one configuration switch off, each with the plugins that do, in tier order.

    :param plugins: the configuration's plugin instances by name.
    :param tables: the compiled hook tables (which plugin takes part in which hook).
    """
    taking_part: dict[str, list[str]] = {}
    for hook, tiers in tables.items():
        taking_part[hook] = [entry.plugin for tier in tiers for entry in tier]

    def part(*hooks: str) -> list[str]:
        names = {name for hook in hooks for name in taking_part.get(hook, ())}
        return [name for name in plugins if name in names]

    off: dict[str, list[str]] = {}
    quiet = [name for name, plugin in plugins.items() if not traits_of(plugin).status_through_session]
    if quiet:
        off[SETTLED_JOBS] = quiet
    classes = set(part("node_class_key"))
    checking = part("predicate", "batch_predicate", "node_order", "batch_node_order")
    unkeyed = [name for name in checking if name not in classes]
    unkeyed += part("best_node")
    if unkeyed:
        off[CLASSES] = unkeyed
    comparators = [name for name in part("job_order") if name not in part("job_order_key")]
    if comparators:
        off[JOB_KEYS] = comparators
    elif part("job_order_key"):
        nonlocal_keys = [name for name in part("job_order_key") if not traits_of(plugins[name]).local_job_keys]
        if nonlocal_keys:
            off[KEPT_JOB_KEYS] = nonlocal_keys
    if part("task_order_key") and not [name for name in part("task_order") if name not in part("task_order_key")]:
        nonlocal_keys = [name for name in part("task_order_key") if not traits_of(plugins[name]).local_task_keys]
        if nonlocal_keys:
            off[KEPT_TASK_KEYS] = nonlocal_keys
    return off


def log_fast_paths_off(
    source: str | None, plugins: Mapping[str, Any], tables: Mapping[str, Any]
) -> dict[str, list[str]]:
    """Log, once, each fast path the plugins of a configuration switch off, naming the plugins; return them."""
    off = fast_paths_off(plugins, tables)
    where = f"{source}: " if source else ""
    for path, names in off.items():
        log.info("%sfast path off: %s, because of plugin(s) %s", where, path, ", ".join(names))
    return off
