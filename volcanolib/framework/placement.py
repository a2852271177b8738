"""Placement: the one answer to "which nodes may take this task, which is best, and why not".

Every action that puts a task on a node (allocate, backfill, preempt,
reclaim) asks the session's :class:`Placement`. It combines the resource
check, the plugins' predicates and scores and Volcano's per-role predicate
error cache, and keeps three private strategies that give the same answers
as checking every node, faster:

* a **fit index**: for each distinct request, the nodes it fits (future idle)
  and fits now (idle), re-checked only on the nodes that changed since;
* **node classes**: when every plugin that checks or scores nodes says what
  it reads of a node (``node_class_key``), one node per class of alike nodes
  is checked and scored in place of all of them;
* **remembered class answers**: when every such plugin's scores are
  pointwise, each class's answer is kept per task signature, so a task
  touches only the classes that appeared since the last alike task.

Each strategy stays current by reading the session's node log (every
allocate or deallocate event appends its node's name) through one reader,
:class:`NodeChanges`.

A batch that covers every ready node is always the session's
:attr:`~volcanolib.framework.session.Session.node_list` object itself, so a
plugin's ``batch_predicate`` or ``batch_node_order`` can tell a full batch by
identity (``nodes is ssn.node_list``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final, final

from sortedcontainers import SortedList

from volcanolib.api.fiterrors import FitError, FitErrors, NodeNames, insufficient
from volcanolib.framework import bounds, fastpath
from volcanolib.framework.arguments import argument
from volcanolib.framework.nodeclass import Answer, ClassAnswers, NodeChanges, NodeClasses, NodeClassPlan, Refusal

if TYPE_CHECKING:
    from volcanolib.api.node import NodeInfo
    from volcanolib.api.resource import Resource
    from volcanolib.api.task import TaskInfo
    from volcanolib.framework.nodeclass import _Partition
    from volcanolib.framework.session import Session

__all__ = [
    "NodeChanges",
    "Placement",
    "PredicateCache",
    "VictimNodes",
    "node_classes_argument",
    "predicate_error_cache_argument",
]

#: Task signatures whose class answers are remembered before starting over.
_MAX_SIGNATURES: Final = bounds.CLASS_ANSWER_SIGNATURES
#: What :meth:`Placement._choose_remembered` gives when no node is feasible and no explanation was asked for.
_UNEXPLAINED: Final = FitErrors()
#: The node allocate chooses, one node per class checked and scored (see :mod:`~volcanolib.framework.fastpath`).
BY_CLASS: Final = fastpath.register("allocate by node class", "every node checked and scored")
#: The same, each class's answer remembered across alike tasks (pointwise plans).
REMEMBERED: Final = fastpath.register("allocate by remembered class answers", "every node checked and scored")


def predicate_error_cache_argument(doc: str) -> bool:
    """Declare an action's ``predicateErrorCacheEnable`` argument (default true); ``doc`` says what it does there."""
    return argument(key="predicateErrorCacheEnable", default=True, doc=doc)


def node_classes_argument(doc: str) -> bool:
    """Declare an action's ``nodeClassesEnable`` argument (volcanolib's own, default true)."""
    return argument(
        key="nodeClassesEnable",
        default=True,
        doc=f"volcanolib only. {doc} The decisions are the same either way; `false` checks every node.",
    )


class PredicateCache:
    """Volcano's per-role predicate error cache: the scope in which a failure is reused.

    Once a task of a job's role fails a predicate on a node, later tasks of
    the same role (same :attr:`TaskInfo.template`) asked about with the same
    cache get the recorded failure for that node without running the
    predicates again. Tasks without a role are never cached. Volcano keeps
    one cache per job visit in allocate, one per action in preempt and one
    per task in reclaim; the actions make theirs accordingly.

    :param enabled: the action argument ``predicateErrorCacheEnable``.
    """

    __slots__ = ("_failed", "enabled")

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._failed: dict[str, dict[str, FitError]] = {}

    def copy(self) -> PredicateCache:
        """A cache holding the failures recorded so far, to which later ones are not added."""
        copied = PredicateCache(self.enabled)
        copied._failed = {template: dict(failed) for template, failed in self._failed.items()}
        return copied

    def has_failures(self, task: TaskInfo) -> bool:
        """Whether failures are recorded for the task's role (its later tasks skip those nodes)."""
        return bool(self._failed) and self.enabled and bool(task.role) and bool(self._failed.get(task.template))

    def _key(self, task: TaskInfo) -> str | None:
        return task.template if self.enabled and task.role else None


