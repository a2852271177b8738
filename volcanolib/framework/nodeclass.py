"""Node classes: nodes that every placement hook treats alike for a task.

On a large cluster most nodes look the same to a task: same labels that
matter, same taints, same free resources. Checking and scoring one node of
each class, instead of every node, gives the same answers at a fraction of
the cost. A plugin opts in per task through the ``node_class_key`` hook by
returning a :class:`NodeClassKey`; the session combines the plugins' keys
into a :class:`NodeClassPlan`, and :class:`NodeClasses` keeps the nodes
grouped by plan while placements change them.

Two nodes are in one class for a plan when they have the same allocatable,
capability, idle, used, releasing and pipelined resources, and every
plugin's key function gives the same value for both.
"""

from __future__ import annotations

import bisect
import itertools
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TYPE_CHECKING, Final

import attrs
from sortedcontainers import SortedDict

from volcanolib.api.fiterrors import NodeNames
from volcanolib.framework import bounds

if TYPE_CHECKING:
    from volcanolib.api.node import NodeInfo

__all__ = [
    "Answer",
    "ClassAnswers",
    "NodeChanges",
    "NodeClassKey",
    "NodeClassPlan",
    "NodeClasses",
    "Refusal",
    "resource_key",
    "static_resource_key",
]


@attrs.frozen(cache_hash=True)
class NodeClassKey:
    """A plugin's statement of what it looks at on a node when placing one task.

    By returning one from ``node_class_key`` a plugin promises that, for
    that task, its predicates and scores on a node depend only on
    ``key(node)`` and the node's resources (allocatable, capability, idle,
    used, releasing, pipelined); that ``key(node)`` changes only when tasks
    are placed on or leave that node; that its batch hooks answer alike for
    nodes of one class whatever other nodes share the batch (normalising by
    the best or worst candidate is fine, by the number of candidates is
    not); and that a predicate failure is not undone by placing more tasks
    on the node.
    """

    #: Equal tokens mean equal key functions, and equal answers for tasks with equal
    #: requests on nodes of one class; the grouping (and, for pointwise plans, each
    #: class's answers) is kept per token.
    token: Hashable
    #: The part of a node that matters to the plugin for this task.
    key: Callable[[NodeInfo], Hashable]
    #: Whether a node's score is the same whichever other nodes are scored with it (no
    #: normalising over the candidates); then a class's answers are remembered across tasks
    #: with the same tokens and request.
    pointwise: bool = False
    #: Whether ``key(node)`` depends on that node alone (its object, its tasks), never on other nodes or on
    #: state the plugin computes over the whole cluster, and the same token in a later session of the same
    #: configuration means the same key function; then a grouping is kept from one session to the next and
    #: only the nodes the snapshot names as changed are grouped again. For a pointwise key, the same token
    #: must also mean the same checks and scores of a node of a given key in that later session (whatever
    #: else the plugin reads is in the token): a class's answers are then kept with the grouping.
    #:
    #: .. versionadded:: 0.2
    durable: bool = False


@attrs.frozen
class NodeClassPlan:
    """The keys of every placement plugin for one task, in tier order."""

    token: tuple[Hashable, ...]
    keys: tuple[Callable[[NodeInfo], Hashable], ...]
    #: Whether every plugin's scores are pointwise (see :attr:`NodeClassKey.pointwise`).
    pointwise: bool = False
    #: Whether every plugin's key is durable (see :attr:`NodeClassKey.durable`).
    durable: bool = False


def static_resource_key(node: NodeInfo) -> Hashable:
    """The resources of a node that do not change within a session."""
    return (node.allocatable.key(), node.capability.key())


def resource_key(node: NodeInfo) -> Hashable:
    """The resources of a node that change as tasks come and go: idle, used, releasing and pipelined.

    Equal keys mean equal resources (as :meth:`Resource.key <volcanolib.api.resource.Resource.key>`
    says of one vector); the four vectors are written out in one flat tuple, which is cheaper to build
    and hash than four.
    """
    i, u, r, p = node.idle, node.used, node.releasing, node.pipelined
    return (
        i.milli_cpu, i.memory, tuple(i.scalars.items()) if i.scalars else (),
        u.milli_cpu, u.memory, tuple(u.scalars.items()) if u.scalars else (),
        r.milli_cpu, r.memory, tuple(r.scalars.items()) if r.scalars else (),
        p.milli_cpu, p.memory, tuple(p.scalars.items()) if p.scalars else (),
    )  # fmt: skip


