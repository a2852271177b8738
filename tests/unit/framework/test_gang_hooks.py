"""The rules of ``unified_evictable`` (intersection per tier) and ``victim_tasks`` (union per tier)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from volcanolib import hookimpl
from volcanolib.api.task import TaskInfo
from volcanolib.framework.registry import Registry
from volcanolib.framework.session import Session
from volcanolib.framework.victims import EvictionContext, EvictionKind
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, open_session


def _chooser(name: str) -> type[Any]:
    """A plugin class answering both hooks with the tasks named in its ``pick`` argument ("abstain": None)."""

    class Chooser:
        seen: ClassVar[list[EvictionContext]] = []

        def __init__(self, arguments: Any) -> None:
            self.pick = arguments.get("pick", "abstain")

        def _answer(self, tasks: Sequence[TaskInfo]) -> list[TaskInfo] | None:
            if self.pick == "abstain":
                return None
            return [t for t in tasks if t.name in self.pick]

        @hookimpl
        def unified_evictable(
            self, context: EvictionContext, candidates: Sequence[TaskInfo]
        ) -> Sequence[TaskInfo] | None:
            Chooser.seen.append(context)
            return self._answer(candidates)

        @hookimpl
        def victim_tasks(self, tasks: Sequence[TaskInfo]) -> Sequence[TaskInfo] | None:
            return self._answer(tasks)

    Chooser.__name__ = Chooser.__qualname__ = f"Chooser_{name}"
    return Chooser


REGISTRY = Registry(plugins={name: _chooser(name) for name in ("a", "b", "c")})


def _session(*tiers: list[tuple[str, Any]], extra: str = "") -> tuple[Session, list[TaskInfo]]:
    cache = FakeCache()
    cache.add_node(build_node("n0", "8", "8Gi"))
    cache.add_pod_group(build_pod_group("j"))
    for i in range(3):
        cache.add_task(build_task(f"t{i}", job="j", cpu="1", node="n0"))
    lines = ["actions: ''", "tiers:"]
    for tier in tiers:
        lines.append("- plugins:")
        for name, pick in tier:
            lines.append(f"  - name: {name}")
            lines.append(f"    arguments: {{pick: {pick!r}}}")
            if extra:
                lines.append(f"    {extra}")
    ssn = open_session(cache, "\n".join(lines) + "\n", registry=REGISTRY)
    tasks = sorted(ssn.jobs["default/j"].tasks.values(), key=lambda t: t.name)
    return ssn, tasks


def _names(tasks: Sequence[TaskInfo] | None) -> list[str] | None:
    return None if tasks is None else [t.name for t in tasks]


def _context(ssn: Session) -> EvictionContext:
    return EvictionContext(EvictionKind.GANG_RECLAIM, ssn.jobs["default/j"], "d1")


def test_unified_evictable_intersects_within_a_tier_and_passes_the_context() -> None:
    ssn, tasks = _session([("a", ["t0", "t1"]), ("b", ["t1", "t2"])])
    context = _context(ssn)
    assert _names(ssn.unified_evictable(context, tasks)) == ["t1"]
    seen = REGISTRY.plugin_class("a").seen
    assert seen[-1] is context and seen[-1].domain == "d1"


def test_unified_evictable_abstention_is_skipped_and_an_empty_tier_falls_through() -> None:
    ssn, tasks = _session([("a", "abstain"), ("b", [])], [("c", ["t2"])])
    assert _names(ssn.unified_evictable(_context(ssn), tasks)) == ["t2"]


def test_unified_evictable_without_any_opinion_is_none() -> None:
    ssn, tasks = _session([("a", "abstain")])
    assert ssn.unified_evictable(_context(ssn), tasks) is None


def test_victim_tasks_joins_a_tier_and_the_first_naming_tier_decides() -> None:
    ssn, tasks = _session([("a", ["t2"]), ("b", ["t0", "t2"])], [("c", ["t1"])])
    assert _names(ssn.victim_tasks(tasks)) == ["t2", "t0"]


def test_victim_tasks_falls_through_a_tier_naming_nothing() -> None:
    ssn, tasks = _session([("a", "abstain"), ("b", [])], [("c", ["t1"])])
    assert _names(ssn.victim_tasks(tasks)) == ["t1"]
    ssn, tasks = _session([("a", "abstain")])
    assert ssn.victim_tasks(tasks) == []


def test_victim_tasks_is_gated_by_enabled_victim() -> None:
    ssn, tasks = _session([("a", ["t0"])], extra="enabledVictim: false")
    assert ssn.victim_tasks(tasks) == []
