"""Explaining why a PodGroup is pending (``volcanolib explain``, and ``/explain`` of ``volcanolib serve``).

A new session is opened on the cluster as a scenario left it, or on a copy
of a live cluster's snapshot (:func:`explain_with`); no action runs. Each
distinct pending pod is checked against every node the way the allocate
action checks it (free resources, then every predicate), and each refusal
is attributed to the plugin that made it. Job-level findings come from the
plugins' own answers: validity, queue overuse and room, and the enqueue
votes of a Pending group. Plugins that offer ``queue_view(name)`` describe
the group's queue; the plugins offering ``queue_shortfall`` and a count of
the nodes with room for each distinct pending pod name what the group is
short of (:mod:`volcanolib.framework.shortfall`).
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Collection, Mapping
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
from volcanolib.framework.shortfall import GangShortfall, PodRoom, count_room, gang_shortfall
from volcanolib.scheduler import Scheduler
from volcanolib.sim.runner import PERIOD, PodGroupReport, SimClock, SimulationResult

__all__ = ["Explanation", "NodeVerdict", "PodExplanation", "explain", "explain_with", "find_group"]


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
    #: What the group is short of in its queue, by the plugins that say (no node checked: see :attr:`room`).
    shortfall: GangShortfall | None = None
    #: For each distinct pending pod, the nodes with idle resources for it (one per entry of :attr:`pods`).
    room: tuple[PodRoom, ...] = ()
    #: Which state of the cluster was explained, in words: ``as the scenario left it``, ``as it is now``.
    state: str = "as the scenario left it"

    def to_dict(self, *, max_nodes: int = 20) -> dict[str, Any]:
        """The explanation as JSON values (``/explain`` of ``volcanolib serve``, ``explain --json``).

        :param max_nodes: node verdicts listed per pod (0: all); each pod
            also counts the nodes each plugin refused, over every node.
        """
        report = self.report
        pods = []
        for pod in self.pods:
            refused: dict[str, int] = {}
            for verdict in pod.nodes:
                if verdict.plugin:
                    refused[verdict.plugin] = refused.get(verdict.plugin, 0) + 1
            shown = pod.nodes[:max_nodes] if max_nodes else pod.nodes
            pods.append(
                {
                    "pod": pod.pod,
                    "similar": pod.similar,
                    "request": pod.request.to_quantities(),
                    "summary": pod.summary,
                    "refusedBy": dict(sorted(refused.items())),
                    "nodes": [{"node": v.node, "plugin": v.plugin or None, "reason": v.reason} for v in shown],
                    "nodesOmitted": len(pod.nodes) - len(shown),
                }
            )
        short = self.shortfall
        return {
            "podGroup": self.pod_group,
            "queue": self.queue,
            "phase": report.phase.value if report is not None else None,
            "scheduled": report.scheduled if report is not None else None,
            "minMember": report.min_member if report is not None else None,
            "reason": self.reason,
            "notes": list(self.notes),
            "shortfall": {
                "queue": [q.to_dict() for q in short.queue] if short is not None else [],
                "nodes": [room.to_dict() for room in self.room],
                "text": shortfall_text(self),
            },
            "pods": pods,
            "queueViews": {plugin: _jsonable(view) for plugin, view in self.queue_views},
        }


def shortfall_text(exp: Explanation) -> str:
    """The shortfall of an explanation in words: the queue's, then the room on the nodes (``""``: none known)."""
    parts = [q.text() for q in exp.shortfall.queue] if exp.shortfall is not None else []
    parts += [room.text() for room in exp.room if room.room < room.pending]
    return "; ".join(parts)


def _jsonable(value: object) -> object:
    """A plugin's queue view as JSON values (resources as quantities, anything else as text)."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, Resource):
        return value.to_quantities()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def find_group(known: Collection[str], name: str, where: str = "the scenario") -> str:
    """The ``namespace/name`` among ``known`` that ``name`` means (a bare name when unique).

    :raises ManifestError: naming the closest match, when there is none.
    """
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
    raise ManifestError(f"no PodGroup {name!r} in {where}{hint}")


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
    uid = find_group(set(result.pod_groups) | set(result.unschedulable), pod_group)
    scenario = result.scenario
    clock = SimClock(scenario.cluster.newest_timestamp + PERIOD * (result.sessions + 1))
    scheduler = Scheduler(result.cache, scenario.config, seed=result.seed, registry=registry, clock=clock)
    return explain_with(scheduler, uid, report=result.pod_groups.get(uid), reason=result.unschedulable.get(uid))


def explain_with(
    scheduler: Scheduler,
    uid: str,
    *,
    report: PodGroupReport | None = None,
    reason: str | None = None,
    state: str = "as the scenario left it",
) -> Explanation:
    """Explain a PodGroup in a new session of ``scheduler`` on its cache's next snapshot.

    The session is opened (plugins prepare) and never closed: no action
    runs and nothing is written. For a live cluster, give a scheduler whose
    cache holds a copy of the cluster's snapshot.

    :param uid: ``namespace/name`` of the PodGroup.
    :param report: the group's phase and counts (from the job in the session when omitted).
    :param reason: why the scheduler last said it waits (its ``Unschedulable`` condition).
    :param state: which state of the cluster this is, in words (:attr:`Explanation.state`).
    """
    ssn = scheduler.new_session()
    notes: list[str] = []
    pods: list[PodExplanation] = []
    rooms: list[PodRoom] = []
    views: list[tuple[str, object]] = []
    shortfall: GangShortfall | None = None
    queue = report.queue if report is not None else ""
    try:
        ssn.open()
    except PluginError as exc:
        notes.append(f"The session could not open: {exc}")
        return Explanation(uid, queue, report, reason, tuple(notes), (), (), state=state)
    job = ssn.jobs.get(uid)
    if job is not None:
        queue = job.queue
        if report is None:
            report = PodGroupReport(
                job.pod_group.phase, job.scheduled_task_num(), job.min_available, job.queue, job.allocated.clone()
            )
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
                    # Before the votes: a plugin may reserve room for the job while it votes.
                    shortfall = gang_shortfall(ssn, job)
                    verdict = "would admit" if ssn.job_enqueueable(job) else "would not admit"
                    votes = ", ".join(
                        f"{p} {_vote_text(v)}" for p, v in _plugin_answers(ssn, "job_enqueueable", job=job)
                    )
                    wanted = job.pod_group.min_resources.describe(readable=True)
                    notes.append(
                        f"The PodGroup is Pending: enqueue {verdict} it now "
                        f"(minResources {wanted}; votes: {votes or 'none'})."
                    )
            if shortfall is None:
                shortfall = gang_shortfall(ssn, job)
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
                pod = _explain_pod(ssn, tasks)
                pods.append(pod)
                # Nodes refused for resources were not asked the predicates; they have no room either.
                open_nodes = [n for n, v in zip(ssn.node_list, pod.nodes, strict=True) if v.plugin in ("", "allocate")]
                rooms.append(count_room(open_nodes, tasks, total_nodes=len(ssn.node_list)))
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
    return Explanation(
        uid, queue, report, reason, tuple(notes), tuple(pods), tuple(views), shortfall, tuple(rooms), state
    )


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
