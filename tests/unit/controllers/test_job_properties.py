"""Properties of the job controller over random jobs and random event sequences.

After every event: the counts the controller reports equal the pods that
exist; no pod is created while a pod of its name exists (alive or
terminating) nor before its PodGroup is admitted; every pod gets a uid never
used before and the job version of the moment; and the job phases move only
along the transitions of the reference's state machine (§5.1).

Note: a pod name may be created again under the same job version, because
Volcano does so (a deleted pod without a policy is recreated by the next
sync, §5.5 rule 5; targeted restarts keep the version, §5.6); what cannot
happen is a second pod of one name while the first exists.
"""

from __future__ import annotations

from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st
from job_harness import NS, Harness, job, task

from volcanolib.controllers import CreatePod, JobStatus
from volcanolib.controllers._lifecycle import ACTIONS as POLICY_ACTIONS

#: The transitions of §5.1 (the diagram and the state table); "" is a new job.
ALLOWED: dict[str, set[str]] = {
    "": {"Pending"},
    "Pending": {"Running", "Restarting", "Aborting", "Completing", "Terminating"},
    "Running": {"Pending", "Completed", "Failed", "Restarting", "Aborting", "Completing", "Terminating"},
    "Restarting": {"Pending", "Failed"},
    "Aborting": {"Aborted", "Restarting"},
    "Aborted": {"Restarting"},
    "Completing": {"Completed"},
    "Terminating": {"Terminated"},
    "Completed": set(),
    "Failed": set(),
    "Terminated": set(),
}

EVENTS = ["PodFailed", "PodEvicted", "PodPending", "TaskCompleted", "Unknown", "*"]
ACTIONS = sorted(POLICY_ACTIONS)


@st.composite
def policies(draw: st.DrawFn) -> list[dict[str, Any]]:
    events = draw(st.lists(st.sampled_from(EVENTS), max_size=3, unique=True))
    if "*" in events:
        events = ["*"]
    out: list[dict[str, Any]] = []
    for name in events:
        policy: dict[str, Any] = {"event": name, "action": draw(st.sampled_from(ACTIONS))}
        timeout = draw(st.sampled_from([None, None, 5, 30]))
        if timeout is not None:
            policy["timeout"] = f"{timeout}s"
        out.append(policy)
    if draw(st.booleans()):
        out.append({"exitCode": draw(st.integers(1, 3)), "action": draw(st.sampled_from(ACTIONS))})
    return out


@st.composite
def jobs(draw: st.DrawFn, name: str) -> dict[str, Any]:
    n_tasks = draw(st.integers(1, 2))
    tasks = []
    for i in range(n_tasks):
        replicas = draw(st.integers(1, 3))
        extra: dict[str, Any] = {"policies": draw(policies())}
        if draw(st.booleans()):
            extra["minAvailable"] = draw(st.integers(0, replicas))
        if i == 1 and draw(st.booleans()):
            extra["dependsOn"] = {"name": ["t0"]}
        tasks.append(task(f"t{i}", replicas, **extra))
    total = sum(t["replicas"] for t in tasks)
    spec: dict[str, Any] = {"policies": draw(policies()), "maxRetry": draw(st.integers(1, 3))}
    if draw(st.booleans()):
        spec["minAvailable"] = draw(st.integers(1, total))
    if draw(st.booleans()):
        spec["minSuccess"] = draw(st.integers(1, total))
    manifest = job(name, *tasks, **spec)
    sum_task_min = sum(t.get("minAvailable", t["replicas"]) for t in tasks)
    if spec.get("minAvailable", sum_task_min) > total or (spec.get("minAvailable") is None and sum_task_min == 0):
        manifest["spec"]["minAvailable"] = 1
    return manifest


_ADMIT = st.tuples(st.just("admit"), st.integers(0, 2), st.sampled_from(["Inqueue", "Running", "Unknown", "Pending"]))
_RUN = st.tuples(st.just("run"), st.integers(0, 20))
OPS = st.one_of(
    _ADMIT,
    _ADMIT,
    _RUN,
    _RUN,
    _RUN,
    st.tuples(st.just("succeed"), st.integers(0, 20)),
    st.tuples(st.just("fail"), st.integers(0, 20), st.integers(1, 3)),
    st.tuples(st.just("evict"), st.integers(0, 20)),
    st.tuples(st.just("gone"), st.integers(0, 20)),
    st.tuples(st.just("tick"), st.sampled_from([1.0, 5.0, 30.0])),
    st.tuples(st.just("command"), st.integers(0, 2), st.sampled_from(["AbortJob", "ResumeJob", "RestartJob"])),
    st.tuples(st.just("delete"), st.integers(0, 2)),
)