class _ClassKey:
    """A class key whose hash is worked out once.

    Class keys are nested tuples; the dictionaries and sets that track
    classes hash the same key many times, and a tuple does not keep its hash.
    """

    __slots__ = ("hash", "value")

    def __init__(self, value: Hashable) -> None:
        self.value = value
        self.hash = hash(value)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return self is other or (
            isinstance(other, _ClassKey) and self.hash == other.hash and bool(self.value == other.value)
        )

    def __repr__(self) -> str:
        return f"_ClassKey({self.value!r})"


def _class_value(
    static: Sequence[Hashable], keys: tuple[Callable[[NodeInfo], Hashable], ...]
) -> Callable[[int, NodeInfo], Hashable]:
    """What a node's class key is made of, given its position: static resources, changing resources, each key.

    Written out for the usual numbers of keys: nodes are grouped again every time a task lands on one.
    """
    if len(keys) == 1:
        (first,) = keys
        return lambda position, node: (static[position], resource_key(node), first(node))
    if len(keys) == 2:
        first, second = keys
        return lambda position, node: (static[position], resource_key(node), first(node), second(node))
    if len(keys) == 3:
        first, second, third = keys
        return lambda position, node: (static[position], resource_key(node), first(node), second(node), third(node))
    return lambda position, node: (static[position], resource_key(node), *[key(node) for key in keys])


class _Partition:
    """The classes of one plan: class key -> positions of its nodes, ascending.

    Class keys are interned: the nodes of one class share one key object, so
    finding a node's class and telling whether it moved compare keys by
    identity; the value tuples are compared only when a key is looked up.
    The key of a class that empties stays interned (up to a bound), so a
    class that comes back has its old key object and the answers remembered
    for it are found by identity.
    """

    __slots__ = (
        "changes",
        "classes",
        "durable",
        "epoch",
        "interned",
        "key_of",
        "keys",
        "moved",
        "moved_epoch",
        "pending",
        "seen",
        "static",
        "value",
    )

    def __init__(self, plan: NodeClassPlan, nodes: Sequence[NodeInfo], static: Sequence[Hashable], seen: int) -> None:
        self.durable = plan.durable
        #: Positions of nodes that changed between sessions, grouped again (with the new session's keys) on first use.
        self.pending: list[int] | None = None
        self.static = static
        self.use_keys(plan.keys)
        #: The value of every current class's key -> the key.
        self.interned: dict[Hashable, _ClassKey] = {}
        self.key_of: list[_ClassKey] = [self.class_key(position, node) for position, node in enumerate(nodes)]
        grouped: dict[Hashable, list[int]] = {}
        for position, key in enumerate(self.key_of):
            members = grouped.get(key)
            if members is None:
                grouped[key] = [position]
            else:
                members.append(position)
        # Positions were added in ascending order; plain lists kept sorted with bisect are cheaper
        # than sorted containers for the small classes most nodes end up in.
        self.classes: dict[Hashable, list[int]] = grouped
        self.seen = seen
        #: Keys of the classes that appeared or emptied since the grouping was made (or :attr:`epoch`
        #: last changed), in order; kept from session to session.
        self.changes: list[Hashable] = []
        #: Counts the times :attr:`changes` started over (a reader then reads every class again).
        self.epoch = 0
        #: Keys of the classes whose members changed (both classes of every node that moved), in order;
        #: kept from session to session and started over with :attr:`changes`.
        self.moved: list[Hashable] = []
        #: Counts the times :attr:`moved` started over.
        self.moved_epoch = 0

    def use_keys(self, keys: tuple[Callable[[NodeInfo], Hashable], ...]) -> None:
        """Group with these key functions from now on (a plan's, equal to those grouped with so far)."""
        self.keys = keys
        self.value = _class_value(self.static, keys)

    def class_key(self, position: int, node: NodeInfo) -> _ClassKey:
        """The interned key of the class ``node`` belongs in."""
        value = self.value(position, node)
        found = self.interned.get(value)
        if found is None:
            found = self.interned[value] = _ClassKey(value)
        return found

    def move(self, position: int, node: NodeInfo) -> None:
        old = self.key_of[position]
        new = self.class_key(position, node)
        if new is old:
            return
        self.moved += (old, new)
        classes = self.classes
        members = classes[old]
        del members[bisect.bisect_left(members, position)]
        self.key_of[position] = new
        if not members:
            del classes[old]
            self.changes.append(old)
            if len(self.interned) > _MAX_INTERNED + 2 * len(classes):
                # Forget the keys of empty classes; those of current classes stay (their nodes share them).
                self.interned = {key.value: key for key in self.key_of}
        target = classes.get(new)
        if target is None:
            classes[new] = [position]
            self.changes.append(new)
        else:
            bisect.insort(target, position)


