"""``/metrics`` of ``volcanolib serve`` on a small cluster: Volcano's names, labels and values."""

from __future__ import annotations

import datetime
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest_helpers import eventually
from kube_api import KubeApiServer, make_node, make_pod, make_podgroup, make_queue
from prometheus_client.parser import text_string_to_metric_families

from volcanolib.kube.live import load_api
from volcanolib.kube.live.serve import Server

#: Every name of Volcano v1.14.1's scheduler metrics this adapter exports (docs/serve.md has the table).
VOLCANO_NAMES = {
    "volcano_e2e_scheduling_latency_milliseconds",
    "volcano_e2e_job_scheduling_latency_milliseconds",
    "volcano_e2e_job_scheduling_duration",
    "volcano_e2e_job_scheduling_start_time",
    "volcano_e2e_job_scheduling_last_time",
    "volcano_plugin_scheduling_latency_milliseconds",
    "volcano_action_scheduling_latency_milliseconds",
    "volcano_task_scheduling_latency_milliseconds",
    "volcano_schedule_attempts_total",
    "volcano_pod_preemption_victims",
    "volcano_total_preemption_attempts",
    "volcano_unschedule_task_count",
    "volcano_unschedule_job_count",
    "volcano_job_share",
    "volcano_job_retry_counts",
    "volcano_namespace_share",
    *(
        f"volcano_queue_{what}_{unit}"
        for what in ("allocated", "request", "deserved", "capacity", "real_capacity")
        for unit in ("milli_cpu", "memory_bytes", "scalar_resources")
    ),
    "volcano_queue_share",
    "volcano_queue_weight",
    "volcano_queue_overused",
}
GI = 1024**3


def _scrape(serve: Server) -> str:
    host, port = serve.http.server_address[:2]
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as answer:
        text: str = answer.read().decode()
    return text