_PHASES = ("Pending", "Running", "Succeeded", "Failed")


def _pick(names: list[str], i: int) -> str | None:
    return names[i % len(names)] if names else None


def _apply(h: Harness, names: list[str], op: tuple[Any, ...]) -> None:
    kind = op[0]
    if kind == "admit":
        groups = sorted(h.groups)
        group = _pick(groups, op[1])
        if group is not None:
            h.admit(group, op[2])
    elif kind == "run":
        pod = _pick([n for n in h.alive() if h.pods[n]["status"]["phase"] == "Pending"], op[1])
        if pod:
            h.phase(pod, "Running")
    elif kind in ("succeed", "fail"):
        pod = _pick([n for n in h.alive() if h.pods[n]["status"]["phase"] == "Running"], op[1])
        if pod:
            h.phase(pod, "Succeeded" if kind == "succeed" else "Failed", exit_code=op[2] if kind == "fail" else None)
    elif kind == "evict":
        pod = _pick([n for n in h.alive() if h.pods[n]["status"]["phase"] in ("Pending", "Running")], op[1])
        if pod:
            h.evict(pod)
    elif kind == "gone":
        pod = _pick(sorted(h.deleting), op[1])
        if pod:
            h.gone(pod)
    elif kind == "tick":
        h.tick(h.now + op[1])
    elif kind == "command":
        name = names[op[1] % len(names)]
        if not h.ctrl.job(NS, name).deleted:
            h.apply(h.ctrl.command(NS, name, op[2], now=h.now))
    elif kind == "delete":
        h.apply(h.ctrl.delete(NS, names[op[1] % len(names)], now=h.now))


def _check(h: Harness, names: list[str], seen_phases: dict[str, str], status_count: int) -> None:
    # phases move only along the reference's transitions
    for status in h.statuses[status_count:]:
        assert isinstance(status, JobStatus)
        before = seen_phases[status.name]
        if status.phase != before:
            assert status.phase in ALLOWED[before], f"{status.name}: {before} -> {status.phase}"
        seen_phases[status.name] = status.phase
    for name in names:
        state = h.ctrl.job(NS, name)
        assert state.phase == seen_phases[name]  # every phase change was reported
        mine = [n for n in h.pods if h.ctrl.owner_of(NS, n) == (NS, name)]
        alive = [n for n in mine if n not in h.deleting]
        counts = {ph: sum(1 for n in alive if h.pods[n]["status"]["phase"] == ph) for ph in _PHASES}
        assert (state.pending, state.running, state.succeeded, state.failed) == (
            counts["Pending"],
            counts["Running"],
            counts["Succeeded"],
            counts["Failed"],
        )
        assert state.terminating == len(mine) - len(alive)
        if state.deleted:
            assert not alive


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(0, 10**6), min_size=1, max_size=3).flatmap(
        lambda seeds: st.tuples(*[jobs(f"j{i}") for i in range(len(seeds))])
    ),
    st.lists(OPS, min_size=5, max_size=80),
)
def test_random_event_sequences_keep_the_controller_consistent(
    manifests: tuple[dict[str, Any], ...], ops: list[Any]
) -> None:
    h = Harness(grace=True)
    names = [m["metadata"]["name"] for m in manifests]
    for manifest in manifests:
        h.submit(manifest)
    seen = dict.fromkeys(names, "")
    count = 0
    _check(h, names, seen, count)
    for op in ops:
        count = len(h.statuses)
        _apply(h, names, op)
        _check(h, names, seen, count)
    for phase in sorted({s.phase for s in h.statuses}):
        event(f"reached {phase}")
    uids = [uid for _, _, uid in h.created]
    assert len(uids) == len(set(uids))
    # a pod's version stamp never goes back, name by name
    last: dict[str, int] = {}
    for change in h.log:
        if isinstance(change, CreatePod):
            meta = change.manifest["metadata"]
            version = int(meta["annotations"]["volcano.sh/job-version"])
            assert version >= last.get(meta["name"], 0)
            last[meta["name"]] = version
