"""Verify mode: each shortcut of an incremental cycle checked against computing afresh.

A :class:`~volcanolib.scheduler.Scheduler` built with ``verify=True`` has its
sessions call these checks (see ``docs/incremental.md``). Each raises
:class:`~volcanolib.errors.VerifyError` naming the plugin (or the job, or
the node class token) at the first difference:

- :func:`check_resumed`: every plugin that resumed equals a plugin of the
  same class and arguments opened afresh on the same session (compared by
  its optional ``kept_state()``);
- :func:`check_close`: a plugin's ``on_session_close`` left the status of
  every job the session leaves alone as loaded; every job left alone would
  be written as it is; the queue totals kept job by job equal a fresh sum;
- :func:`check_node_classes`: the node classes kept from the previous
  session equal the nodes grouped afresh, for every durable plan used.

The checks change nothing a decision reads: a fresh plugin is a new object,
and recomputing a job's status that is as loaded sets it to what it is.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from volcanolib.errors import PluginError, VerifyError

if TYPE_CHECKING:
    from volcanolib.api.job import JobInfo
    from volcanolib.framework.session import Session

__all__ = ["KeepsState", "check_close", "check_node_classes", "check_resumed", "status_of"]


@runtime_checkable
class KeepsState(Protocol):
    """The optional protocol of a resuming plugin whose kept state verify mode compares.

    ``kept_state()`` returns a value, compared with ``==``, of everything the
    plugin keeps from one session to the next; a plugin resumed with
    ``on_session_resume`` must return what the same plugin opened afresh with
    ``on_session_open`` on the same session returns.

    .. versionadded:: 0.2
    """

    def kept_state(self) -> object: ...


def check_resumed(ssn: Session, plugins: dict[str, Any], build: Callable[[str], Any], names: Iterable[str]) -> None:
    """Open each named (resumed) plugin afresh on ``ssn`` and compare its kept state with the resumed one's.

    :param plugins: the scheduler's plugin instances by name.
    :param build: a new instance of a plugin, by name, built with the configuration's arguments.
    :raises VerifyError: naming the first plugin whose fresh open fails or whose kept state differs.
    """
    for name in names:
        resumed = plugins[name]
        fresh = build(name)
        try:
            fresh.on_session_open(ssn)
        except Exception as exc:
            raise VerifyError(f"opening afresh failed where resuming did not: {exc}", plugin=name) from exc
        if isinstance(resumed, KeepsState) and resumed.kept_state() != fresh.kept_state():
            raise VerifyError("resumed state differs from a fresh on_session_open on the same session", plugin=name)


def status_of(job: JobInfo) -> tuple[object, ...]:
    """Everything of a job's status a session may write, by value (annotations and conditions copied)."""
    pg = job.pod_group
    return (
        pg.phase,
        pg.running,
        pg.succeeded,
        pg.failed,
        tuple(sorted(pg.annotations.items())),
        tuple((c.type, c.status, c.reason, c.message) for c in pg.conditions),
        job.priority,
        job.job_fit_errors,
    )


def close_plugins(ssn: Session, table: Any) -> None:
    """Call every plugin's ``on_session_close`` in tier order, checking after each the settled jobs left alone.

    A failure is recorded, as the session's close does.

    :param table: the bound ``on_session_close`` table.
    :raises VerifyError: naming the first plugin that changed the status of a settled job without
        waking it up (``update_pod_group_condition``, ``unsettle``).
    """
    for tier in table:
        for plugin, fn in tier:
            left_alone = ssn.settled_jobs()
            before = [status_of(job) for job in left_alone]
            try:
                fn()
            except PluginError as err:
                ssn.record_plugin_error(err)
            woken = {job.uid for job in ssn.unsettled_jobs()}
            for job, was in zip(left_alone, before, strict=True):
                if job.uid not in woken and status_of(job) != was:
                    raise VerifyError(
                        f"changed the status of the settled job {job.uid} without update_pod_group_condition "
                        "or unsettle, so the session would not write it (see docs/incremental.md)",
                        plugin=plugin,
                    )


def check_close(ssn: Session, loaded: dict[str, tuple[object, ...]], written: set[str]) -> None:
    """Close every job the session left alone and compare with its status as loaded; compare the queue totals.

    :param loaded: every job's :func:`status_of` when the session loaded it.
    :param written: the uids of the jobs the session wrote.
    :raises VerifyError: naming the first job whose status, computed again, differs.
    """
    for uid, job in ssn.jobs.items():
        if uid in written or uid not in loaded:
            continue
        ssn._update_job_status(job)
        now = status_of(job)
        if now != loaded[uid]:
            raise VerifyError(
                f"job {uid} was left alone at close, but its status computed afresh differs: "
                f"{_difference(loaded[uid], now)}"
            )
    fresh = ssn._queue_totals()
    for name, queue in ssn.queues.items():
        if queue.allocated != fresh[name]:
            raise VerifyError(f"queue {name}: allocated {queue.allocated} kept job by job, {fresh[name]} afresh")


_FIELDS = ("phase", "running", "succeeded", "failed", "annotations", "conditions", "priority", "fit errors")


def _difference(before: tuple[object, ...], after: tuple[object, ...]) -> str:
    return "; ".join(
        f"{field} {old!r} -> {new!r}" for field, old, new in zip(_FIELDS, before, after, strict=True) if old != new
    )


def check_node_classes(ssn: Session) -> None:
    """Compare the node classes the session kept from the previous one with the nodes grouped afresh.

    :raises VerifyError: naming the plugins and tokens of the first plan whose classes differ.
    """
    from volcanolib.framework.nodeclass import NodeChanges, NodeClasses

    placement = ssn._placement
    kept = placement.node_classes() if placement is not None else None
    if kept is None:
        return
    plans: dict[Hashable, Any] = {}
    for plan in ssn._plans.values():
        if plan.durable:
            plans.setdefault(plan.token, plan)
    for token, plan in plans.items():
        fresh = NodeClasses(NodeChanges(ssn.node_list, []))
        if kept.classes(plan) != fresh.classes(plan):
            names = sorted({str(pair[0]) for pair in plan.token if isinstance(pair, tuple)})
            raise VerifyError(
                f"node classes kept up to date differ from a fresh grouping of the nodes (plan {token!r})",
                plugin=names[0] if len(names) == 1 else None,
            )
