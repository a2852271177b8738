"""The ``expect`` block of a scenario, and comparing a simulation with it.

Every key is optional; only the keys present are checked:

``binds``
    ``{pod: node}``, the complete set of binds: a bind not listed is a difference.
``bindCount``
    how many binds happened (when the node may vary).
``evictions``
    ``[pod, ...]``, the complete set of evictions.
``evictCount``
    how many evictions happened.
``podGroupPhases``
    ``{podgroup: phase}`` at the end of the scenario: the phase the last
    session wrote, carried one step (``Unknown`` included; see
    :mod:`volcanolib.sim.runner` for what "the end" means).
``pipelined``
    ``{pod: node}`` or ``{pod: [node, ...]}``: the pod must be pipelined at
    the end of the last session, on that node or on any of those nodes.
``podGroupAllocated``
    ``{podgroup: {cpu: "2", memory: 2Gi}}``: what the group holds at the end,
    compared on the listed dimensions and on any other dimension the group
    holds (``pods`` only when listed).
``nodeScores``
    ``{pod: {node: score}}``: the sum of the enabled node-order hooks for a
    pod (usually a pending one), taken when the first session is open,
    before any action.
``nodeScoreTolerance``
    the absolute tolerance of ``nodeScores`` (default ``1e-6``).

Pods and PodGroups are named ``namespace/name``.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from volcanolib.api.job import PodGroupPhase
from volcanolib.api.resource import MIN_RESOURCE, PODS, Resource
from volcanolib.errors import ManifestError, QuantityError

if TYPE_CHECKING:
    from volcanolib.sim.runner import SimulationResult

__all__ = ["EXPECT_KEYS", "Expectation", "compare", "parse_expect"]

#: The keys an ``expect`` block may have.
EXPECT_KEYS: Final = (
    "binds",
    "bindCount",
    "evictions",
    "evictCount",
    "podGroupPhases",
    "pipelined",
    "podGroupAllocated",
    "nodeScores",
    "nodeScoreTolerance",
)
DEFAULT_SCORE_TOLERANCE: Final = 1e-6


@attrs.frozen
class Expectation:
    """A parsed ``expect`` block; ``None`` means "not checked"."""

    binds: Mapping[str, str] | None = None
    bind_count: int | None = None
    evictions: frozenset[str] | None = None
    evict_count: int | None = None
    pod_group_phases: Mapping[str, PodGroupPhase] | None = None
    pipelined: Mapping[str, tuple[str, ...]] | None = None
    #: Per group: the expected resources and the dimensions that were listed.
    pod_group_allocated: Mapping[str, tuple[Resource, frozenset[str]]] | None = None
    node_scores: Mapping[str, Mapping[str, float]] | None = None
    node_score_tolerance: float = DEFAULT_SCORE_TOLERANCE

    def is_empty(self) -> bool:
        """Whether nothing is checked."""
        return all(
            v is None
            for v in (
                self.binds,
                self.bind_count,
                self.evictions,
                self.evict_count,
                self.pod_group_phases,
                self.pipelined,
                self.pod_group_allocated,
                self.node_scores,
            )
        )


class _Parser:
    def __init__(self, source: str | None, block: str = "expect") -> None:
        self.source = source
        self.block = block

    def fail(self, message: str, field: str) -> ManifestError:
        return ManifestError(message, source=self.source, obj=self.block, field=field)

    def mapping(self, value: Any, field: str) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(f"expected a mapping, got {value!r}", field)
        return {str(k): v for k, v in value.items()}

    def name(self, value: Any, field: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(f"expected a name, got {value!r}", field)
        return value

    def count(self, value: Any, field: str) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(f"expected a count (an integer, 0 or more), got {value!r}", field)
        return value

    def number(self, value: Any, field: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(f"expected a number, got {value!r}", field)
        try:
            return float(value)
        except OverflowError:  # an integer too large for a float
            raise self.fail("expected a number, got an integer too large", field) from None


def parse_expect(data: Any, *, source: str | None = None, block_name: str = "expect") -> Expectation:
    """Parse an ``expect`` block (or a ``volcano`` block, which has the same keys).

    :raises ManifestError: naming the block and key, for an unknown key or a value of the wrong shape.
    """
    p = _Parser(source, block_name)
    block = p.mapping(data, block_name)
    for key in block:
        if key not in EXPECT_KEYS:
            close = difflib.get_close_matches(key, EXPECT_KEYS, n=1, cutoff=0.5)
            hint = f" (did you mean {close[0]!r}?)" if close else f"; known keys: {', '.join(EXPECT_KEYS)}"
            raise p.fail(f"unknown key {key!r}{hint}", key)

    binds = None
    if "binds" in block:
        binds = {pod: p.name(node, f"binds.{pod}") for pod, node in p.mapping(block["binds"], "binds").items()}
    evictions = None
    if "evictions" in block:
        raw = block["evictions"] if block["evictions"] is not None else []
        if not isinstance(raw, list):
            raise p.fail(f"expected a list of pods, got {raw!r}", "evictions")
        evictions = frozenset(p.name(pod, f"evictions[{i}]") for i, pod in enumerate(raw))
    phases = None
    if "podGroupPhases" in block:
        phases = {}
        for pg, phase in p.mapping(block["podGroupPhases"], "podGroupPhases").items():
            try:
                phases[pg] = PodGroupPhase(phase)
            except ValueError:
                names = ", ".join(ph.value for ph in PodGroupPhase)
                raise p.fail(f"unknown phase {phase!r} (expected one of {names})", f"podGroupPhases.{pg}") from None
    pipelined = None
    if "pipelined" in block:
        pipelined = {}
        for pod, nodes in p.mapping(block["pipelined"], "pipelined").items():
            field = f"pipelined.{pod}"
            if isinstance(nodes, list):
                if not nodes:
                    raise p.fail("expected a node or a non-empty list of nodes", field)
                pipelined[pod] = tuple(p.name(n, f"{field}[{i}]") for i, n in enumerate(nodes))
            else:
                pipelined[pod] = (p.name(nodes, field),)
    allocated = None
    if "podGroupAllocated" in block:
        allocated = {}
        for pg, resources in p.mapping(block["podGroupAllocated"], "podGroupAllocated").items():
            field = f"podGroupAllocated.{pg}"
            listed = p.mapping(resources, field)
            try:
                allocated[pg] = (Resource.from_list(listed, field=field), frozenset(listed))
            except QuantityError as exc:
                raise ManifestError(exc.message, source=source, obj=block_name, field=exc.field) from None
    scores = None
    if "nodeScores" in block:
        scores = {}
        for pod, per_node in p.mapping(block["nodeScores"], "nodeScores").items():
            scores[pod] = {
                node: p.number(score, f"nodeScores.{pod}.{node}")
                for node, score in p.mapping(per_node, f"nodeScores.{pod}").items()
            }
    tolerance = DEFAULT_SCORE_TOLERANCE
    if block.get("nodeScoreTolerance") is not None:
        tolerance = p.number(block["nodeScoreTolerance"], "nodeScoreTolerance")
        if tolerance < 0:
            raise p.fail("must not be negative", "nodeScoreTolerance")
    return Expectation(
        binds=binds,
        bind_count=p.count(block.get("bindCount"), "bindCount"),
        evictions=evictions,
        evict_count=p.count(block.get("evictCount"), "evictCount"),
        pod_group_phases=phases,
        pipelined=pipelined,
        pod_group_allocated=allocated,
        node_scores=scores,
        node_score_tolerance=tolerance,
    )


def _or(nodes: Sequence[str]) -> str:
    return nodes[0] if len(nodes) == 1 else " or ".join([", ".join(nodes[:-1]), nodes[-1]])


def _score(value: float) -> str:
    return f"{value:g}"


def _dimension(name: str, value: float) -> str:
    shown = Resource().set(name, value).to_quantities().get(name)
    return shown if shown is not None else _score(value)


def compare(expect: Expectation, result: SimulationResult) -> list[str]:
    """Compare a simulation with an expectation; return the differences as readable lines.

    An empty list means the simulation matches.
    """
    out: list[str] = []
    if expect.binds is not None:
        for pod, node in sorted(expect.binds.items()):
            got = result.binds.get(pod)
            if got is None:
                out.append(f"binds: {pod} expected on {node}, not bound")
            elif got != node:
                out.append(f"binds: {pod} expected on {node}, bound to {got}")
        for pod, got in sorted(result.binds.items()):
            if pod not in expect.binds:
                out.append(f"binds: {pod} bound to {got}, not expected")
    if expect.bind_count is not None and expect.bind_count != len(result.binds):
        out.append(f"bindCount: expected {expect.bind_count}, got {len(result.binds)}")
    if expect.evictions is not None:
        evicted = set(result.evictions)
        for pod in sorted(expect.evictions - evicted):
            out.append(f"evictions: {pod} expected, not evicted")
        for pod in sorted(evicted - expect.evictions):
            out.append(f"evictions: {pod} evicted, not expected")
    if expect.evict_count is not None and expect.evict_count != len(result.evictions):
        out.append(f"evictCount: expected {expect.evict_count}, got {len(result.evictions)}")
    if expect.pod_group_phases is not None:
        for pg, phase in sorted(expect.pod_group_phases.items()):
            report = result.pod_groups.get(pg)
            if report is None:
                out.append(f"podGroupPhases: {pg} expected {phase}, no such PodGroup")
            elif report.phase is not phase:
                out.append(f"podGroupPhases: {pg} expected {phase}, got {report.phase}")
    if expect.pipelined is not None:
        for pod, nodes in sorted(expect.pipelined.items()):
            got = result.pipelined.get(pod)
            if got is None:
                out.append(f"pipelined: {pod} expected on {_or(nodes)}, not pipelined")
            elif got not in nodes:
                out.append(f"pipelined: {pod} expected on {_or(nodes)}, pipelined on {got}")
    if expect.pod_group_allocated is not None:
        for pg, (want, listed) in sorted(expect.pod_group_allocated.items()):
            report = result.pod_groups.get(pg)
            if report is None:
                out.append(f"podGroupAllocated: {pg}: no such PodGroup")
                continue
            have = report.allocated
            names = set(listed)
            names.update(n for n in have.names() if n != PODS)
            for name in sorted(names):
                w, h = want.get(name), have.get(name)
                if abs(w - h) >= MIN_RESOURCE:
                    out.append(
                        f"podGroupAllocated: {pg} {name} expected {_dimension(name, w)}, got {_dimension(name, h)}"
                    )
    if expect.node_scores is not None:
        tol = expect.node_score_tolerance
        for pod, per_node in sorted(expect.node_scores.items()):
            got_scores = result.node_scores.get(pod)
            if got_scores is None:
                out.append(f"nodeScores: {pod} is not a pod of any job in the first session")
                continue
            for node, want_score in sorted(per_node.items()):
                got_score = got_scores.get(node)
                if got_score is None:
                    out.append(f"nodeScores: {pod} on {node}: no such node in the session")
                elif abs(got_score - want_score) > tol:
                    out.append(
                        f"nodeScores: {pod} on {node} expected {_score(want_score)}, got {_score(got_score)}"
                        f" (tolerance {_score(tol)})"
                    )
    return out
