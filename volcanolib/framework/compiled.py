"""The combined hook answers of a session, compiled from the hook declarations and the configuration.

:class:`CompiledAnswers` is the part of
:class:`~volcanolib.framework.session.Session` that turns the compiled
dispatch tables into the session's answers: orders with their key forms and
tie-breaks, node checks and scores with their batch forms, node class plans,
and every other hook by its rule (built on first read). Each answer is the
attribute its hook declares (``answer=`` in :mod:`~volcanolib.framework.hookspecs`),
typed in the generated :class:`~volcanolib.framework._answers.HookAnswers`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Mapping
from typing import Any, Final

from volcanolib.api.job import JobInfo
from volcanolib.api.queue import QueueInfo
from volcanolib.api.task import TaskInfo
from volcanolib.errors import PluginError
from volcanolib.framework import bounds, combine, fastpath
from volcanolib.framework._answers import HookAnswers
from volcanolib.framework.config import SchedulerConfig
from volcanolib.framework.dispatch import Tables, bind, trace_enabled
from volcanolib.framework.hookspecs import SPECS
from volcanolib.framework.nodeclass import NodeClassKey, NodeClassPlan
from volcanolib.framework.traits import traits_of

__all__ = ["KEPT_KEYS", "CompiledAnswers", "compare_tasks_by_name"]


def _faster_form(hook: str) -> str:
    """The hook declared as the faster form of ``hook`` (its sort key or its batch)."""
    return next(spec.name for spec in SPECS.values() if spec.form_of == hook)


#: Per order hook with a key form: the session attribute of that key form (from the declarations).
_KEY_FORMS: Final = {
    spec.form_of: spec.attribute for spec in SPECS.values() if spec.form_of is not None and spec.attribute is not None
}


# ------------------------------------------------------------------------ fallback orders


def _cmp(a: Any, b: Any) -> int:
    return -1 if a < b else (1 if a > b else 0)


def _job_fallback(left: JobInfo, right: JobInfo) -> int:
    return _cmp(left.creation_timestamp, right.creation_timestamp) or _cmp(left.uid, right.uid)


def _job_fallback_key(job: JobInfo) -> tuple[Any, ...]:
    return (job.creation_timestamp, job.uid)


def _no_opinion(left: Any, right: Any) -> int:
    return 0


_MISSING: Final = object()


def _no_key(item: Any) -> tuple[Any, ...]:
    return ()


def _queue_fallback(left: QueueInfo, right: QueueInfo) -> int:
    return _cmp(left.creation_timestamp, right.creation_timestamp) or _cmp(left.name, right.name)


def _queue_fallback_key(queue: QueueInfo) -> tuple[Any, ...]:
    return (queue.creation_timestamp, queue.name)


@functools.lru_cache(maxsize=bounds.POD_NAME_INDEXES)
def _name_index(name: str) -> int | None:
    """The index a pod name ends with (``job-task-3``: 3), ``None`` without one.

    Remembered by name: the default task order asks on every comparison.
    """
    parts = name.split("-")
    if len(parts) <= 2:
        return None
    try:
        return int(parts[-1])
    except ValueError:
        return None


def compare_tasks_by_name(left: TaskInfo, right: TaskInfo) -> int:
    """The default task order: the pod-name index (``job-task-3``), then creation time, then uid."""
    li = _name_index(left.name)
    ri = _name_index(right.name)
    if li is None or ri is None or li == ri:
        return _cmp(left.creation_timestamp, right.creation_timestamp) or _cmp(left.uid, right.uid)
    return -1 if li < ri else 1


def _task_fallback_key(task: TaskInfo) -> tuple[Any, ...]:
    index = _name_index(task.name)
    return (-1 if index is None else index, task.creation_timestamp, task.uid)


#: The tie-breaks the order hooks declare, in words, with their comparison and their key.
_TIE_BREAKS: Final[dict[str, tuple[Callable[[Any, Any], int], Callable[[Any], tuple[Any, ...]]]]] = {
    "creation time, then uid": (_job_fallback, _job_fallback_key),
    "creation time, then name": (_queue_fallback, _queue_fallback_key),
    "pod-name index, creation time, then uid": (compare_tasks_by_name, _task_fallback_key),
}


def _key_compare(key: Callable[[Any], Any]) -> Callable[[Any, Any], int]:
    def compare(left: Any, right: Any) -> int:
        return _cmp(key(left), key(right))

    return compare


class CompiledAnswers(HookAnswers):
    """A session's combined hook answers (a base of :class:`~volcanolib.framework.session.Session`)."""

    # What the session holds, as this part reads it.
    config: SchedulerConfig
    plugins: Mapping[str, Any]
    _tables: Tables
    check_fast_paths: bool
    #: Compare two jobs by the plugins only (0 when every plugin abstains), for victim order.
    compare_jobs_by_plugins: Callable[[JobInfo, JobInfo], int]
    #: The key behind :attr:`compare_jobs_by_plugins` when every plugin orders jobs by a key, else ``None``.
    job_key_by_plugins: Callable[[JobInfo], Any] | None
    #: Whether some plugin orders victim queues (``victim_queue_order``).
    has_victim_queue_order: bool

    def record_plugin_error(self, err: PluginError, job: JobInfo | None = None) -> None:
        """Record a plugin failure (the session does)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ compilation

    def _table(self, hook: str) -> combine.Table:
        return bind(self, hook, self._tables.get(hook, ()), trace=self._trace)

    def implemented(self, hook: str) -> bool:
        """Whether some plugin of the configuration takes part in ``hook`` (implements it, its switch on).

        .. versionadded:: 0.2
        """
        return any(self._tables.get(hook, ()))

    def order_by_key(self, hook: str) -> bool:
        """Whether every plugin taking part in an order hook (``job_order``, ``task_order`` ...) gives keys."""
        return self._key_based.get(hook, False)

    def _order(
        self,
        hook: str,
        fallback: Callable[[Any, Any], int],
        fallback_key: Callable[[Any], tuple[Any, ...]],
    ) -> tuple[Callable[[Any, Any], int], Callable[[Any], Any]]:
        """Rule ``first_nonzero`` for an order hook and its key form, merged in configuration order."""
        keys = {plugin: fn for tier in self._table(_faster_form(hook)) for plugin, fn in tier}
        cmps = {plugin: fn for tier in self._table(hook) for plugin, fn in tier}
        merged: list[tuple[str, Callable[..., Any], bool]] = []
        for tier in self.config.tiers:
            for option in tier.plugins:
                if option.name in keys:
                    merged.append((option.name, keys[option.name], True))
                elif option.name in cmps:
                    merged.append((option.name, cmps[option.name], False))
        self._key_based[hook] = all(is_key for _, _, is_key in merged)
        if self._key_based[hook]:
            key = combine.key_tuple((tuple((p, f) for p, f, _ in merged),), fallback_key, self._order_failed)
            return _key_compare(key), key
        entries = tuple((p, _key_compare(f) if is_key else f) for p, f, is_key in merged)
        compare = combine.first_nonzero((entries,), fallback, self._order_failed)
        return compare, functools.cmp_to_key(compare)

    def _keys_are_local(self, hook: str) -> bool:
        """Whether every plugin giving ``hook`` (``job_order_key``, ``task_order_key``) declares its key local.

        See :class:`~volcanolib.framework.traits.Traits` (``local_job_keys``, ``local_task_keys``).
        """
        names = {entry.plugin for tier in self._tables.get(hook, ()) for entry in tier}
        trait = "local_job_keys" if hook == "job_order_key" else "local_task_keys"
        return all(getattr(traits_of(self.plugins.get(name)), trait) for name in names)

    def _remembered(self, key: Callable[[Any], Any], memo: dict[str, Any]) -> Callable[[Any], Any]:
        """``key``, each item's value kept by uid in ``memo`` (the fast path :data:`KEPT_KEYS`)."""

        def remembered(item: Any) -> Any:
            value = memo.get(item.uid, _MISSING)
            if value is _MISSING:
                value = memo[item.uid] = key(item)
            return value

        if not self.check_fast_paths:
            return remembered

        def checked(item: Any) -> Any:
            return fastpath.agree(KEPT_KEYS, remembered(item), key(item))

        return checked

    @property
    def task_keys_are_local(self) -> bool:
        """Whether every plugin giving a task key says it reads only its task (``task_order_key_is_local``).

        Then a task's :attr:`task_key` changes only when the task does.
        """
        return self._task_keys is not None

    def _forget_job_key(self, task: TaskInfo) -> None:
        """A task changed: its key and its job's plugins' key must be taken again."""
        memo = self._job_keys
        if memo:
            memo.pop(task.job, None)
        memo = self._task_keys
        if memo:
            memo.pop(task.uid, None)

    def _order_failed(self, err: PluginError) -> None:
        """An order plugin failed: it abstains from that comparison; recorded once per plugin and hook."""
        if (err.plugin, err.hook) not in self._order_faults:
            self._order_faults.add((err.plugin, err.hook))
            self.record_plugin_error(err)

    def _compile(self) -> None:
        """Build the combined answers every session uses from the hooks' declarations.

        Hooks whose rule needs nothing but their table (:data:`_BUILT`) are
        built when first read, as few sessions read them all.
        """
        self._key_based: dict[str, bool] = {}
        self._order_faults: set[tuple[str | None, str | None]] = set()
        self._trace = trace_enabled()

        # Orders (``first_nonzero``) with a key form, each with its declared tie-break: from SPECS.
        for spec in SPECS.values():
            key_form = _KEY_FORMS.get(spec.name)
            if key_form is not None and spec.attribute is not None and spec.tie_break is not None:
                compare, key = self._order(spec.name, *_TIE_BREAKS[spec.tie_break])
                setattr(self, spec.attribute, compare)
                setattr(self, key_form, key)
        # Victim order compares jobs by the plugins alone, without the tie-break.
        by_plugins, plugins_key = self._order("job_order", _no_opinion, _no_key)
        self.compare_jobs_by_plugins = by_plugins
        self.job_key_by_plugins = plugins_key if self._key_based.get("job_order") else None
        # Jobs' keys by uid while none of their tasks changed, when every plugin's key depends on
        # its job alone (``job_order_key_is_local``).
        self._job_keys: dict[str, Any] | None = None
        if self.job_key_by_plugins is not None and self._keys_are_local("job_order_key"):
            self._job_keys = {}
            self.job_key_by_plugins = self._remembered(plugins_key, self._job_keys)
        # Tasks' keys by uid while they do not change, when every plugin's key depends on its task
        # alone (``task_order_key_is_local``): victim ordering asks for the same running tasks' keys.
        self._task_keys: dict[str, Any] | None = None
        if self.order_by_key("task_order") and self._keys_are_local("task_order_key"):
            self._task_keys = {}
            self.task_key = self._remembered(self.task_key, self._task_keys)
        victim_queues = self._table("victim_queue_order")
        self.has_victim_queue_order = any(tier for tier in victim_queues)
        compare_queues = self.compare_queues
        self.compare_victim_queues = combine.first_nonzero(
            victim_queues, lambda left, right, preemptor: -compare_queues(left, right), self._order_failed
        )

        # Node checks (``all_pass``) and scores (``weighted_sum``): per node, and over many nodes at once.
        self._predicate_entries = self._per_node_and_batch("predicate")
        self._score_entries = self._per_node_and_batch("node_order")
        self.predicate = combine.all_pass(combine.one_node(self._predicate_entries))
        self._predicate_nodes = combine.all_pass_nodes(self._predicate_entries)
        self.node_scores = combine.weighted_sum(self._score_entries)
        self._class_entries = self._node_class_entries()
        self._class_keys = None if self._class_entries is None else combine.all_or_none((self._class_entries,))
        self._plans: dict[tuple[Hashable, ...], NodeClassPlan] = {}

    def _per_node_and_batch(self, per_node: str) -> tuple[combine.NodeEntry, ...]:
        """Every plugin implementing a node hook or its batch form: name, per-node function, batch function."""
        singles = {p: f for tier in self._table(per_node) for p, f in tier}
        batches = {p: f for tier in self._table(_faster_form(per_node)) for p, f in tier}
        out = []
        for tier in self.config.tiers:
            for option in tier.plugins:
                single = singles.get(option.name)
                many = batches.get(option.name)
                if single is not None or many is not None:
                    out.append((option.name, single, many))
        return tuple(out)

    def _node_class_entries(self) -> tuple[tuple[str, Callable[[TaskInfo], NodeClassKey | None]], ...] | None:
        """The ``node_class_key`` implementations of every plugin that checks or scores nodes, or ``None``."""
        if any(tier for tier in self._table("best_node")):
            return None
        keys = {p: f for tier in self._table("node_class_key") for p, f in tier}
        needed = dict.fromkeys(p for p, _, _ in self._predicate_entries + self._score_entries)
        if any(p not in keys for p in needed):
            return None
        return tuple((p, keys[p]) for p in needed)

    def node_class_plan(self, task: TaskInfo) -> NodeClassPlan | None:
        """How to group nodes for a task so that one node per class is checked and scored.

        ``None`` when some plugin that checks or scores nodes cannot say
        (see the ``node_class_key`` hook); then every node counts on its own.
        """
        keys = self._class_keys
        if keys is None:
            return None
        answers: tuple[NodeClassKey, ...] | None = keys(task)
        if answers is None:
            return None
        # Plugins usually hand out the same keys for alike tasks: make each plan once. Equal tokens mean equal
        # key functions (NodeClassKey), so keys that are new objects with the tokens of a known plan reuse it.
        # Plans are found by the keys themselves first (the same key objects, mostly: cheap to hash and compare).
        found = self._plans.get(answers)
        if found is not None:
            return found
        signature = tuple([(answer.token, answer.pointwise, answer.durable) for answer in answers])
        found = self._plans.get(signature)
        if found is not None:
            if len(self._plans) >= _MAX_PLANS:
                self._plans.clear()
            self._plans[answers] = found
            return found
        assert self._class_entries is not None
        plugins = [plugin for plugin, _ in self._class_entries]
        plan = NodeClassPlan(
            tuple((plugin, answer.token) for plugin, answer in zip(plugins, answers, strict=True)),
            tuple(
                combine.guard(plugin, "node_class_key", answer.key, arity=1)
                for plugin, answer in zip(plugins, answers, strict=True)
            ),
            all(answer.pointwise for answer in answers),
            all(answer.durable for answer in answers),
        )
        if len(self._plans) >= _MAX_PLANS - 1:
            self._plans.clear()
        self._plans[signature] = self._plans[answers] = plan
        return plan