class _FitIndex:
    """Per distinct request: the nodes it fits (future idle), their names, and the names it fits now (idle).

    Re-checks only the nodes changed since the request was last asked
    about. When every node fits, the node list itself is returned, so a full
    batch stays recognisable.
    """

    __slots__ = ("_changes", "_entries", "nodes")

    #: Distinct requests remembered before the index starts over.
    MAX_ENTRIES: Final = bounds.FIT_REQUESTS

    def __init__(self, nodes: Sequence[NodeInfo], changes: NodeChanges) -> None:
        self.nodes = nodes
        self._changes = changes
        # request key -> [fitting nodes, fitting names, idle-fitting names, mark]
        self._entries: dict[Hashable, list[Any]] = {}

    def fitting(self, req: Resource) -> tuple[Sequence[NodeInfo], set[str], set[str]]:
        """``(nodes fitting future idle in order, their names, names of those fitting idle)``."""
        key = req.key()
        entry = self._entries.get(key)
        changes = self._changes
        if entry is None:
            if len(self._entries) >= self.MAX_ENTRIES:
                self._entries.clear()
            fit: list[NodeInfo] = []
            names: set[str] = set()
            idle: set[str] = set()
            for node in self.nodes:
                if node.first_insufficient(req) is None:
                    fit.append(node)
                    names.add(node.name)
                    if req.less_equal(node.idle):
                        idle.add(node.name)
            found: Sequence[NodeInfo] = self.nodes if len(fit) == len(self.nodes) else fit
            entry = self._entries[key] = [found, names, idle, changes.mark()]
        elif entry[3] < changes.mark():
            names = entry[1]
            idle = entry[2]
            changed = False
            nodes = self.nodes
            for position in changes.since(entry[3]):
                node = nodes[position]
                name = node.name
                now = node.first_insufficient(req) is None
                if now != (name in names):
                    changed = True
                    if now:
                        names.add(name)
                    else:
                        names.discard(name)
                if now and req.less_equal(node.idle):
                    idle.add(name)
                else:
                    idle.discard(name)
            if changed:
                entry[0] = nodes if len(names) == len(nodes) else [n for n in nodes if n.name in names]
            entry[3] = changes.mark()
        return entry[0], entry[1], entry[2]


class VictimNodes:
    """Positions of the nodes holding a task ``possible`` accepts, ascending, kept current.

    Preempt and reclaim look for victims node by node; on a busy cluster most
    nodes they pass have nothing left to evict. Read :meth:`alive` to skip
    those without looking at their tasks.

    :param changes: the session's node-change reader (positions refer to its nodes).
    :param possible: whether a task might be a victim (a superset of every
        victim filter the action applies).
    """

    __slots__ = ("_alive", "_changes", "_mark", "_members", "_possible")

    def __init__(self, changes: NodeChanges, possible: Callable[[TaskInfo], bool]) -> None:
        self._changes = changes
        self._mark = changes.mark()
        self._possible = possible
        self._alive: SortedList[int] = SortedList(i for i, node in enumerate(changes.nodes) if self._holds(node))
        # The same positions as a set: membership without searching the sorted list.
        self._members: set[int] = set(self._alive)

    @property
    def nodes(self) -> Sequence[NodeInfo]:
        """The node list positions refer to."""
        return self._changes.nodes

    def _holds(self, node: NodeInfo) -> bool:
        possible = self._possible
        for task in node.tasks.values():  # noqa: SIM110 - a plain loop: any() over a generator costs more per call
            if possible(task):
                return True
        return False

    def alive(self) -> SortedList[int]:
        """The positions of the nodes holding a possible victim now (do not change it)."""
        changes = self._changes
        if self._mark != changes.mark():
            alive = self._alive
            members = self._members
            nodes = changes.nodes
            for position in changes.since(self._mark):
                if self._holds(nodes[position]):
                    if position not in members:
                        members.add(position)
                        alive.add(position)
                elif position in members:
                    members.discard(position)
                    alive.remove(position)
            self._mark = changes.mark()
        return self._alive


