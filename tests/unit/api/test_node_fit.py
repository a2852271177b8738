"""NodeInfo's fit checks: what a request fits now, later, and after an eviction."""

from __future__ import annotations

import random
from collections.abc import Callable

from volcanolib.api.node import NodeInfo
from volcanolib.api.task import TaskInfo
from volcanolib.api.task import TaskStatus as S
from volcanolib.testing import build_node, build_task


def test_fit_after_evicting_one_victim_is_the_fit_after_the_eviction() -> None:
    rng = random.Random(5)
    for trial in range(200):
        node = build_node("n1", "16", "64Gi", scalars={"nvidia.com/gpu": "8"})
        tasks = []
        for i in range(rng.randint(1, 6)):
            status = rng.choice([S.RUNNING, S.RUNNING, S.RELEASING, S.PIPELINED])
            gpu = {"nvidia.com/gpu": str(rng.randint(0, 2))} if rng.random() < 0.5 else None
            task = build_task(
                f"t{trial}-{i}",
                node="n1",
                cpu=f"{rng.randint(1, 4000)}m",
                memory=f"{rng.randint(1, 12)}Gi",
                scalars=gpu,
                status=status,
            )
            node.add_task(task)
            tasks.append(task)
        gpu = {"nvidia.com/gpu": str(rng.randint(0, 4))} if rng.random() < 0.5 else None
        preemptor = build_task(
            f"p{trial}", cpu=f"{rng.randint(1, 8000)}m", memory=f"{rng.randint(1, 24)}Gi", scalars=gpu
        )
        for victim in (t for t in tasks if t.status is S.RUNNING):
            predicted = node.first_insufficient(preemptor.init_resreq, victim.resreq) is None
            victim.status = S.RELEASING
            node.update_task(victim)
            assert predicted is node.fits_future_idle(preemptor.init_resreq)
            victim.status = S.RUNNING
            node.update_task(victim)


def test_fit_after_releasing_many_is_the_fit_after_evicting_them() -> None:
    rng = random.Random(11)
    for trial in range(200):
        node = build_node("n1", "16", "64Gi", scalars={"nvidia.com/gpu": "8"})
        running = _place_random_tasks(
            node, rng, trial, rng.randint(1, 6), [S.RUNNING], lambda: f"{rng.randint(1, 12)}Gi", gpu(rng)
        )
        preemptor = build_task(f"p{trial}", cpu=f"{rng.randint(1, 12000)}m", memory=f"{rng.randint(1, 40)}Gi")
        victims = rng.sample(running, rng.randint(0, len(running)))
        predicted = node.fits_future_idle_without(preemptor.init_resreq, (v.resreq for v in victims))
        for victim in victims:
            victim.status = S.RELEASING
            node.update_task(victim)
        assert predicted is node.fits_future_idle(preemptor.init_resreq)
        short = node.first_insufficient(preemptor.init_resreq)
        assert (short is None) is predicted
        if short is not None:
            assert short in ("cpu", "memory")


def test_fit_after_releasing_many_is_the_request_against_the_summed_future_idle() -> None:
    # Fractional amounts and scalars present on only some sides: the answer is the one the sum itself gives.
    rng = random.Random(17)
    names = ["nvidia.com/gpu", "example.com/fpga", "hugepages-2Mi"]

    def amounts() -> dict[str, str] | None:
        picked = [n for n in names if rng.random() < 0.4]
        return {n: f"{rng.randint(0, 3000)}m" for n in picked} or None

    for trial in range(300):
        node = build_node("n1", "16", "64Gi", scalars={n: "8" for n in names if rng.random() < 0.6})
        statuses = [S.RUNNING, S.RELEASING, S.PIPELINED]
        tasks = _place_random_tasks(
            node, rng, trial, rng.randint(0, 6), statuses, lambda: f"{rng.randint(1, 12000)}Mi", amounts
        )
        request = build_task(
            f"p{trial}", cpu=f"{rng.randint(1, 12000)}m", memory=f"{rng.randint(1, 40000)}Mi", scalars=amounts()
        ).init_resreq
        released = [t.resreq for t in rng.sample(tasks, rng.randint(0, len(tasks)))]
        future = node.future_idle()
        for r in released:
            future.add(r)
        assert node.fits_future_idle_without(request, iter(released)) is request.less_equal(future)


def gpu(rng: random.Random) -> Callable[[], dict[str, str] | None]:
    """Half the tasks ask for 0 to 2 GPUs."""
    return lambda: {"nvidia.com/gpu": str(rng.randint(0, 2))} if rng.random() < 0.5 else None


def _place_random_tasks(
    node: NodeInfo,
    rng: random.Random,
    trial: int,
    count: int,
    statuses: list[S],
    memory: Callable[[], str],
    scalars: Callable[[], dict[str, str] | None],
) -> list[TaskInfo]:
    """``count`` tasks of random requests and one of ``statuses`` each, placed on ``node``."""
    tasks = []
    for i in range(count):
        task = build_task(
            f"t{trial}-{i}",
            node=node.name,
            cpu=f"{rng.randint(1, 4000)}m",
            memory=memory(),
            scalars=scalars(),
            status=rng.choice(statuses),
        )
        node.add_task(task)
        tasks.append(task)
    return tasks
