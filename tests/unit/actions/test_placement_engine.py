"""The placement engine answers as a plain node-by-node check does.

Random clusters from ``test_node_classes`` (node shapes, labels, taints,
running and releasing pods; gangs with selectors, tolerations, preferred
affinity, host ports, images) with the default plugins. Each pending task is
asked about in turn and then placed, so the engine's indexes are asked again
after nodes changed. Feasible nodes, the chosen node, the reasons when no
node fits, and preempt's node order are compared with a check of every node
through the session's plain per-node predicate and scores.
"""

from __future__ import annotations

import pytest
from test_node_classes import CONF, random_cluster

from volcanolib.api.fiterrors import FitErrors, insufficient
from volcanolib.api.node import NodeInfo
from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.framework.placement import PredicateCache
from volcanolib.framework.session import Session
from volcanolib.testing import open_session


def _plain_feasible(ssn: Session, task: TaskInfo) -> list[NodeInfo]:
    req = task.init_resreq
    return [n for n in ssn.node_list if n.fits_future_idle(req) and ssn.predicate(task, n).ok]


def _plain_reasons(ssn: Session, task: TaskInfo) -> dict[str, tuple[str, ...]]:
    reasons: dict[str, tuple[str, ...]] = {}
    for node in ssn.node_list:
        short = node.first_insufficient(task.init_resreq)
        if short is not None:
            reasons[node.name] = (insufficient(short),)
            continue
        status = ssn.predicate(task, node)
        if not status.ok:
            reasons[node.name] = tuple(status.reasons or (status.plugin or "",))
    return reasons


def _plain_best(ssn: Session, task: TaskInfo, feasible: list[NodeInfo]) -> set[str]:
    group = [n for n in feasible if n.fits_idle(task.init_resreq)] or feasible
    scores = ssn.node_scores(task, group)
    top = max(scores.values())
    return {name for name, score in scores.items() if score == top}


def _pending(ssn: Session) -> list[TaskInfo]:
    return sorted(
        (t for job in ssn.jobs.values() for t in job.tasks_in(TaskStatus.PENDING) if not t.best_effort),
        key=lambda t: t.key,
    )


@pytest.mark.parametrize("seed", range(40))
def test_choice_and_reasons_match_a_plain_check(seed: int) -> None:
    ssn = open_session(random_cluster(seed), CONF.format(actions="allocate", enabled="true"), seed=seed)
    placement = ssn.placement
    asked = placed = 0
    for task in _pending(ssn):
        plain = _plain_feasible(ssn, task)
        engine = placement.feasible(task, resource_check=True)
        assert [n.name for n in engine] == [n.name for n in plain]
        # The class path and the node path draw the same node from the same generator state.
        state = ssn.rng.getstate()
        by_class = placement.choose(task, PredicateCache(False), node_classes=True)
        ssn.rng.setstate(state)
        by_node = placement.choose(task, PredicateCache(False), node_classes=False)
        asked += 1
        if not plain:
            assert isinstance(by_class, FitErrors) and isinstance(by_node, FitErrors)
            expected = _plain_reasons(ssn, task)
            for errors in (by_class, by_node):
                assert {name: tuple(err.reasons) for name, err in errors.nodes.items()} == expected
            continue
        assert isinstance(by_class, NodeInfo) and isinstance(by_node, NodeInfo)
        assert by_class is by_node
        assert by_class.name in _plain_best(ssn, task, plain)
        stmt = ssn.statement()
        if by_class.fits_idle(task.init_resreq):
            stmt.allocate(task, by_class)
        else:
            stmt.pipeline(task, by_class.name)
        placed += 1
    ssn.close()
    assert asked >= 1