def _samples(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Every sample, by the name the text gives it, then by its sorted labels.

    (The Python parser names a counter's samples ``..._total`` even when the
    text does not, as Volcano's ``volcano_job_retry_counts``.)
    """
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        exact = f"# TYPE {family.name} counter\n" in text
        for sample in family.samples:
            name = family.name if exact and sample.name == f"{family.name}_total" else sample.name
            out.setdefault(name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def _one(samples: dict[str, dict[tuple[tuple[str, str], ...], float]], name: str, **labels: str) -> float:
    return samples[name][tuple(sorted(labels.items()))]


@pytest.fixture
def served(server: KubeApiServer, kubeconfig: Path) -> Iterator[tuple[Server, KubeApiServer]]:
    """serve on a cluster of two 4-cpu nodes: queue q1 (weight 1) runs j1 and waits with j3, q2 (weight 3) runs j2."""
    server.create("queues", make_queue("q1", weight=1))
    server.create("queues", make_queue("q2", weight=3))
    for name in ("n0", "n1"):
        server.create("nodes", make_node(name, cpu="4", memory="16Gi", pods="10"))
    groups = {"j1": ("q1", 2, 2, "1"), "j2": ("q2", 1, 1, "1"), "j3": ("q1", 3, 3, "3")}
    for job, (queue, members, pods, cpu) in groups.items():
        group = make_podgroup(job, min_member=members)
        group["spec"]["queue"] = queue
        server.create("podgroups", group)
        for i in range(pods):
            server.create("pods", make_pod(f"{job}-{i}", cpu=cpu, memory="1Gi", group=job))
    serve = Server(load_api(str(kubeconfig)), period=0.05, metrics_address=("127.0.0.1", 0))
    stop = threading.Event()
    thread = threading.Thread(target=serve.run, args=(stop,), daemon=True)
    thread.start()
    try:
        bound = ["j1-0", "j1-1", "j2-0"]
        eventually(lambda: all(server.get("pods", n)["spec"].get("nodeName") for n in bound), what="the binds")
        eventually(lambda: serve.cycles > 3, what="cycles")
        yield serve, server
    finally:
        stop.set()
        thread.join(10)


def test_volcanos_names_are_exported_with_its_types(served: tuple[Server, KubeApiServer]) -> None:
    serve, _ = served
    text = _scrape(serve)
    families = {f.name: f.type for f in text_string_to_metric_families(text)}
    names = set(_samples(text))
    missing = {name for name in VOLCANO_NAMES if name not in names and f"{name}_count" not in names}
    # Capacity is reported by the capacity plugin (or a queue setting spec.capability), not by this cluster.
    assert missing == {
        "volcano_queue_capacity_milli_cpu",
        "volcano_queue_capacity_memory_bytes",
        "volcano_queue_capacity_scalar_resources",
    }
    # Counters under Volcano's own names, without a _total it does not have.
    assert "# TYPE volcano_job_retry_counts counter\n" in text
    assert "# TYPE volcano_total_preemption_attempts counter\nvolcano_total_preemption_attempts 0.0\n" in text
    assert "volcano_job_retry_counts_total" not in text
    assert families["volcano_task_scheduling_latency_milliseconds"] == "histogram"
    buckets = [le for ((key, le),) in _samples(text)["volcano_task_scheduling_latency_milliseconds_bucket"]]
    assert buckets[:3] == ["5.0", "10.0", "20.0"] and len(buckets) == 16  # Volcano's 5 ms doubling, 15 buckets


def test_queue_job_and_namespace_figures(served: tuple[Server, KubeApiServer]) -> None:
    serve, _ = served
    samples = _samples(_scrape(serve))
    # Allocated: what runs; request: that and what waits (j3: 3 pods of 3 cpu and 1Gi).
    assert _one(samples, "volcano_queue_allocated_milli_cpu", queue_name="q1") == 2000
    assert _one(samples, "volcano_queue_allocated_memory_bytes", queue_name="q1") == 2 * GI
    assert _one(samples, "volcano_queue_allocated_milli_cpu", queue_name="q2") == 1000
    assert _one(samples, "volcano_queue_request_milli_cpu", queue_name="q1") == 11000
    assert _one(samples, "volcano_queue_request_memory_bytes", queue_name="q1") == 5 * GI
    assert _one(samples, "volcano_queue_allocated_milli_cpu", queue_name="default") == 0  # no jobs: zeros
    # Deserved by weight (1 and 3) over 8 cpu: q2 needs only 1, q1 gets the remaining 7.
    assert _one(samples, "volcano_queue_deserved_milli_cpu", queue_name="q1") == 7000
    assert _one(samples, "volcano_queue_deserved_milli_cpu", queue_name="q2") == 1000
    assert _one(samples, "volcano_queue_deserved_memory_bytes", queue_name="q1") == 5 * GI
    assert _one(samples, "volcano_queue_weight", queue_name="q2") == 3
    assert _one(samples, "volcano_queue_share", queue_name="q1") == pytest.approx(0.4)  # 2Gi of 5Gi
    assert _one(samples, "volcano_queue_share", queue_name="q2") == 1.0
    assert _one(samples, "volcano_queue_overused", queue_name="q2") == 1
    assert _one(samples, "volcano_queue_overused", queue_name="q1") == 0
    assert _one(samples, "volcano_queue_real_capacity_milli_cpu", queue_name="q1") == 8000
    assert _one(samples, "volcano_queue_real_capacity_scalar_resources", queue_name="q1", resource="pods") == 20
    # drf: a job's dominant share of the cluster (8 cpu, 32Gi), and its namespace's.
    assert _one(samples, "volcano_job_share", job_ns="default", job_id="j1") == 0.25
    assert _one(samples, "volcano_job_share", job_ns="default", job_id="j2") == 0.125
    assert _one(samples, "volcano_job_share", job_ns="default", job_id="j3") == 0
    assert _one(samples, "volcano_namespace_share", namespace_name="default") == 0.375


def test_job_and_cycle_figures(served: tuple[Server, KubeApiServer]) -> None:
    serve, server = served
    samples = _samples(_scrape(serve))
    starts = samples["volcano_e2e_job_scheduling_start_time"]
    assert {dict(k)["job_name"]: (dict(k)["queue"], dict(k)["job_namespace"]) for k in starts} == {
        "j1": ("q1", "default"),
        "j2": ("q2", "default"),
        "j3": ("q1", "default"),
    }
    for key, value in starts.items():  # the PodGroup's creation, in unix seconds
        created = server.get("podgroups", dict(key)["job_name"])["metadata"]["creationTimestamp"]
        assert value == datetime.datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()
    placed = {dict(k)["job_name"] for k in samples["volcano_e2e_job_scheduling_duration"]}
    assert placed == {"j1", "j2"} == {dict(k)["job_name"] for k in samples["volcano_e2e_job_scheduling_last_time"]}
    assert _one(samples, "volcano_e2e_job_scheduling_latency_milliseconds_count") == 3  # one per task placed
    assert _one(samples, "volcano_task_scheduling_latency_milliseconds_count") == 3  # one per bind confirmed
    assert _one(samples, "volcano_schedule_attempts_total", result="scheduled") == 3
    unschedulable = _one(samples, "volcano_schedule_attempts_total", result="unschedulable")
    retries = _one(samples, "volcano_job_retry_counts", job_id="j3")
    assert retries >= 3 and unschedulable == 3 * retries  # j3's three pods, every cycle it waits
    assert _one(samples, "volcano_unschedule_job_count") == 1
    assert _one(samples, "volcano_unschedule_task_count", job_id="j3") == 3
    assert ("volcano_job_retry_counts" in samples) and set(samples["volcano_job_retry_counts"]) == {(("job_id", "j3"),)}
    assert _one(samples, "volcano_action_scheduling_latency_milliseconds_count", action="allocate") >= 3
    assert _one(
        samples, "volcano_plugin_scheduling_latency_milliseconds_count", plugin="drf", OnSession="OnSessionOpen"
    )
    assert _one(
        samples, "volcano_plugin_scheduling_latency_milliseconds_count", plugin="gang", OnSession="OnSessionClose"
    )
    assert _one(samples, "volcanolib_bound_pods_per_second") == pytest.approx(3 / 60)
    assert _one(samples, "volcanolib_binds_unresolved") == 0
    assert _one(samples, "volcanolib_bind_failures_total") == 0


def test_a_deleted_jobs_series_go_with_it(served: tuple[Server, KubeApiServer]) -> None:
    serve, server = served
    assert (("job_id", "j3"),) in _samples(_scrape(serve))["volcano_job_retry_counts"]
    for i in range(3):
        server.delete("pods", f"j3-{i}", grace_period=0)
    server.delete("podgroups", "j3")
    cycles = serve.cycles
    eventually(lambda: serve.cycles > cycles + 2, what="cycles without j3")
    samples = _samples(_scrape(serve))
    assert "volcano_job_retry_counts" not in samples
    assert "j3" not in {dict(k)["job_name"] for k in samples["volcano_e2e_job_scheduling_start_time"]}
    assert "volcano_unschedule_task_count" not in samples
    assert _one(samples, "volcano_unschedule_job_count") == 0
    assert {dict(k)["job_id"] for k in samples["volcano_job_share"]} == {"j1", "j2"}