class _Built:
    """A combined answer of one hook, built on a session's first read and kept in its ``__dict__``."""

    __slots__ = ("build", "hook", "name")

    def __init__(self, hook: str, name: str, build: Callable[[combine.Table], Any]) -> None:
        self.hook, self.name, self.build = hook, name, build

    def __get__(self, ssn: CompiledAnswers | None, owner: type[CompiledAnswers]) -> Any:
        if ssn is None:
            return self
        value = self.build(ssn._table(self.hook))
        ssn.__dict__[self.name] = value
        return value


def _built_hooks() -> dict[str, str]:
    """Hooks whose rule needs nothing but their table, by the attribute of the session answering them.

    The others (orders and node checks and scores, which have a faster form;
    hooks declaring no answer) are compiled by :meth:`CompiledAnswers._compile`.
    """
    faster = {spec.form_of for spec in SPECS.values()}
    return {
        spec.attribute: spec.name
        for spec in SPECS.values()
        if spec.attribute is not None
        and spec.rule in combine.BUILDERS
        and spec.form_of is None
        and spec.name not in faster
        and spec.tie_break is None
    }


#: The session attributes answering a hook whose rule needs nothing but its table, with their hooks.
_BUILT: Final = _built_hooks()
#: The attributes _compile sets that hold functions bound to the session (see ``Session.detach_plugins``).
_COMPILED: Final = (
    "compare_jobs",
    "job_key",
    "compare_jobs_by_plugins",
    "job_key_by_plugins",
    "_job_keys",
    "compare_queues",
    "queue_key",
    "compare_tasks",
    "task_key",
    "_task_keys",
    "compare_victim_queues",
    "_predicate_entries",
    "_score_entries",
    "predicate",
    "_predicate_nodes",
    "node_scores",
    "_class_entries",
    "_class_keys",
    "_plans",
)
#: Of :data:`_COMPILED`, the attributes holding data rather than functions, with what a detached session holds.
_COMPILED_DATA: Final[dict[str, Callable[[], object]]] = {
    "_job_keys": lambda: None,
    "_task_keys": lambda: None,
    "_predicate_entries": tuple,
    "_score_entries": tuple,
    "_class_entries": lambda: None,
    "_plans": dict,
}


def _detached(uid: str, name: str, *args: object) -> Any:
    """What every hook answer of a detached session does (see ``Session.detach_plugins``)."""
    raise RuntimeError(f"session {uid} is detached from its plugins: {name.lstrip('_')!r} can no longer be called")


for _name, _hook in _BUILT.items():
    setattr(CompiledAnswers, _name, _Built(_hook, _name, combine.BUILDERS[SPECS[_hook].rule]))


#: A job's (or task's) order key kept while its tasks (or it) do not change (see ``local_job_keys``).
KEPT_KEYS: Final = fastpath.register("kept order keys", "the plugins' order keys taken again")
#: Node class plans remembered per session before starting over.
_MAX_PLANS: Final = bounds.NODE_CLASS_PLANS