def test_the_comparison_places_tasks_and_finds_unfit_ones() -> None:
    # The comparison above means something only if tasks get placed and some fit nowhere.
    placed = unfit = 0
    for seed in range(20):
        ssn = open_session(random_cluster(seed), CONF.format(actions="allocate", enabled="true"), seed=seed)
        for task in _pending(ssn):
            chosen = ssn.placement.choose(task, PredicateCache(False))
            if isinstance(chosen, NodeInfo):
                placed += 1
                stmt = ssn.statement()
                if chosen.fits_idle(task.init_resreq):
                    stmt.allocate(task, chosen)
                else:
                    stmt.pipeline(task, chosen.name)
            else:
                unfit += 1
        ssn.close()
    assert placed > 20 and unfit > 5


@pytest.mark.parametrize("seed", range(30))
def test_preemption_order_matches_a_plain_check(seed: int) -> None:
    ssn = open_session(random_cluster(seed), CONF.format(actions="allocate", enabled="true"), seed=seed)
    placement = ssn.placement

    def running(task: TaskInfo) -> bool:
        return task.status in (TaskStatus.RUNNING, TaskStatus.BOUND) and task.preemptable

    holding = placement.victim_nodes(running)
    for task in _pending(ssn):
        passed = ssn.predicate_nodes(task, ssn.node_list, for_preempt=True)
        scores = ssn.node_scores(task, passed)
        plain = sorted(passed, key=lambda n: -scores[n.name])
        by_node = list(placement.preemption_order(task, PredicateCache(False), holding, node_classes=False))
        assert [n.name for n in by_node] == [n.name for n in plain]
        # Classes leave out nodes where nothing can be evicted and the task does not fit as it is.
        useful = [n.name for n in plain if n.fits_future_idle(task.init_resreq) or any(map(running, n.tasks.values()))]
        by_class = list(placement.preemption_order(task, PredicateCache(False), holding, node_classes=True))
        assert [n.name for n in by_class] == useful
    ssn.close()


def test_a_full_batch_reaches_plugins_as_the_node_list() -> None:
    ssn = open_session(random_cluster(3), CONF.format(actions="allocate", enabled="true"), seed=3)
    seen: list[bool] = []
    original = ssn.predicate_nodes

    def spy(task: TaskInfo, nodes: list[NodeInfo], **kwargs: object) -> list[NodeInfo]:
        seen.append(nodes is ssn.node_list)
        return original(task, nodes, **kwargs)  # type: ignore[arg-type]

    ssn.predicate_nodes = spy  # type: ignore[method-assign]
    task = _pending(ssn)[0]
    ssn.placement.feasible(task)
    ssn.placement.feasible(task, ssn.node_list[:1])
    assert seen == [True, False]
    ssn.close()


@pytest.mark.parametrize("seed", range(20))
def test_passes_answers_and_caches_as_feasible_over_one_node(seed: int) -> None:
    # Reclaim's one-node check is feasible's one-node path written out: same answer, same cached failures.
    ssn = open_session(random_cluster(seed), CONF.format(actions="allocate", enabled="true"), seed=seed)
    placement = ssn.placement
    for task in _pending(ssn):
        # A role per job, so that failures are cached and reused between its tasks.
        task.role = "worker"
        task.template = f"{task.job}/worker"
    answers = []
    cached = 0
    for for_preempt in (True, False):
        for enabled in (True, False):
            by_feasible, by_passes = PredicateCache(enabled), PredicateCache(enabled)
            for task in _pending(ssn):
                for node in ssn.node_list:
                    expected = bool(placement.feasible(task, [node], cache=by_feasible, for_preempt=for_preempt))
                    assert placement.passes(task, node, by_passes, for_preempt=for_preempt) == expected
                    answers.append(expected)
            assert {k: {n: e.reasons for n, e in v.items()} for k, v in by_passes._failed.items()} == {
                k: {n: e.reasons for n, e in v.items()} for k, v in by_feasible._failed.items()
            }
            cached += sum(len(v) for v in by_passes._failed.values())
    assert any(answers) and not all(answers)
    assert cached
    ssn.close()
