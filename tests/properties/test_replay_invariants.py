"""Replay invariants over random workloads, checked from the pod and job records alone.

A workload is a few nodes, bare pods and Volcano Jobs (gangs, some with a
``PodEvicted -> RestartJob`` policy) arriving over a few minutes with random
requests, priorities, durations, exit codes and patience, replayed under a
configuration with or without preemption. From the records alone:

* no node ever holds more than its allocatable;
* no pod is bound before it is submitted, nor before the job was submitted,
  nor without enough pods of its job placed with it to satisfy the gang;
* every pod attempt is accounted for, with a phase that agrees with its times;
* runtimes are honoured (and the exit code decides Succeeded or Failed);
* the same seed gives the same JSON, and skipping sessions changes nothing.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from volcanolib.replay import ReplayOptions, ReplayRecord, run_replay
from volcanolib.replay.inputs import Workload, load_objects
from volcanolib.replay.metrics import summarise, to_json

#: Admission lets in up to ten times the cluster, so that high-priority pods are admitted and preempt.
OVERCOMMIT = {"name": "overcommit", "arguments": {"overcommit-factor": 10.0}}
PREEMPT = {
    "actions": "enqueue, allocate, preempt, backfill",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {"plugins": [OVERCOMMIT, {"name": "drf"}, {"name": "predicates"}, {"name": "nodeorder"}]},
    ],
}
PLAIN = {
    "actions": "enqueue, allocate, backfill",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}]},
        {"plugins": [{"name": "drf"}, {"name": "predicates"}, {"name": "proportion"}, {"name": "nodeorder"}]},
    ],
}
CPUS = (1, 2, 3, 4, 6)
GIB = 2**30


def _stamp(seconds: int) -> str:
    return f"1970-01-01T{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}Z"


def _container(cpu: int, mem: int) -> list[dict[str, Any]]:
    return [{"name": "c", "resources": {"requests": {"cpu": str(cpu), "memory": f"{mem}Gi"}}}]


@st.composite
def workloads(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Objects of a random workload, and what each pod should do (by name prefix)."""
    objects: list[dict[str, Any]] = []
    for i in range(draw(st.integers(1, 3))):
        cpu, mem = draw(st.sampled_from([(4, 8), (8, 16), (6, 8)]))
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"n{i}"},
                "status": {"allocatable": {"cpu": str(cpu), "memory": f"{mem}Gi", "pods": "110"}},
            }
        )
    for name, value in (("low", 1), ("high", 100)):
        objects.append(
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
        )
    expected: dict[str, Any] = {}
    for i in range(draw(st.integers(0, 6))):
        at = draw(st.integers(0, 300))
        duration = draw(st.one_of(st.none(), st.integers(1, 240)))
        exit_code = draw(st.sampled_from([0, 0, 0, 2]))
        annotations = {"volcanolib.io/exit-code": str(exit_code)}
        if duration is not None:
            annotations["volcanolib.io/duration"] = f"{duration}s"
        if draw(st.booleans()):
            annotations["volcanolib.io/cancel-after"] = f"{draw(st.integers(1, 200))}s"
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"bare{i}",
                    "namespace": "ns",
                    "creationTimestamp": _stamp(at),
                    "annotations": annotations,
                },
                "spec": {
                    "schedulerName": "volcano",
                    "priorityClassName": draw(st.sampled_from(["low", "high"])),
                    "containers": _container(draw(st.sampled_from(CPUS)), draw(st.integers(1, 4))),
                },
            }
        )
        expected[f"ns/bare{i}"] = {"arrival": float(at), "duration": duration, "exit": exit_code, "bare": True}
    for j in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, 300))
        tasks = []
        total_min = 0
        for t in range(draw(st.integers(1, 2))):
            replicas = draw(st.integers(1, 4))
            task_min = draw(st.sampled_from([1, 1, replicas]))
            total_min += task_min
            duration = draw(st.integers(5, 300))
            exit_code = draw(st.sampled_from([0, 0, 1]))
            tasks.append(
                {
                    "name": f"t{t}",
                    "replicas": replicas,
                    "minAvailable": task_min,
                    "template": {
                        "metadata": {
                            "annotations": {
                                "volcanolib.io/duration": f"{duration}s",
                                "volcanolib.io/exit-code": str(exit_code),
                            }
                        },
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": _container(draw(st.sampled_from(CPUS[:3])), draw(st.integers(1, 3))),
                        },
                    },
                }
            )
            expected[f"ns/job{j}-t{t}-"] = {
                "arrival": float(at),
                "duration": duration,
                "exit": exit_code,
                "bare": False,
            }
        spec: dict[str, Any] = {
            "schedulerName": "volcano",
            "minAvailable": total_min,
            "priorityClassName": draw(st.sampled_from(["low", "low", "high"])),
            "tasks": tasks,
        }
        if draw(st.booleans()):
            spec["policies"] = [{"event": "PodEvicted", "action": "RestartJob"}]
        meta: dict[str, Any] = {"name": f"job{j}", "namespace": "ns", "creationTimestamp": _stamp(at)}
        if draw(st.booleans()):
            meta["annotations"] = {"volcanolib.io/cancel-after": f"{draw(st.integers(10, 300))}s"}
        objects.append({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": meta, "spec": spec})
    if draw(st.booleans()):
        # A high-priority rush of bare pods, late enough to find the cluster busy: preempt makes room.
        for k in range(draw(st.integers(1, 3))):
            at = draw(st.integers(30, 400))
            duration = draw(st.integers(1, 120))
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"rush{k}",
                        "namespace": "ns",
                        "creationTimestamp": _stamp(at),
                        "annotations": {"volcanolib.io/duration": f"{duration}s"},
                    },
                    "spec": {"schedulerName": "volcano", "priorityClassName": "high", "containers": _container(3, 2)},
                }
            )
            expected[f"ns/rush{k}"] = {"arrival": float(at), "duration": duration, "exit": 0, "bare": True}
    options = {
        "period": draw(st.sampled_from([1.0, 2.5, 7.0])),
        "pod_startup": draw(st.sampled_from([0.0, 3.0])),
        "termination_grace": draw(st.sampled_from([0.0, 10.0])),
        "until": 900.0,
        "seed": draw(st.integers(0, 3)),
    }
    return objects, {"expected": expected, "options": options, "preempt": draw(st.booleans())}


