"""Plugins for volcanolib's tests, shipped as a separate installed distribution.

``Scripted`` answers every hook as its arguments say, so one class registered
under several entry-point names can populate several tiers:

- ``order``: ``"name"`` / ``"name-desc"`` (compare jobs by name), absent: no opinion.
- ``fail``: node names whose predicate fails (Unschedulable);
  ``unresolvable``: node names that fail as Unschedulable-and-unresolvable.
- ``scores``: node name -> score.
- ``victims``: task names to accept, ``"none"`` for an empty list; absent: abstain.
- ``victimPriority``: ``victim_tasks`` names the tasks of this priority; absent: abstain.
- ``vote``: ``permit`` / ``reject`` / ``abstain`` for pipelined and enqueueable.
- ``ready``, ``starving``, ``overused``, ``allocatable``, ``valid``: booleans.
- ``raiseIn``: the name of a hook that raises RuntimeError.

Every call is appended to ``Scripted.calls`` as ``(plugin name, hook)``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from volcanolib import Arguments, Status, Vote, hookimpl


class Scripted:
    name: ClassVar[str] = "scripted"
    calls: ClassVar[list[tuple[str, str]]] = []

    def __init__(self, arguments: Arguments) -> None:
        self.args = dict(arguments)
        self.label = str(self.args.get("label", "scripted"))

    def _enter(self, hook: str) -> None:
        Scripted.calls.append((self.label, hook))
        if self.args.get("raiseIn") == hook:
            raise RuntimeError(f"{self.label} fails in {hook}")

    def _cmp(self, left: Any, right: Any) -> int:
        order = self.args.get("order")
        if order is None:
            return 0
        ln, rn = left.name, right.name
        result = (ln > rn) - (ln < rn)
        return -result if order == "name-desc" else result

    def _key(self, item: Any) -> Any:
        order = self.args.get("order")
        if order is None:
            return 0
        if order == "name-desc":
            return tuple(-ord(c) for c in item.name)
        return item.name

    @hookimpl
    def on_session_open(self, ssn: Any) -> None:
        self._enter("on_session_open")

    @hookimpl
    def job_order(self, ssn: Any, left: Any, right: Any) -> int:
        self._enter("job_order")
        return self._cmp(left, right)

    @hookimpl
    def predicate(self, ssn: Any, task: Any, node: Any) -> Status:
        self._enter("predicate")
        if node.name in self.args.get("unresolvable", ()):
            return Status.unresolvable(f"{self.label} refuses {node.name}")
        if node.name in self.args.get("fail", ()):
            return Status.unschedulable(f"{self.label} refuses {node.name}")
        return Status.success()

    @hookimpl
    def node_order(self, task: Any, node: Any) -> float:
        return float(self.args.get("scores", {}).get(node.name, 0))

    def _victims(self, hook: str, candidates: Any) -> Any:
        self._enter(hook)
        spec = self.args.get("victims")
        if spec is None:
            return None
        if spec == "none":
            return []
        return [t for t in candidates if t.name in spec]

    @hookimpl
    def preemptable(self, preemptor: Any, preemptees: Any) -> Any:
        return self._victims("preemptable", preemptees)

    @hookimpl
    def reclaimable(self, reclaimer: Any, reclaimees: Any) -> Any:
        return self._victims("reclaimable", reclaimees)

    @hookimpl
    def victim_tasks(self, tasks: Any) -> Any:
        self._enter("victim_tasks")
        wanted = self.args.get("victimPriority")
        if wanted is None:
            return None
        return [t for t in tasks if t.priority == wanted]

    def _vote(self, hook: str) -> Vote:
        self._enter(hook)
        return {"permit": Vote.PERMIT, "reject": Vote.REJECT}.get(str(self.args.get("vote")), Vote.ABSTAIN)

    @hookimpl
    def job_pipelined(self, job: Any) -> Vote:
        return self._vote("job_pipelined")

    @hookimpl
    def job_enqueueable(self, job: Any) -> Vote:
        return self._vote("job_enqueueable")

    @hookimpl
    def job_ready(self, job: Any) -> bool:
        self._enter("job_ready")
        return bool(self.args.get("ready", True))

    @hookimpl
    def job_starving(self, job: Any) -> bool:
        self._enter("job_starving")
        return bool(self.args.get("starving", True))

    @hookimpl
    def overused(self, queue: Any) -> bool:
        self._enter("overused")
        return bool(self.args.get("overused", False))

    @hookimpl
    def allocatable(self, queue: Any, task: Any) -> bool:
        self._enter("allocatable")
        return bool(self.args.get("allocatable", True))

    @hookimpl
    def job_valid(self, job: Any) -> Status:
        self._enter("job_valid")
        if self.args.get("valid", True):
            return Status.success()
        return Status.unschedulable("NotValid", f"{self.label} says no")


class Keyed(Scripted):
    """Orders jobs through ``job_order_key`` only (the fast form)."""

    name: ClassVar[str] = "keyed"

    @hookimpl
    def job_order_key(self, job: Any) -> Any:
        return self._key(job)

    job_order = None  # type: ignore[assignment]


class BatchScored:
    """Scores nodes through ``batch_node_order`` only: ``scores`` maps node name -> score."""

    name: ClassVar[str] = "batch-scored"

    def __init__(self, arguments: Arguments) -> None:
        self.scores = dict(arguments.get("scores") or {})

    @hookimpl
    def batch_node_order(self, task: Any, nodes: Any) -> dict[str, float]:
        return {n.name: float(self.scores[n.name]) for n in nodes if n.name in self.scores}


class BadHook:
    """Declares an implementation of a hook that does not exist."""

    name: ClassVar[str] = "badhook"

    def __init__(self, arguments: Arguments) -> None:
        pass

    @hookimpl
    def job_ordr(self, ssn: Any, left: Any, right: Any) -> int:
        return 0


class TryFirst:
    """Asks pluggy for tryfirst on a tiered hook, which volcanolib refuses."""

    name: ClassVar[str] = "ordered-first"

    def __init__(self, arguments: Arguments) -> None:
        pass

    @hookimpl(tryfirst=True)
    def job_order(self, ssn: Any, left: Any, right: Any) -> int:
        return 0