class NodeChanges:
    """Which nodes changed since a mark, read from the session's node log.

    The indexes of a :class:`Placement` each keep a mark (an integer) and
    ask for the positions of the nodes changed since; this is the only code
    that reads the log.

    :param nodes: the node list positions refer to.
    :param log: names of changed nodes, appended to as nodes change.
    :param position: each node's place in ``nodes`` by name, when known
        (a reader of an earlier session whose nodes had the same names in
        the same order shares its own); worked out from ``nodes`` otherwise.
    """

    __slots__ = ("_log", "nodes", "position")

    def __init__(self, nodes: Sequence[NodeInfo], log: list[str], position: dict[str, int] | None = None) -> None:
        self.nodes = nodes
        self._log = log
        #: A node's place in :attr:`nodes`, by name (shared, never changed).
        self.position: dict[str, int] = (
            position if position is not None else {node.name: i for i, node in enumerate(nodes)}
        )

    def mark(self) -> int:
        """A mark for "now"."""
        return len(self._log)

    def since(self, mark: int) -> list[int]:
        """The positions of the nodes changed since ``mark``, each once, in order of first change."""
        where = self.position
        log = self._log
        if len(log) == mark + 1:  # one node changed: the usual case between two placements
            position = where.get(log[mark])
            return [] if position is None else [position]
        positions = []
        for name in dict.fromkeys(self._log[mark:]):
            position = where.get(name)
            if position is not None:
                positions.append(position)
        return positions


class NodeClasses:
    """The nodes of a session grouped into classes, per plan, kept current as nodes change.

    Classes are built the first time a plan is asked for and brought up to
    date from the nodes ``changes`` reports.

    :param changes: the session's node-change reader; its nodes, in the order
        ties are broken in, are the ones grouped.
    """

    __slots__ = ("_changes", "_interned", "_parts", "_static", "answers", "nodes")

    #: Plans remembered before the grouping starts over.
    MAX_PLANS: Final = bounds.GROUPINGS

    def __init__(self, changes: NodeChanges) -> None:
        nodes = changes.nodes
        self.nodes = nodes
        self._changes = changes
        self._parts: dict[tuple[Hashable, ...], _Partition] = {}
        #: Per task signature (plan token, request): each class's answer, for pointwise plans; those
        #: of durable plans are carried over with the classes (see :attr:`NodeClassKey.durable`).
        self.answers: dict[Hashable, ClassAnswers] = {}
        # Equal static keys are interned, so comparing class keys mostly compares small objects by identity.
        interned: dict[Hashable, Hashable] = {}
        self._interned = interned
        static: list[Hashable] = []
        for node in nodes:
            key = static_resource_key(node)
            static.append(interned.setdefault(key, key))
        self._static = static

    def carry_over(self, changes: NodeChanges, changed: Iterable[str]) -> bool:
        """Take these classes into the next session, whose nodes ``changes`` reads; whether any is kept.

        The next session's nodes must be this session's, by name and in the
        same order; ``changed`` names the nodes whose objects are new or may
        hold other pods or resources (every other node must be the very
        object grouped here, with the same pods and resources as when this
        session last changed it). Only durable groupings
        (:attr:`NodeClassKey.durable`) are kept; the changed nodes, and those
        this session changed after a grouping was last read, are grouped
        again on each one's first use, with the next session's key functions.
        """
        nodes = changes.nodes
        if len(nodes) != len(self.nodes):
            return False
        before = len(self._parts)
        self._parts = {token: part for token, part in self._parts.items() if part.durable}
        if not self._parts:
            self.answers = {}
            return False
        if len(self._parts) < before:
            kept = {id(part) for part in self._parts.values()}
            self.answers = {sig: view for sig, view in self.answers.items() if id(view.part) in kept}
        where = changes.position
        positions = sorted(where[name] for name in changed if name in where)
        interned = self._interned
        static = self._static
        grouped = self.nodes
        for position in positions:
            node, old = nodes[position], grouped[position]
            # A node copied with the same allocatable and capability objects (nothing changes them) keeps its key.
            if node.allocatable is not old.allocatable or node.capability is not old.capability:
                key = static_resource_key(node)
                static[position] = interned.setdefault(key, key)
        ended = self._changes  # this session's node log: positions are the same in the next
        last = ended.mark()
        for part in self._parts.values():
            pending = positions
            if part.seen < last:  # nodes this session changed after the grouping was last read
                pending = sorted(set(pending).union(ended.since(part.seen)))
            part.pending = pending if part.pending is None else sorted(set(part.pending).union(pending))
            # Every change in the next session's node log is after the snapshot: read it from its start.
            part.seen = 0
            if len(part.changes) > _MAX_CHANGES + 4 * len(part.classes):
                part.changes = []
                part.epoch += 1
            if len(part.moved) > _MAX_CHANGES + 4 * len(part.classes):
                part.moved = []
                part.moved_epoch += 1
        self.nodes = nodes
        self._changes = changes
        return True

    def positions(self) -> dict[str, int]:
        """Each grouped node's place in :attr:`nodes`, by name (do not change it)."""
        return self._changes.position

    def classes(self, plan: NodeClassPlan) -> dict[Hashable, list[int]]:
        """The current classes of ``plan``: class key -> node positions, ascending (do not change them)."""
        return self.partition(plan).classes

    def partition(self, plan: NodeClassPlan) -> _Partition:
        """The current grouping of ``plan`` (its ``classes`` and each position's class ``key_of``)."""
        part = self._parts.get(plan.token)
        changes = self._changes
        if part is None:
            if len(self._parts) >= self.MAX_PLANS:
                self._parts.clear()
            part = self._parts[plan.token] = _Partition(plan, self.nodes, self._static, changes.mark())
            return part
        if part.pending is not None:
            # Kept from the previous session: this session's key functions, and its changed nodes grouped again.
            part.use_keys(plan.keys)
            pending, part.pending = part.pending, None
            nodes = self.nodes
            for position in pending:
                part.move(position, nodes[position])
        if part.seen < changes.mark():
            nodes = self.nodes
            for position in changes.since(part.seen):
                part.move(position, nodes[position])
            part.seen = changes.mark()
        return part

    @staticmethod
    def nth(groups: Sequence[Sequence[int]], rank: int) -> int:
        """The ``rank``-th smallest position (from 0) among disjoint groups of positions."""
        if len(groups) == 1:
            return int(groups[0][rank])
        if len(groups) > 4:
            return int(sorted(itertools.chain.from_iterable(groups))[rank])
        low = min(int(g[0]) for g in groups)
        high = max(int(g[-1]) for g in groups)
        # The smallest position p with more than ``rank`` members at or below it.
        while low < high:
            middle = (low + high) // 2
            if sum(bisect.bisect_right(g, middle) for g in groups) > rank:
                high = middle
            else:
                low = middle + 1
        return low