def _replay(objects: list[dict[str, Any]], info: dict[str, Any], **extra: Any) -> tuple[Workload, ReplayRecord]:
    workload = load_objects(objects, source="random")
    config = PREEMPT if info["preempt"] else PLAIN
    from volcanolib.framework.config import parse_config

    record = run_replay(workload, parse_config(config), ReplayOptions(**{**info["options"], **extra}))
    return workload, record


def _document(record: ReplayRecord) -> str:
    doc = summarise(record)
    doc.pop("timings")
    return to_json(doc)


def _expectation(name: str, expected: dict[str, Any]) -> dict[str, Any]:
    if name in expected:
        return expected[name]  # type: ignore[no-any-return]
    prefix = name.rsplit("-", 1)[0] + "-"
    return expected[prefix]  # type: ignore[no-any-return]


def _check_capacity(objects: list[dict[str, Any]], record: ReplayRecord) -> None:
    capacity = {}
    for obj in objects:
        if obj["kind"] == "Node":
            alloc = obj["status"]["allocatable"]
            capacity[obj["metadata"]["name"]] = {
                "cpu": float(alloc["cpu"]),
                "memory": float(alloc["memory"][:-2]) * GIB,
            }
    changes: dict[str, list[tuple[float, int, dict[str, float]]]] = defaultdict(list)
    for pod in record.pods:
        if pod.bound is None:
            continue
        assert pod.node in capacity, pod
        end = pod.finished if pod.finished is not None else record.end
        changes[pod.node].append((pod.bound, 1, pod.request))
        changes[pod.node].append((end, 0, pod.request))  # at one time, releases come before binds
    for name, items in changes.items():
        used = {"cpu": 0.0, "memory": 0.0}
        for _, sign, request in sorted(items, key=lambda item: (item[0], item[1])):
            for resource in used:
                used[resource] += request.get(resource, 0.0) * (1 if sign else -1)
                assert used[resource] <= capacity[name][resource] + 1e-6, (name, resource, used, items)


