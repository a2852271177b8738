"""Binding through the stand-in API server: gangs, failures, retries, eviction."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conftest_helpers import cycle, eventually, settle
from kube_api import KubeApiServer, make_node, make_pod, make_podgroup

from volcanolib.api.task import TaskStatus
from volcanolib.errors import CacheError
from volcanolib.kube.live.cache import KubernetesCache
from volcanolib.scheduler import Scheduler


def bind_posts(server: KubeApiServer, name: str) -> list[int]:
    """Status codes of the binding requests made for one pod."""
    return [code for method, path, code in server.requests("POST", f"/pods/{name}/binding")]


def test_a_gang_of_three_binds_together_and_one_that_cannot_fit_binds_none(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    for i in range(3):
        server.create("nodes", make_node(f"n{i}", cpu="2", memory="8Gi"))
    server.create("podgroups", make_podgroup("fits", min_member=3))
    server.create("podgroups", make_podgroup("too-big", min_member=3))
    for i in range(3):
        server.create("pods", make_pod(f"fits-{i}", cpu="1", group="fits"))
    for i in range(3):
        # Only one node at a time has room for a 2-cpu pod once the first gang is placed.
        server.create("pods", make_pod(f"big-{i}", cpu="2", group="too-big"))
    cache = make_cache()
    result = cycle(Scheduler(cache), cache)

    assert sorted(t.name for t, _ in result.binds) == ["fits-0", "fits-1", "fits-2"]
    pods = {p["metadata"]["name"]: p for p in server.list("pods")}
    assert all(pods[f"fits-{i}"]["spec"].get("nodeName") for i in range(3))
    assert not any(pods[f"big-{i}"]["spec"].get("nodeName") for i in range(3))
    for i in range(3):
        assert bind_posts(server, f"fits-{i}") == [201]
        assert bind_posts(server, f"big-{i}") == []
    # The waiting gang's pods say why, and its PodGroup carries the gang's verdict.
    for i in range(3):
        conds = [c for c in pods[f"big-{i}"]["status"].get("conditions", []) if c["type"] == "PodScheduled"]
        assert [(c["status"], c["reason"]) for c in conds] == [("False", "Unschedulable")]
    waiting = server.get("podgroups", "too-big")["status"]
    assert [c["type"] for c in waiting["conditions"]] == ["Unschedulable"]
    settle(server, cache)
    assert cache.consistency_problems() == []


def test_a_failed_bind_returns_the_task_to_pending_and_it_binds_next_cycle(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.create("nodes", make_node("n0"))
    server.create("pods", make_pod("p"))
    cache = make_cache()
    scheduler = Scheduler(cache)
    server.fail_next_binds(1, 500)
    cycle(scheduler, cache)

    uid = server.get("pods", "p")["metadata"]["uid"]
    task = cache.get_task(uid)
    assert task is not None and task.status is TaskStatus.PENDING and task.node_name == ""
    assert [e.reason for e in cache.events if e.object == "Pod default/p"][-1] == "FailedBinding"
    conds = eventually(lambda: server.get("pods", "p")["status"].get("conditions"), what="the pod's condition")
    assert [(c["type"], c["status"], c["reason"]) for c in conds] == [("PodScheduled", "False", "SchedulerError")]

    result = cycle(scheduler, cache)
    assert [(t.name, node) for t, node in result.binds] == [("p", "n0")]
    assert server.get("pods", "p")["spec"]["nodeName"] == "n0"
    assert bind_posts(server, "p") == [500, 201]
    settle(server, cache)
    # Bound now: later cycles never bind it again.
    cycle(scheduler, cache)
    assert bind_posts(server, "p") == [500, 201]


def test_a_pod_bound_elsewhere_meanwhile_is_never_bound_twice(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.create("nodes", make_node("n0"))
    server.create("nodes", make_node("n1"))
    server.create("pods", make_pod("p"))
    cache = make_cache()
    # Another binder wins the race: the cache still holds the pod Pending when the cycle runs.
    server.delay(0.5, 1, method="GET", resource="pods")
    with cache.lock:
        server.bind("p", "n1")
        result = Scheduler(cache).run_once()
    assert cache.flush(10)
    assert len(result.binds) == 1
    assert bind_posts(server, "p") == [409]
    settle(server, cache)
    task = cache.get_task(server.get("pods", "p")["metadata"]["uid"])
    assert task is not None and task.node_name == "n1" and task.status is TaskStatus.BOUND
    assert cache.consistency_problems() == []


def test_a_pod_without_a_pod_group_gets_the_group_volcano_would_give_it(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.create("nodes", make_node("n0"))
    pod = server.create("pods", make_pod("lone"))
    cache = make_cache()
    group = f"default/podgroup-{pod['metadata']['uid']}"
    assert group in cache.shadow_groups
    result = cycle(Scheduler(cache), cache)
    assert [t.name for t, _ in result.binds] == ["lone"]
    # The group lives in memory only: nothing is written for it.
    assert server.list("podgroups") == []
    assert server.requests("PATCH", "/podgroups/") == []


def test_another_schedulers_pod_counts_only_once_bound(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.create("nodes", make_node("n0", cpu="2"))
    server.create("pods", make_pod("theirs", cpu="2", scheduler_name="default-scheduler"))
    cache = make_cache()
    assert cache.tasks() == []
    server.bind("theirs", "n0")
    eventually(lambda: cache.tasks(), what="the bound foreign pod")
    (task,) = cache.tasks()
    assert task.job == "" and task.node_name == "n0"
    server.create("pods", make_pod("ours", cpu="1"))
    settle(server, cache)
    result = cycle(Scheduler(cache), cache)
    assert result.binds == ()  # the node is full with the other scheduler's pod


def _running_pod(server: KubeApiServer, name: str, labels: dict[str, str] | None = None) -> None:
    server.create("pods", make_pod(name, node_name="n0", phase="Running", labels=labels))


def test_eviction_as_volcano_does_it_marks_and_deletes_the_pod(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.create("nodes", make_node("n0"))
    _running_pod(server, "victim")
    cache = make_cache()
    (task,) = cache.tasks()
    cache.evict(task, "preempt")
    assert cache.get_task(task.uid).status is TaskStatus.RELEASING  # type: ignore[union-attr]
    pod = server.find("pods", "victim")
    if pod is not None:  # still terminating
        assert pod["metadata"].get("deletionTimestamp")
        kinds = {c["type"]: c["reason"] for c in pod["status"]["conditions"]}
        assert kinds["DisruptionTarget"] == "PreemptionByScheduler" and kinds["Ready"] == "Evict"
    eventually(lambda: cache.get_task(task.uid) is None, what="the evicted pod to go")


def test_a_view_of_the_victim_from_before_its_eviction_does_not_bring_it_back(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.create("nodes", make_node("n0"))
    _running_pod(server, "victim")
    cache = make_cache()
    (task,) = cache.tasks()
    before = server.find("pods", "victim")
    assert before is not None
    cache.evict(task, "preempt")
    # The watch may deliver a version from before the deletion after the eviction returned.
    stale = {**before, "metadata": {**before["metadata"], "resourceVersion": "999999"}}
    cache.pods.apply(stale)
    assert cache.get_task(task.uid).status is TaskStatus.RELEASING  # type: ignore[union-attr]
    eventually(lambda: cache.get_task(task.uid) is None, what="the evicted pod to go")


def test_the_eviction_api_refusal_keeps_the_victim_and_is_reported(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.create("nodes", make_node("n0"))
    _running_pod(server, "guarded", labels={"app": "db"})
    server.create(
        "poddisruptionbudgets",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "db"}}},
        },
    )
    cache = make_cache(eviction_api=True)
    (task,) = cache.tasks()
    with pytest.raises(CacheError, match="PodDisruptionBudget"):
        cache.evict(task, "reclaim")
    assert cache.get_task(task.uid).status is TaskStatus.RUNNING  # type: ignore[union-attr]
    assert cache.evictions_refused == 1
    assert server.get("pods", "guarded")["metadata"].get("deletionTimestamp") is None
    assert [e.reason for e in cache.events][-1] == "FailedEviction"


def test_a_pod_group_of_another_schedulers_pods_is_left_to_that_scheduler(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.create("nodes", make_node("n0", pods="20"))
    server.create("podgroups", make_podgroup("theirs", min_member=1))
    server.create("podgroups", make_podgroup("ours", min_member=1))
    server.create("pods", make_pod("theirs-0", group="theirs", scheduler_name="volcano"))
    server.create("pods", make_pod("ours-0", group="ours", scheduler_name="volcanolib"))
    cache = make_cache(scheduler_names=["volcanolib"])
    scheduler = Scheduler(cache)
    result = cycle(scheduler, cache)
    assert [t.name for t, _ in result.binds] == ["ours-0"]
    assert "default/theirs" not in cache.pod_group_keys()
    cycle(scheduler, cache)
    assert server.requests("PATCH", "/podgroups/theirs") == []
    assert server.requests("PATCH", "/podgroups/ours")
    # Once no pod of the other scheduler names it, the group is this scheduler's.
    server.delete("pods", "theirs-0", grace_period=0)
    server.create("pods", make_pod("theirs-1", group="theirs", scheduler_name="volcanolib"))
    eventually(lambda: "default/theirs" in cache.pod_group_keys(), what="the group to be ours")
    settle(server, cache)
    result = cycle(scheduler, cache)
    assert [t.name for t, _ in result.binds] == ["theirs-1"]


def test_priority_classes_order_the_jobs(server: KubeApiServer, make_cache: Callable[..., KubernetesCache]) -> None:
    server.create("nodes", make_node("n0", cpu="1"))
    server.create(
        "priorityclasses",
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
    )
    low = make_podgroup("low", min_member=1)
    high = make_podgroup("high", min_member=1)
    high["spec"]["priorityClassName"] = "high"
    server.create("podgroups", low)
    server.create("podgroups", high)
    server.create("pods", make_pod("low-0", cpu="1", group="low"))
    server.create("pods", make_pod("high-0", cpu="1", group="high", priority_class="high"))
    cache = make_cache()
    result = cycle(Scheduler(cache), cache)
    assert [t.name for t, _ in result.binds] == ["high-0"]


def test_binds_and_events_of_a_cycle_run_while_holding_are_sent_once_the_cycle_is_over(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.create("nodes", make_node("n0"))
    server.create("podgroups", make_podgroup("g", min_member=2))
    for i in range(2):
        server.create("pods", make_pod(f"g-{i}", group="g"))
    cache = make_cache()
    scheduler = Scheduler(cache)
    with cache.holding():
        result = scheduler.run_once()
        assert sorted(t.name for t, _ in result.binds) == ["g-0", "g-1"]
        # Assumed at once, as ever; nothing sent yet.
        assumed = [cache.get_task(t.uid) for t, _ in result.binds]
        assert [(t.status, t.node_name) for t in assumed if t is not None] == [(TaskStatus.BOUND, "n0")] * 2
        assert not cache.flush(0.2)
        assert server.requests("POST") == [] and server.requests("PATCH") == []
    assert cache.flush(10)
    for i in range(2):
        assert bind_posts(server, f"g-{i}") == [201]
        assert server.get("pods", f"g-{i}")["spec"]["nodeName"] == "n0"
    assert len(server.requests("POST", "/events")) >= 2  # each pod's Scheduled event
    settle(server, cache)
    assert cache.consistency_problems() == []
