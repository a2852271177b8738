"""The live cache decides as an embedded cache loaded with the same objects does, cycle after cycle."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml
from conftest_helpers import eventually, settle
from kube_api import KubeApiServer, make_node, make_pod, make_podgroup, make_queue

from volcanolib.api.task import TaskStatus
from volcanolib.kube.live.cache import KubernetesCache
from volcanolib.kube.loader import load_manifests
from volcanolib.scheduler import Scheduler

KINDS = ("priorityclasses", "queues", "nodes", "podgroups", "pods")


def _embedded_binds(server: KubeApiServer, path: Path, seed: int) -> list[tuple[str, str]]:
    """The binds of one cycle on an embedded cache loaded with the server's objects as they are now."""
    objects = [obj for kind in KINDS for obj in server.list_objects(kind)]
    path.write_text(yaml.safe_dump_all(objects))
    scheduler = Scheduler(load_manifests([path]).to_cache())
    result = scheduler.run_once(seed=seed)
    return sorted((task.key, node) for task, node in result.binds)


def _arrive(server: KubeApiServer, wave: int, groups: int, size: int, cpu: str, queue: str) -> None:
    for g in range(groups):
        name = f"w{wave}-{queue}-{g}"
        server.create("podgroups", make_podgroup(name, min_member=size, queue=queue))
        for i in range(size):
            server.create("pods", make_pod(f"{name}-{i}", cpu=cpu, memory="1Gi", group=name))


def test_cycles_run_holding_decide_as_an_embedded_cache_on_the_same_objects(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache], tmp_path: Path
) -> None:
    server.create("queues", make_queue("q2", weight=2))
    for i in range(8):
        server.create("nodes", make_node(f"n{i}", cpu=str(4 + 2 * (i % 3)), memory="32Gi"))
    _arrive(server, 0, 3, 4, "1", "default")
    _arrive(server, 0, 2, 3, "2", "q2")
    cache = make_cache()
    scheduler = Scheduler(cache)
    decided = []
    for wave in range(1, 5):
        settle(server, cache)
        running = {p["metadata"]["uid"] for p in server.list_objects("pods") if p["status"].get("phase") == "Running"}
        eventually(
            lambda running=running: {t.uid for t in cache.tasks() if t.status is TaskStatus.RUNNING} == running,
            what="the cache to see the pods running",
        )
        seed = 100 + wave
        expected = _embedded_binds(server, tmp_path / f"wave{wave}.yaml", seed)
        with cache.holding():
            result = scheduler.run_once(seed=seed)
        assert cache.flush(10)
        binds = sorted((task.key, node) for task, node in result.binds)
        assert binds == expected, f"cycle {wave}"
        decided.append(len(binds))
        # More arrive, some too big for what is left; the bound pods start.
        for pod in server.list_objects("pods"):
            if pod["spec"].get("nodeName") and pod["status"].get("phase") == "Pending":
                server.set_pod_phase(pod["metadata"]["name"], "Running")
        _arrive(server, wave, 2, 3, "1", "default")
        _arrive(server, wave, 1, 2, "3", "q2")
    # The cycles placed pods until the cluster was full, so the comparison compared something.
    assert all(decided[:3]) and decided[3] == 0