def _check_pods(workload: Workload, record: ReplayRecord, info: dict[str, Any]) -> None:
    expected = info["expected"]
    options = info["options"]
    seen_bare: dict[str, int] = defaultdict(int)
    jobs = {job.name: job for job in record.jobs}
    for pod in record.pods:
        want = _expectation(pod.name, expected)
        assert pod.submitted >= want["arrival"]
        assert pod.job in jobs
        assert jobs[pod.job].submitted <= pod.submitted
        if want["bare"]:
            seen_bare[pod.name] += 1
        if pod.bound is not None:
            assert pod.bound >= pod.submitted
        if pod.started is not None:
            assert pod.bound is not None
            assert abs(pod.started - (pod.bound + options["pod_startup"])) < 1e-6
        if pod.phase in ("Succeeded", "Failed"):
            assert pod.started is not None and pod.finished is not None
            assert want["duration"] is not None
            assert abs(pod.finished - pod.started - want["duration"]) < 1e-6
            assert (pod.phase == "Failed") == (want["exit"] != 0)
        elif pod.phase in ("Evicted", "Deleted"):
            assert pod.finished is not None and pod.finished >= pod.submitted
            if pod.started is not None and want["duration"] is not None:
                assert pod.finished <= pod.started + want["duration"] + options["termination_grace"] + 1e-6
        elif pod.phase == "Running":
            assert pod.started is not None and pod.finished is None
            if want["duration"] is not None:
                assert pod.started + want["duration"] >= record.end
        else:
            assert pod.phase == "Pending", pod
            assert pod.started is None and pod.finished is None
        if pod.finished is not None:
            assert pod.finished <= record.end
    # Every bare pod has exactly one record (nothing recreates it).
    for name, want in expected.items():
        if want["bare"]:
            assert seen_bare[name] == 1, name
    # A pod is bound only with enough of its job's pods placed (or done) for its gang.
    by_job: dict[str, list[Any]] = defaultdict(list)
    for pod in record.pods:
        by_job[pod.job].append(pod)
    for name, pods in by_job.items():
        need = jobs[name].min_available
        for pod in pods:
            if pod.bound is None:
                continue
            t = pod.bound
            ready = sum(
                1
                for other in pods
                if other.bound is not None
                and other.bound <= t
                # A pod gone at t may have been evicted by the session that bound this one, after the bind.
                and (other.finished is None or other.finished >= t or other.phase == "Succeeded")
            )
            assert ready >= need, (name, t, need, pods)


@settings(max_examples=40, deadline=None)
@given(workloads())
def test_replay_invariants(case: tuple[list[dict[str, Any]], dict[str, Any]]) -> None:
    objects, info = case
    workload, record = _replay(objects, info)
    _check_capacity(objects, record)
    _check_pods(workload, record, info)
    assert record.end <= record.start + info["options"]["until"]
    # Same seed, same JSON.
    assert _document(_replay(objects, info)[1]) == _document(record)


@settings(max_examples=15, deadline=None)
@given(workloads())
def test_skipping_sessions_changes_nothing(case: tuple[list[dict[str, Any]], dict[str, Any]]) -> None:
    objects, info = case
    _, skipped = _replay(objects, info)
    _, every = _replay(objects, info, every_period=True)
    assert _document(skipped) == _document(every)