@final
class Placement:
    """Where a task may go in one session: feasible nodes, the best node, and why not.

    :param ssn: the session.
    :param kept: the previous session's node classes, to be carried over
        (see :meth:`NodeClasses.carry_over
        <volcanolib.framework.nodeclass.NodeClasses.carry_over>`).
    :param changed: the nodes whose objects differ from the previous session's.

    Made by the session (:attr:`Session.placement
    <volcanolib.framework.session.Session.placement>`) once its snapshot is
    loaded; every answer reflects the nodes as they are when asked.
    Node-class strategies are used only where the caller allows them
    (``node_classes``) and every plugin that checks or scores nodes says how
    to group them; the answers are the same either way.
    """

    __slots__ = ("_changes", "_classes", "_fit", "_preempt_answers", "_ssn", "nodes")

    def __init__(self, ssn: Session, kept: NodeClasses | None = None, changed: Iterable[str] = ()) -> None:
        self._ssn = ssn
        #: The session's ready nodes, in order (ties are broken in this order).
        self.nodes: Sequence[NodeInfo] = ssn.node_list
        # Kept classes come only from a session whose nodes had the same names in the same order.
        same = kept.positions() if kept is not None and len(kept.nodes) == len(self.nodes) else None
        self._changes = NodeChanges(self.nodes, ssn.node_log, same)
        self._fit = _FitIndex(self.nodes, self._changes)
        # The previous session's classes, when its nodes are these (``changed`` naming the new objects).
        self._classes: NodeClasses | None = None
        if kept is not None and kept.carry_over(self._changes, changed):
            self._classes = kept
        #: Per preemptor signature (plan token, request, role): each class value's answer for preemption.
        self._preempt_answers: dict[Hashable, dict[Hashable, Answer | None]] = {}

    def node_classes(self) -> NodeClasses | None:
        """The node classes grouped so far in this session (``None`` when none were), for the next one."""
        return self._classes

    def _node_classes(self) -> NodeClasses:
        classes = self._classes
        if classes is None:
            classes = self._classes = NodeClasses(self._changes)
        return classes

    def victim_nodes(self, possible: Callable[[TaskInfo], bool]) -> VictimNodes:
        """An index of the nodes holding a task ``possible`` accepts, kept current as tasks move."""
        return VictimNodes(self._changes, possible)

    # ------------------------------------------------------------------ feasibility

    def feasible(
        self,
        task: TaskInfo,
        nodes: Sequence[NodeInfo] | None = None,
        *,
        cache: PredicateCache | None = None,
        fit_errors: FitErrors | None = None,
        resource_check: bool = False,
        for_preempt: bool = False,
    ) -> list[NodeInfo]:
        """The nodes, in order, that may take ``task``; when none may, ``fit_errors`` says why for each.

        :param nodes: the nodes to consider (every ready node by default).
        :param cache: reuse and record predicate failures of the task's role.
        :param resource_check: first require the request to fit each node's
            future idle (failing with ``Insufficient <resource>``), as allocate does.
        :param for_preempt: keep nodes whose only failure is plain
            ``UNSCHEDULABLE`` (evicting may fix it), as preempt and reclaim do.
        """
        ssn = self._ssn
        every = nodes is None or nodes is self.nodes
        considered: Sequence[NodeInfo] = self.nodes if nodes is None else nodes
        errors = fit_errors if fit_errors is not None else FitErrors()
        key = cache._key(task) if cache is not None else None
        cached = cache._failed.get(key) if cache is not None and key is not None else None
        req = task.init_resreq
        fit_names: set[str] | None = None
        candidates: Sequence[NodeInfo]
        if resource_check and every:
            fit, fit_names, _ = self._fit.fitting(req)
            candidates = [n for n in fit if n.name not in cached] if cached else fit
        else:
            chosen: list[NodeInfo] = []
            for node in considered:
                if cached is not None and node.name in cached:
                    continue
                if resource_check and node.first_insufficient(req) is not None:
                    continue
                chosen.append(node)
            candidates = considered if every and len(chosen) == len(considered) else chosen
        passed = ssn.predicate_nodes(task, candidates, for_preempt=for_preempt, fit_errors=errors) if candidates else []
        if cache is not None and key is not None and len(passed) != len(candidates):
            alive = {n.name for n in passed}
            store = cache._failed.setdefault(key, {})
            for node in candidates:
                if node.name not in alive:
                    failure = errors.nodes.get(node.name)
                    if failure is not None:
                        store[node.name] = failure
        if not passed and fit_errors is not None:
            # Explain the nodes that never reached the predicates.
            record = fit_errors.set_node_error
            for node in considered:
                if cached is not None:
                    hit = cached.get(node.name)
                    if hit is not None:
                        record(FitError(task.key, node.name, hit.reasons))
                        continue
                if resource_check and (fit_names is None or node.name not in fit_names):
                    short = node.first_insufficient(req)
                    if short is not None:
                        record(FitError(task.key, node.name, (insufficient(short),)))
        return passed

    def passes(self, task: TaskInfo, node: NodeInfo, cache: PredicateCache, *, for_preempt: bool = True) -> bool:
        """Whether ``node`` passes for ``task`` (as :meth:`feasible` over that one node).

        Reclaim asks this once per task and node; it is :meth:`feasible`'s
        path for one node without a resource check, written out.
        """
        key = cache._key(task)
        if key is None:  # nothing to record: no reasons wanted
            return bool(self._ssn.predicate_nodes(task, [node], for_preempt=for_preempt))
        cached = cache._failed.get(key)
        if cached is not None and node.name in cached:
            return False
        errors = FitErrors()
        if self._ssn.predicate_nodes(task, [node], for_preempt=for_preempt, fit_errors=errors):
            return True
        failure = errors.nodes.get(node.name)
        if failure is not None:
            cache._failed.setdefault(key, {})[node.name] = failure
        return False

    def best(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> NodeInfo | None:
        """The node a task goes to among feasible ones: ``best_node``, else the top score, ties drawn."""
        return self._ssn.best_node(task, nodes)

    # ------------------------------------------------------------------ allocate's choice

    def choose(
        self, task: TaskInfo, cache: PredicateCache, *, node_classes: bool = True
    ) -> NodeInfo | FitErrors | None:
        """The node allocate places ``task`` on, or why no node may take it.

        A nominated node that fits and passes is chosen first. Otherwise the
        feasible nodes (future idle fits the request and every predicate
        passes) where the task fits idle resources now are preferred to those
        where it would be pipelined; among them ``best_node`` decides, else
        the highest score, ties broken by the session's seeded generator.

        :returns: the node; or :class:`FitErrors` saying, node by node, why
            none is feasible; or ``None`` when feasible nodes exist but no
            node was chosen among them.
        """
        ssn = self._ssn
        pod = task.pod
        nominated = pod.nominated_node_name if pod is not None else ""
        if not nominated and node_classes:
            plan = ssn.node_class_plan(task)
            if plan is not None:
                state = ssn.rng.getstate() if ssn.check_fast_paths else None
                explain = not cache.has_failures(task)
                chosen: NodeInfo | FitErrors | None = None
                path = REMEMBERED
                if plan.pointwise:
                    chosen = self._choose_remembered(task, plan, explain=explain)
                if chosen is None:
                    chosen, path = self._choose_by_class(task, plan, explain=explain), BY_CLASS
                if chosen is not None and chosen is not _UNEXPLAINED:
                    if state is not None:
                        self._check_choice(path, task, cache, chosen, state)
                    return chosen
        return self._choose_every_node(task, cache, nominated)

    def _check_choice(
        self, path: fastpath.FastPath, task: TaskInfo, cache: PredicateCache, chosen: Any, state: Any
    ) -> None:
        """Check a node class choice against every node checked and scored, from the same random state."""
        rng = self._ssn.rng
        after = rng.getstate()
        rng.setstate(state)
        reference = self._choose_every_node(task, cache.copy(), "")
        # The same draws: the random state after both, as a short digest.
        fastpath.agree(path, (_answer(chosen), hash(after)), (_answer(reference), hash(rng.getstate())))

    def _choose_every_node(self, task: TaskInfo, cache: PredicateCache, nominated: str) -> NodeInfo | FitErrors | None:
        """:meth:`choose`, checking and scoring every node (the nominated one first)."""
        ssn = self._ssn
        errors = FitErrors(total_nodes=len(self.nodes))
        feasible: list[NodeInfo] = []
        if nominated:
            nominee = ssn.nodes.get(nominated)
            if nominee is not None and nominee.fits_future_idle(task.init_resreq):
                feasible = self.feasible(task, [nominee], cache=cache, fit_errors=FitErrors(), resource_check=True)
        if not feasible:
            feasible = self.feasible(task, cache=cache, fit_errors=errors, resource_check=True)
        if not feasible:
            return errors
        return self._choose_node(task, feasible)

    def choose_in(
        self, task: TaskInfo, nodes: Sequence[NodeInfo], cache: PredicateCache
    ) -> tuple[NodeInfo | FitErrors | None, float]:
        """:meth:`choose` restricted to ``nodes`` (a HyperNode's), with the chosen node's score.

        A nominated node is tried first when it is among ``nodes``. The
        score is the chosen node's total among the nodes it competed with;
        0 when it had no competitor or ``best_node`` chose it (as Volcano
        sums node scores per HyperNode).

        .. versionadded:: 0.2
        """
        ssn = self._ssn
        pod = task.pod
        nominated = pod.nominated_node_name if pod is not None else ""
        req = task.init_resreq
        feasible: list[NodeInfo] = []
        if nominated:
            nominee = ssn.nodes.get(nominated)
            if nominee is not None and nominee in nodes and nominee.fits_future_idle(req):
                feasible = self.feasible(task, [nominee], cache=cache, fit_errors=FitErrors(), resource_check=True)
        errors = FitErrors(total_nodes=len(nodes))
        if not feasible:
            feasible = self.feasible(task, nodes, cache=cache, fit_errors=errors, resource_check=True)
        if not feasible:
            return errors, 0.0
        idle, future = self._idle_first(task, feasible)
        return ssn.best_node_and_score(task, idle or future)

    def choose_among(self, task: TaskInfo, feasible: list[NodeInfo]) -> NodeInfo | None:
        """The node allocate would pick among ``feasible`` nodes (see :meth:`choose`), without a nominated node.

        Nodes where the task fits idle resources now win over nodes where
        it would be pipelined; ``None`` when the task fits neither way on any.

        .. versionadded:: 0.2
        """
        return self._choose_node(task, feasible)

    def _choose_node(self, task: TaskInfo, feasible: list[NodeInfo]) -> NodeInfo | None:
        """The best feasible node: nodes where the task fits idle resources win over pipelining."""
        for group in self._idle_first(task, feasible):
            if group:
                chosen = self._ssn.best_node(task, group)
                if chosen is not None:
                    return chosen
        return None

    def _idle_first(self, task: TaskInfo, feasible: Sequence[NodeInfo]) -> tuple[list[NodeInfo], list[NodeInfo]]:
        """The feasible nodes where the task fits idle resources now, and those where it would be pipelined."""
        idle: list[NodeInfo] = []
        future: list[NodeInfo] = []
        _, fit_names, idle_names = self._fit.fitting(task.init_resreq)
        for node in feasible:
            name = node.name
            if name in idle_names:
                idle.append(node)
            elif name in fit_names:
                future.append(node)
        return idle, future

    def _choose_remembered(self, task: TaskInfo, plan: NodeClassPlan, *, explain: bool) -> NodeInfo | FitErrors:
        """:meth:`_choose_by_class` for a pointwise plan, remembering each class's fit and score.

        Tasks with the same plan token and request get the same answers from
        a class as long as it exists (and, for a durable plan, in the
        following sessions of the scheduler), so only classes that appeared
        since the last such task are checked and scored. When no node is
        feasible: with ``explain``, why, as :meth:`_choose_by_class` gives it;
        else :data:`_UNEXPLAINED`.
        """
        classes = self._node_classes()
        part = classes.partition(plan)
        signature = (plan.token, task.init_resreq.key())
        remembered = classes.answers
        view = remembered.get(signature)
        if view is None:
            if len(remembered) >= _MAX_SIGNATURES:
                remembered.clear()
            view = remembered[signature] = ClassAnswers()
        nodes = classes.nodes
        view.update(part, nodes, lambda reps: self._class_answers(task, reps))
        groups = view.best_members()
        if groups:
            return nodes[self._draw(classes, groups)]
        if not explain:
            return _UNEXPLAINED
        # As _choose_by_class gives it (a test compares them).
        refused, counts = view.explain(nodes)
        grouped = FitErrors(total_nodes=len(nodes))
        grouped.set_class_errors(task.key, refused, counts)
        return grouped

    def _class_answers(self, task: TaskInfo, reps: list[NodeInfo]) -> list[Answer | Refusal]:
        """Each node's answer for ``task`` (fits idle resources now, score), or why it refuses it."""
        ssn = self._ssn
        req = task.init_resreq
        fitting: list[NodeInfo] = []
        lacking: dict[str, str] = {}
        for rep in reps:
            short = rep.first_insufficient(req)
            if short is None:
                fitting.append(rep)
            else:
                lacking[rep.name] = short
        errors = FitErrors(total_nodes=len(self.nodes))
        passed = ssn.predicate_nodes(task, fitting, fit_errors=errors) if fitting else []
        scores = ssn.node_scores(task, passed) if passed else {}
        failed = errors.nodes
        out: list[Answer | Refusal] = []
        for rep in reps:
            name = rep.name
            if name in scores:
                out.append((req.less_equal(rep.idle), scores[name]))
            elif name in lacking:
                out.append(Refusal(False, (insufficient(lacking[name]),)))
            else:
                out.append(Refusal(True, tuple(failed[name].reasons)))
        return out

    def _draw(self, classes: NodeClasses, groups: list[list[int]]) -> int:
        """One position among the members of ``groups``, drawn as the node-by-node path draws its tie."""
        if len(groups) == 1:  # one best class: its members are the positions in order
            (members,) = groups
            return members[self._ssn.rng.randrange(len(members))] if len(members) > 1 else members[0]
        count = sum(len(members) for members in groups)
        rank = self._ssn.rng.randrange(count) if count > 1 else 0
        return classes.nth(groups, rank)

    def _choose_by_class(self, task: TaskInfo, plan: NodeClassPlan, *, explain: bool) -> NodeInfo | FitErrors | None:
        """The node :meth:`_choose_node` would choose, checking and scoring one node per class.

        When no node is feasible: with ``explain``, why, node by node, as the
        per-node path would record it; else ``None`` (the caller then takes the
        per-node path).
        """
        ssn = self._ssn
        classes = self._node_classes()
        req = task.init_resreq
        nodes = classes.nodes
        members_of: dict[str, list[int]] = {}
        fitting: list[NodeInfo] = []
        short: list[tuple[str, list[int]]] = []
        for members in classes.classes(plan).values():
            rep = nodes[members[0]]
            lacking = rep.first_insufficient(req)
            if lacking is None:
                fitting.append(rep)
                members_of[rep.name] = members
            elif explain:
                short.append((lacking, members))
        errors = FitErrors(total_nodes=len(nodes)) if explain else None
        passed = ssn.predicate_nodes(task, fitting, fit_errors=errors) if fitting else []
        group = [rep for rep in passed if req.less_equal(rep.idle)] or passed
        if not group:
            if errors is None:
                return None
            # Every node of a class fails as its representative did; give each node its reasons. The
            # classes cover every node, so the groups alone say it all (and count without naming nodes).
            failed = errors.nodes
            grouped = FitErrors(total_nodes=len(nodes))
            groups = [(NodeNames(nodes, members_of[rep.name]), tuple(failed[rep.name].reasons)) for rep in fitting]
            groups += [(NodeNames(nodes, members), (insufficient(lacking),)) for lacking, members in short]
            grouped.set_class_errors(task.key, groups)
            return grouped
        if len(group) == 1 and len(members_of[group[0].name]) == 1:
            return group[0]
        scores = ssn.node_scores(task, group)
        best_score = max(scores[rep.name] for rep in group)
        best = [members_of[rep.name] for rep in group if scores[rep.name] == best_score]
        return nodes[self._draw(classes, best)]

    # ------------------------------------------------------------------ preempt's order

    def preemption_order(
        self,
        task: TaskInfo,
        cache: PredicateCache,
        holding: VictimNodes,
        *,
        node_classes: bool = True,
    ) -> Iterator[NodeInfo]:
        """The nodes preempt tries for ``task``, best first: feasible for preemption, by descending score.

        Feasible means passing the predicates where a plain ``UNSCHEDULABLE``
        failure counts as fixable by eviction. Ties keep node order. Nodes
        that hold no possible victim (``holding``) and where the task does
        not fit as they are may be left out: nothing there could make room.
        """
        ssn = self._ssn
        if node_classes:
            plan = ssn.node_class_plan(task)
            if plan is not None:
                return self._preemption_order_by_class(task, plan, cache, holding)
        nodes = self.feasible(task, cache=cache, for_preempt=True)
        return iter(ssn.sorted_by_score(task, nodes) if nodes else ())

    def _preemption_order_by_class(
        self, task: TaskInfo, plan: NodeClassPlan, cache: PredicateCache, holding: VictimNodes
    ) -> Iterator[NodeInfo]:
        ssn = self._ssn
        classes = self._node_classes()
        part = classes.partition(plan)
        nodes = classes.nodes
        req = task.init_resreq
        # Each score level: the classes passing there, each with whether the task fits it as it is.
        levels: dict[float, list[tuple[bool, list[int], Hashable]]] = {}
        role = cache._key(task)
        if plan.pointwise and (role is None or not cache._failed.get(role)):
            # No failure is recorded for the task's role, so the cache decides nothing: each class's
            # answer depends on the class alone and is remembered while the class exists.
            for key, (fits, score) in self._preemption_answers(task, plan, part, cache, role).items():
                levels.setdefault(score, []).append((fits, part.classes[key], key))
        else:
            reps: list[NodeInfo] = []
            members_of: dict[str, list[int]] = {}
            for members in part.classes.values():
                rep = nodes[members[0]]
                reps.append(rep)
                members_of[rep.name] = members
            passed = self.feasible(task, reps, cache=cache, for_preempt=True)
            if not passed:
                return
            scores = ssn.node_scores(task, passed)
            key_of = part.key_of
            for rep in passed:
                members = members_of[rep.name]
                fits = rep.first_insufficient(req) is None
                levels.setdefault(scores[rep.name], []).append((fits, members, key_of[members[0]]))
        if not levels:
            return
        alive = holding.alive()
        key_of = part.key_of
        for score in sorted(levels, reverse=True):
            whole: list[list[int]] = []
            only_victims: set[Hashable] = set()
            for fits, members, key in levels[score]:
                if fits:
                    whole.append(members)
                else:
                    only_victims.add(key)
            with_victims = (p for p in alive if key_of[p] in only_victims) if only_victims else iter(())
            for position in heapq.merge(*whole, with_victims):
                yield nodes[position]

    def _preemption_answers(
        self, task: TaskInfo, plan: NodeClassPlan, part: _Partition, cache: PredicateCache, role: str | None
    ) -> dict[Hashable, Answer]:
        """Each current class passing for preemption: (the task fits its nodes as they are, their score).

        A pointwise plan's answers depend on the class alone (its key
        functions' values and resources), for tasks of one plan token and
        request: each class value is checked and scored once for the tasks
        of one role, and the answer is kept when the class empties, for
        when a node is in that state again.
        """
        ssn = self._ssn
        req = task.init_resreq
        signature = ("preempt", plan.token, req.key(), role)
        memo = self._preempt_answers.get(signature)
        if memo is None or len(memo) >= _MAX_SIGNATURES:
            if len(self._preempt_answers) >= _MAX_SIGNATURES:
                self._preempt_answers.clear()
            memo = self._preempt_answers[signature] = {}
        nodes = self._node_classes().nodes
        answers: dict[Hashable, Answer] = {}
        new: list[tuple[Hashable, NodeInfo]] = []
        for key, members in part.classes.items():
            if key not in memo:
                new.append((key, nodes[members[0]]))
                continue
            known = memo[key]
            if known is not None:
                answers[key] = known
        if new:
            reps = [rep for _, rep in new]
            passed = self.feasible(task, reps, cache=cache, for_preempt=True)
            scores = ssn.node_scores(task, passed) if passed else {}
            for key, rep in new:
                score = scores.get(rep.name)
                answer: Answer | None = None if score is None else (rep.first_insufficient(req) is None, score)
                memo[key] = answer
                if answer is not None:
                    answers[key] = answer
        return answers


def _answer(chosen: NodeInfo | FitErrors | None) -> object:
    """A choice as a value: the node's name, or each node's reasons, or ``None``."""
    if chosen is None:
        return None
    if isinstance(chosen, FitErrors):
        return sorted((name, tuple(error.reasons)) for name, error in chosen.nodes.items())
    return chosen.name
