"""Explaining why a PodGroup is pending at the end of a simulation (``volcanolib explain``).

A new session is opened on the cluster as the scenario left it; no action
runs. Each distinct pending pod is checked against every node the way the
allocate action checks it (free resources, then every predicate), and each
refusal is attributed to the plugin that made it. Job-level findings come
from the plugins' own answers: validity, queue overuse and room, and the
enqueue votes of a Pending group. Plugins that offer ``queue_view(name)``
describe the group's queue.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from typing import Any

import attrs

from volcanolib.api.fiterrors import reason_histogram
from volcanolib.api.job import PodGroupPhase
from volcanolib.api.resource import MIN_RESOURCE, Resource
from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.errors import ManifestError, PluginError
from volcanolib.framework.hookspecs import NAME as HOOK_MARKER
from volcanolib.framework.registry import Registry
from volcanolib.framework.session import Session, compare_tasks_by_name
from volcanolib.scheduler import Scheduler
from volcanolib.sim.runner import PERIOD, PodGroupReport, SimClock, SimulationResult

__all__ = ["Explanation", "NodeVerdict", "PodExplanation", "explain"]


@attrs.frozen
class NodeVerdict:
    """Whether one pending pod fits one node, and if not, who says so."""

    node: str
    #: The plugin that refused the node (``allocate`` for lack of resources); ``""`` when the pod fits.
    plugin: str
    reason: str


@attrs.frozen
class PodExplanation:
    """One pending pod, checked against every node."""

    pod: str
    #: How many other pending pods of the group share its template (and so its answers).
    similar: int
    request: Resource
    #: ``"0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint {gpu: true}."``
    summary: str
    nodes: tuple[NodeVerdict, ...]


@attrs.frozen
class Explanation:
    """Why a PodGroup is (or is not) pending at the end of a scenario."""

    pod_group: str
    queue: str
    report: PodGroupReport | None
    #: The reason the last session recorded, if the group still has pending pods.
    reason: str | None
    #: Job-level findings: validity, admission.
    notes: tuple[str, ...]
    pods: tuple[PodExplanation, ...]
    #: ``(plugin, view)`` for every plugin with a ``queue_view(name)`` method.
    queue_views: tuple[tuple[str, object], ...]


def _find_group(result: SimulationResult, name: str) -> str:
    known = set(result.pod_groups) | set(result.unschedulable)
    if name in known:
        return name
    if "/" not in name:
        matches = sorted(uid for uid in known if uid.split("/", 1)[1] == name)
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise ManifestError(f"PodGroup name {name!r} is ambiguous: {', '.join(matches)}; give NAMESPACE/NAME")
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]}?" if close else ""
    raise ManifestError(f"no PodGroup {name!r} in the scenario{hint}")


def _insufficient(request: Resource, free: Resource) -> list[str]:
    out = []
    for name in request.names():
        want, have = request.get(name), free.get(name)
        if want > have and want - have >= MIN_RESOURCE:
            fmt = (
                Resource().set(name, want).to_readable()[name],
                Resource().set(name, max(have, 0)).to_readable()[name],
            )
            out.append((name, f"Insufficient {name} (requested {fmt[0]}, free {fmt[1]})"))
    return [text for _, text in out]


def _explain_pod(ssn: Session, tasks: list[TaskInfo]) -> PodExplanation:
    task = tasks[0]
    verdicts: list[NodeVerdict] = []
    reasons: list[str] = []
    available = 0
    pre = ssn.pre_predicate(task)
    if not pre.ok:
        text = "; ".join(pre.reasons) or pre.code.name
        verdicts = [NodeVerdict(n.name, pre.plugin or "?", text) for n in ssn.node_list]
        summary = f"0/{len(ssn.node_list)} nodes are available: {pre.plugin or 'a plugin'} refuses the pod: {text}."
        return PodExplanation(task.key, len(tasks) - 1, task.init_resreq.clone(), summary, tuple(verdicts))
    for node in ssn.node_list:
        short = _insufficient(task.init_resreq, node.future_idle())
        if short:
            verdicts.append(NodeVerdict(node.name, "allocate", "; ".join(short)))
            reasons.extend(s.split(" (")[0] for s in short)
            continue
        status = ssn.predicate(task, node)
        if not status.ok:
            text = "; ".join(status.reasons) or status.code.name
            verdicts.append(NodeVerdict(node.name, status.plugin or "?", text))
            reasons.extend(status.reasons or (status.plugin or status.code.name,))
            continue
        available += 1
        if task.init_resreq.less_equal(node.idle):
            verdicts.append(NodeVerdict(node.name, "", "fits"))
        else:
            verdicts.append(NodeVerdict(node.name, "", "fits once the pods being evicted there are gone"))
    summary = f"{available}/{len(ssn.node_list)} nodes are available"
    if reasons:
        summary += ": " + ", ".join(reason_histogram(reasons))
    return PodExplanation(task.key, len(tasks) - 1, task.init_resreq.clone(), summary + ".", tuple(verdicts))


def explain(result: SimulationResult, pod_group: str, *, registry: Registry | None = None) -> Explanation:
    """Explain why a PodGroup has pending pods at the end of a simulation.

    A new session is opened on the cluster as the scenario left it (no
    action runs); each distinct pending pod (one per pod template) is checked
    against every node as allocate would check it: free resources first,
    then every predicate, attributed to the plugin that refuses. Plugins that
    offer ``queue_view(name)`` describe the group's queue.

    :param pod_group: ``namespace/name`` (a bare name is enough when unique).
    :raises ManifestError: when the scenario has no such PodGroup.
    """
    uid = _find_group(result, pod_group)
    report = result.pod_groups.get(uid)
    scenario = result.scenario
    clock = SimClock(scenario.cluster.newest_timestamp + PERIOD * (result.sessions + 1))
    scheduler = Scheduler(result.cache, scenario.config, seed=result.seed, registry=registry, clock=clock)
    ssn = scheduler.new_session()
    notes: list[str] = []
    pods: list[PodExplanation] = []
    views: list[tuple[str, object]] = []
    queue = report.queue if report is not None else ""
    try:
        ssn.open()
    except PluginError as exc:
        notes.append(f"The session could not open: {exc}")
        return Explanation(uid, queue, report, result.unschedulable.get(uid), tuple(notes), (), ())
    job = ssn.jobs.get(uid)
    if job is not None:
        try:
            valid = ssn.job_valid(job)
            if not valid.ok:
                notes.append(f"Not valid ({valid.plugin or 'a plugin'}): {': '.join(valid.reasons)}")
            if job.pod_group.phase is PodGroupPhase.PENDING and job.task_status_index.get(TaskStatus.PENDING):
                if "enqueue" not in ssn.enabled_actions:
                    notes.append("The PodGroup is Pending; enqueue is not configured, so allocate admits it.")
                elif job.pod_group.min_resources is None:
                    notes.append("The PodGroup is Pending; it has no minResources, so enqueue admits it at once.")
                else:
                    verdict = "would admit" if ssn.job_enqueueable(job) else "would not admit"
                    votes = ", ".join(
                        f"{p} {_vote_text(v)}" for p, v in _plugin_answers(ssn, "job_enqueueable", job=job)
                    )
                    wanted = job.pod_group.min_resources.describe(readable=True)
                    notes.append(
                        f"The PodGroup is Pending: enqueue {verdict} it now "
                        f"(minResources {wanted}; votes: {votes or 'none'})."
                    )
            by_template: dict[str, list[TaskInfo]] = {}
            pending = job.task_status_index.get(TaskStatus.PENDING, {})
            for task in sorted(pending.values(), key=functools.cmp_to_key(compare_tasks_by_name)):
                by_template.setdefault(task.template, []).append(task)
            queue_info = ssn.queues.get(job.queue)
            if queue_info is not None and by_template:
                first = next(iter(by_template.values()))[0]
                for plugin, answer in _plugin_answers(ssn, "overused", queue=queue_info):
                    if answer is True:
                        notes.append(f"Queue {job.queue} is overused according to {plugin}: it gets nothing more.")
                for plugin, answer in _plugin_answers(ssn, "allocatable", queue=queue_info, task=first):
                    if answer is False:
                        notes.append(
                            f"Queue {job.queue} has no room for {first.key} according to {plugin} (allocatable)."
                        )
            for tasks in by_template.values():
                pods.append(_explain_pod(ssn, tasks))
        except PluginError as exc:
            notes.append(f"A plugin failed while explaining: {exc}")
    elif uid in ssn.skipped_jobs:
        notes.append(f"Not in the session: {ssn.skipped_jobs[uid]}")
    for name, plugin in ssn.plugins.items():
        view_fn = getattr(plugin, "queue_view", None)
        if queue and callable(view_fn):
            try:
                view = view_fn(queue)
            except Exception as exc:  # a plugin's view is best effort
                view = f"queue_view failed: {exc}"
            if view is not None:
                views.append((name, view))
    return Explanation(uid, queue, report, result.unschedulable.get(uid), tuple(notes), tuple(pods), tuple(views))


def _plugin_answers(ssn: Session, hook: str, **args: Any) -> list[tuple[str, Any]]:
    """Each enabled plugin's own answer to a query hook, in tier order (for explanations only)."""
    out: list[tuple[str, Any]] = []
    for option in ssn.config.plugin_options():
        plugin = ssn.plugins.get(option.name)
        fn = getattr(plugin, hook, None)
        if fn is None or not hasattr(fn, f"{HOOK_MARKER}_impl") or not option.hook_enabled(hook):
            continue
        params = inspect.signature(fn).parameters
        call_args = {"ssn": ssn, **args}
        try:
            answer = fn(**{k: v for k, v in call_args.items() if k in params})
        except Exception as exc:  # an explanation must not fail because a plugin does
            answer = exc
        out.append((option.name, answer))
    return out


def _vote_text(vote: Any) -> str:
    names = {1: "permits", 0: "abstains", -1: "rejects"}
    return names.get(int(vote), str(vote)) if isinstance(vote, int) else f"fails ({vote})"