#: Changes a partition keeps across sessions (plus four per class) before starting them over.
_MAX_CHANGES: Final = bounds.GROUPING_CHANGES
#: Keys of empty classes a partition keeps interned (beyond two per current class) before forgetting them.
_MAX_INTERNED: Final = bounds.INTERNED_CLASS_KEYS

#: A class's answer for a task: (the task fits the node's idle resources now, the node's score).
Answer = tuple[bool, float]


@attrs.frozen
class Refusal:
    """Why the nodes of a class cannot take a task: the checks failed (``checked``), or resources are short."""

    #: Whether the node's resources would do and a check (predicate) failed; else a resource is short.
    checked: bool
    #: The reasons, as the fit errors give them.
    reasons: tuple[str, ...]


class ClassAnswers:
    """One task signature's answer for every current class of a grouping, worked out once per class.

    Valid only for answers that depend on the class alone (a pointwise plan,
    tasks of one plan token and request): a class keeps its answer while it
    exists, and a class that appears is asked about when :meth:`update` runs.
    Answers are kept in order, so the best is found without looking at
    every class.
    """

    __slots__ = (
        "_best",
        "_best_known",
        "_best_members",
        "answers",
        "by_answer",
        "entries",
        "epoch",
        "explained",
        "moved_epoch",
        "part",
        "read",
        "refusals",
        "seen",
        "tally",
    )

    def __init__(self) -> None:
        self.part: _Partition | None = None
        self.seen = 0
        #: Class key -> answer, for the classes whose answer is not ``None``.
        self.answers: dict[Hashable, Answer] = {}
        #: Class key -> why its nodes refuse the task, for the other classes.
        self.refusals: dict[Hashable, Refusal] = {}
        #: Answer -> the keys of the classes that gave it, in answer order.
        self.by_answer: SortedDict[Answer, set[Hashable]] = SortedDict()
        # What best() gives, while no answer changes.
        self._best: tuple[Answer, set[Hashable]] | None = None
        self._best_members: list[list[int]] = []
        self._best_known = False
        self.epoch = 0
        # For explain: each class's nodes and refusal, how many nodes give each reason, how much of the
        # partition's ``moved`` log was read, and the last explanation with the length of the log it read.
        self.entries: dict[Hashable, tuple[NodeNames, Refusal]] = {}
        self.tally: Counter[str] = Counter()
        self.read = 0
        self.moved_epoch = 0
        self.explained: tuple[int, list[tuple[NodeNames, tuple[str, ...]]], Counter[str]] | None = None

    def _drop(self, key: Hashable) -> None:
        self.refusals.pop(key, None)
        old = self.answers.pop(key, None)
        if old is not None:
            self._best_known = False
            keys = self.by_answer[old]
            keys.discard(key)
            if not keys:
                del self.by_answer[old]

    def _set(self, key: Hashable, answer: Answer) -> None:
        self._drop(key)
        self._best_known = False
        self.answers[key] = answer
        keys = self.by_answer.get(answer)
        if keys is None:
            self.by_answer[answer] = {key}
        else:
            keys.add(key)

    def update(
        self,
        part: _Partition,
        nodes: Sequence[NodeInfo],
        ask: Callable[[list[NodeInfo]], Sequence[Answer | Refusal]],
    ) -> None:
        """Bring the answers up to date with ``part``.

        :param ask: answers (or refusals) for one node of each new class, in the order given.
        """
        classes = part.classes
        if part is not self.part or self.epoch != part.epoch:
            self.part = part
            self.epoch = part.epoch
            self.answers.clear()
            self.refusals.clear()
            self.by_answer.clear()
            self._best_known = False
            self.entries.clear()
            self.tally.clear()
            self.read = len(part.moved)
            self.moved_epoch = part.moved_epoch
            self.explained = None
            keys: Iterable[Hashable] = list(classes)
        elif self.seen < len(part.changes):
            keys = set(part.changes[self.seen :])
        else:
            return
        self.seen = len(part.changes)
        new: list[Hashable] = []
        for key in keys:
            if key in classes:
                new.append(key)
            else:
                self._drop(key)
        if new:
            for key, answer in zip(new, ask([nodes[classes[key][0]] for key in new]), strict=True):
                if isinstance(answer, Refusal):
                    self._drop(key)
                    self.refusals[key] = answer
                else:
                    self._set(key, answer)

    def explain(self, nodes: Sequence[NodeInfo]) -> tuple[list[tuple[NodeNames, tuple[str, ...]]], Counter[str]]:
        """Why every class refuses the task, as fit error groups, with how many nodes give each reason.

        The classes whose checks failed come first, then those short of a
        resource, each in class order (what the results give out is not to
        be changed).

        Call it after :meth:`update`, when no class gave an answer. Only the
        classes whose members changed since the last call are looked at again.
        """
        part = self.part
        assert part is not None
        if self.moved_epoch != part.moved_epoch:  # the log started over: look at every class again
            self.moved_epoch = part.moved_epoch
            self.entries.clear()
            self.tally.clear()
            self.read = 0
            self.explained = None
        moved = part.moved
        explained = self.explained
        if explained is not None and explained[0] == len(moved):
            return explained[1], explained[2]
        entries, tally = self.entries, self.tally
        for key in set(moved[self.read :]):
            entry = entries.pop(key, None)
            if entry is not None:
                size = len(entry[0])
                for reason in entry[1].reasons:
                    tally[reason] -= size
                    if not tally[reason]:
                        del tally[reason]
        self.read = len(moved)
        refusals = self.refusals
        checked: list[tuple[NodeNames, tuple[str, ...]]] = []
        short: list[tuple[NodeNames, tuple[str, ...]]] = []
        for key, members in part.classes.items():
            entry = entries.get(key)
            if entry is None:
                refusal = refusals[key]
                entry = entries[key] = (NodeNames(nodes, members), refusal)
                for reason in refusal.reasons:
                    tally[reason] += len(members)
            (checked if entry[1].checked else short).append((entry[0], entry[1].reasons))
        groups = checked + short
        counts = Counter(tally)  # given out: the tally itself changes with the classes
        self.explained = (len(moved), groups, counts)
        return groups, counts

    def best(self) -> tuple[Answer, set[Hashable]] | None:
        """The best answer (fitting idle resources first, then the highest score) and its classes."""
        if not self._best_known:
            self._find_best()
        return self._best

    def best_members(self) -> list[list[int]]:
        """The node positions of each class giving the best answer (none when no class gives one).

        Call it after :meth:`update`, as :meth:`best`.
        """
        if not self._best_known:
            self._find_best()
        return self._best_members

    def _find_best(self) -> None:
        self._best = self.by_answer.peekitem(-1) if self.by_answer else None
        classes = self.part.classes if self.part is not None else {}
        self._best_members = [classes[key] for key in self._best[1]] if self._best is not None else []
        self._best_known = True
