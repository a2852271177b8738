"""Queue totals written at session close equal the sum of every allocated task's request.

The session takes a queue's ``allocated`` from its jobs' kept totals, or,
in a scheduler's sessions, from per-queue sums kept from the previous
session and updated for the jobs that changed, where that gives the same
result as adding the tasks one by one: the same values and the same scalar
keys (a job's total can keep a key at zero once its GPU tasks left, which
the per-task sum would not have), written in name order. These tests
compare it with the per-task sum, written out here, after tasks moved in
and out of allocated statuses through statements, over several sessions.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prop_clusters import CONF, GPU, REGISTRY, ClusterSpec, build, clusters, random_operations

from volcanolib import InMemoryCache, Resource, Scheduler, Session, TaskStatus
from volcanolib.api.task import ALLOCATED_STATUSES
from volcanolib.framework.config import parse_config
from volcanolib.testing import build_node, build_pod_group, build_task, open_session

FPGA = "example.com/fpga"
#: Requests of the mixed job's tasks: no scalar but pods, one, two in either order.
MIXED: tuple[dict[str, str], ...] = ({}, {GPU: "1"}, {GPU: "2", FPGA: "1"}, {FPGA: "1", GPU: "1"}, {FPGA: "2"})


def per_task_totals(ssn: Session) -> dict[str, tuple[object, ...]]:
    """Every queue's allocated requests, task by task, each added to its queue and the queue's ancestors."""
    allocated = {name: Resource() for name in ssn.queues}
    for job in ssn.jobs.values():
        if job.queue not in allocated:
            continue
        for task in job.tasks_in(ALLOCATED_STATUSES):
            name: str | None = job.queue
            seen = set()
            while name is not None and name in allocated and name not in seen:
                seen.add(name)
                allocated[name].add(task.resreq)
                parent = ssn.queues[name].parent
                name = parent if parent is not None else ("root" if name != "root" else None)
    return {name: _exact(res, ordered=True) for name, res in allocated.items()}


def _exact(res: Resource, *, ordered: bool = False) -> tuple[object, ...]:
    """A resource with its scalar keys in order (in name order: ``ordered``) and its values' types."""
    items = sorted(res.scalars.items()) if ordered else list(res.scalars.items())
    return (
        (type(res.milli_cpu), res.milli_cpu),
        (type(res.memory), res.memory),
        [(k, type(v), v) for k, v in items],
    )


def build_mixed(spec: ClusterSpec, sizes: tuple[int, ...], running: int) -> InMemoryCache:
    """The random cluster plus a node with GPUs and FPGAs and jobs whose tasks request different scalars."""
    cache = build(spec)
    cache.add_node(build_node("big", cpu="64", memory="256Gi", pods=64, scalars={GPU: "8", FPGA: "8"}))
    for j, size in enumerate(sizes):
        name = f"mixed{j}"
        cache.add_pod_group(build_pod_group(name, queue=("q1", "q2")[j % 2], min_member=1, phase="Running"))
        for t in range(size):
            scalars = MIXED[(j + t) % len(MIXED)]
            node = "big" if t < running else ""
            cache.add_task(build_task(f"{name}-{t}", job=name, cpu="500m", memory="1Gi", scalars=scalars, node=node))
    return cache


def churn(ssn: Session, data: st.DataObject) -> None:
    """Allocate, pipeline and evict random tasks through statements, committing or discarding each."""
    for _ in range(data.draw(st.integers(1, 4))):
        stmt = ssn.statement()
        random_operations(ssn, stmt, data, frozenset({TaskStatus.RUNNING, TaskStatus.ALLOCATED}))
        if data.draw(st.booleans()):
            stmt.commit()
        else:
            stmt.discard()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spec=clusters,
    sizes=st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple),
    running=st.integers(0, 6),
    kept=st.booleans(),
    data=st.data(),
)
def test_queue_totals_equal_the_per_task_sum_key_for_key(
    spec: ClusterSpec, sizes: tuple[int, ...], running: int, kept: bool, data: st.DataObject
) -> None:
    cache = build_mixed(spec, sizes, running)
    # kept: one scheduler's sessions, each following the previous one (per-queue sums kept between them);
    # idle nodes keep the changed ones under half, so that a session may take the previous one's delta.
    if kept:
        for n in range(40):
            cache.add_node(build_node(f"idle{n}", cpu="1", memory="1Gi"))
    scheduler = Scheduler(cache, parse_config(CONF), registry=REGISTRY)
    for _ in range(3):
        if kept:
            ssn = scheduler.new_session()
            ssn.open()
        else:
            ssn = open_session(cache, CONF, registry=REGISTRY)
        churn(ssn, data)
        want = per_task_totals(ssn)
        ssn.close()
        assert {name: _exact(q.allocated) for name, q in ssn.queues.items()} == want
        cache.finish_evictions()
        cache.start_bound_tasks()


def test_zeros_left_in_job_totals_and_their_order_of_scalars_stay_out_of_the_queue_total() -> None:
    cache = InMemoryCache()
    cache.add_node(build_node("n", cpu="16", memory="64Gi", scalars={GPU: "4", FPGA: "4"}))
    requests: dict[str, list[dict[str, str] | None]] = {
        "gone": [{GPU: "1"}],
        "idle": [None],
        "mix": [{FPGA: "1"}, {GPU: "1"}, {FPGA: "1"}],
    }
    for name, scalars in requests.items():
        cache.add_pod_group(build_pod_group(name, queue="default", min_member=1, phase="Running"))
        for t, req in enumerate(scalars):
            cache.add_task(build_task(f"{name}-{t}", job=name, scalars=req, node="n"))
    ssn = open_session(cache, CONF, registry=REGISTRY)
    jobs = {job.name: job for job in ssn.jobs.values()}
    stmt = ssn.statement()
    for uid in ("default-gone-0", "default-idle-0", "default-mix-0"):
        stmt.evict(jobs[uid.split("-")[1]].tasks[uid], "test")
    stmt.commit()
    # The jobs' totals keep zero keys, and mix's keeps fpga before the GPU its remaining tasks list after it.
    assert list(jobs["gone"].allocated.scalars.items()) == [(GPU, 0), ("pods", 0)]
    assert list(jobs["idle"].allocated.scalars.items()) == [("pods", 0)]
    assert list(jobs["mix"].allocated.scalars) == [FPGA, "pods", GPU]
    want = per_task_totals(ssn)
    ssn.close()
    got = ssn.queues["default"].allocated
    assert _exact(got) == want["default"]
    assert list(got.scalars.items()) == [(FPGA, 1000), (GPU, 1000), ("pods", 2)]
