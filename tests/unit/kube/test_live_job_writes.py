"""The live job controller's writes: a reaction's pod creations go out together, failures still count."""

from __future__ import annotations

import threading
from typing import Any

from volcanolib.kube.live._client import ApiError
from volcanolib.kube.live.controllers._api import Store, Writer
from volcanolib.kube.live.controllers.job import PARALLEL_WRITES, LiveJobController

REPLICAS = 6


class _Api:
    """Answers every request; pod creations wait at a barrier that only ``REPLICAS`` requests in flight pass."""

    def __init__(self, refuse: str = "") -> None:
        self.refuse = refuse
        self.barrier = threading.Barrier(REPLICAS, timeout=5)
        self.lock = threading.Lock()
        self.created: list[str] = []

    def request(self, method: str, path: str, body: Any = None, content_type: str | None = None) -> Any:
        if method == "POST" and path.endswith("/pods"):
            name = body["metadata"]["name"]
            self.barrier.wait()  # BrokenBarrierError unless all of the job's pods are in flight at once
            if name == self.refuse:
                raise ApiError(500, f"POST {path}: refused")
            with self.lock:
                self.created.append(name)
        return body if method == "POST" else {}


class _Recorder:
    def record(self, *args: Any) -> bool:
        return True


def _job() -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "tf", "namespace": "ns", "uid": "u1"},
        "spec": {
            "minAvailable": REPLICAS,
            "schedulerName": "volcano",
            "queue": "default",
            "tasks": [{"name": "worker", "replicas": REPLICAS, "template": template}],
        },
    }


def _controller(api: _Api) -> LiveJobController:
    stores = {
        kind: Store(kind, lambda *a: None) for kind in ("Job", "Pod", "PodGroup", "Queue", "Command", "PriorityClass")
    }
    for store in stores.values():
        store.replace([])
    stores["Queue"].replace([{"metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}}])
    return LiveJobController(Writer(api), stores, _Recorder(), lambda: 1000.0)  # type: ignore[arg-type]


def _admit(controller: LiveJobController) -> None:
    """The Job arrives, then the scheduler moves its PodGroup to Inqueue (pods are made only then)."""
    controller.on_job("ADDED", _job(), None)
    group = {"metadata": {"name": "tf-u1", "namespace": "ns"}, "status": {"phase": "Inqueue"}}
    controller.on_pod_group("MODIFIED", group, None)


def test_a_jobs_pods_are_created_together() -> None:
    assert REPLICAS <= PARALLEL_WRITES
    api = _Api()
    controller = _controller(api)
    try:
        _admit(controller)
    finally:
        controller.close()
    assert sorted(api.created) == [f"tf-worker-{i}" for i in range(REPLICAS)]
    assert controller.writer.counts["create"] == REPLICAS + 1  # the PodGroup, then the pods


def test_a_pod_not_created_is_made_again_at_the_next_sync() -> None:
    api = _Api(refuse="tf-worker-3")
    controller = _controller(api)
    try:
        _admit(controller)
        assert "tf-worker-3" not in api.created and len(api.created) == REPLICAS - 1
        due = controller.next_due()
        assert due is not None  # the job is synced again after a back-off
        api.refuse = ""
        api.barrier = threading.Barrier(1)
        controller.clock = lambda: due
        controller.tick()
    finally:
        controller.close()
    assert sorted(api.created) == [f"tf-worker-{i}" for i in range(REPLICAS)]
