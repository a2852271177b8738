"""The stand-in API server seen through the official ``kubernetes`` Python client."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

kubernetes = pytest.importorskip("kubernetes", reason="the kube extra (pip install volcanolib[kube]) is not installed")
from kubernetes import client, watch  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402

from .bulk import make_node, make_pod, make_podgroup, make_queue  # noqa: E402
from .server import KubeApiServer  # noqa: E402

VOLCANO = ("scheduling.volcano.sh", "v1beta1")


@pytest.fixture
def api(kube_api: KubeApiServer) -> client.ApiClient:
    cfg = client.Configuration()
    cfg.host = kube_api.url
    with client.ApiClient(cfg) as api_client:
        yield api_client


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


def _status(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body


def _binding(pod: str, node: str, uid: str | None = None) -> client.V1Binding:
    return client.V1Binding(
        metadata=client.V1ObjectMeta(name=pod, uid=uid),
        target=client.V1ObjectReference(kind="Node", name=node, api_version="v1"),
    )


def _bind(core: client.CoreV1Api, pod: str, node: str, uid: str | None = None, ns: str = "default") -> Any:
    # The response is a Status, which the client cannot read as a V1Binding (a known client
    # issue), hence the raw response.
    return core.create_namespaced_pod_binding(pod, ns, _binding(pod, node, uid), _preload_content=False)


# ---------------------------------------------------------------------- discovery


def test_discovery_lists_the_volcano_groups_and_the_version(api: client.ApiClient) -> None:
    assert client.VersionApi(api).get_code().major == "1"
    groups = {g.name: g for g in client.ApisApi(api).get_api_versions().groups}
    assert groups["scheduling.volcano.sh"].preferred_version.version == "v1beta1"
    assert "coordination.k8s.io" in groups and "policy" in groups and "scheduling.k8s.io" in groups
    resources = client.CustomObjectsApi(api).get_api_resources("scheduling.volcano.sh", "v1beta1").resources
    by_name = {r.name: r for r in resources}
    assert by_name["queues"].namespaced is False
    assert by_name["podgroups"].namespaced is True
    assert "queues/status" in by_name and "podgroups/status" not in by_name
    core_names = {r.name for r in client.CoreV1Api(api).get_api_resources().resources}
    assert {"pods", "pods/binding", "pods/eviction", "pods/status", "nodes", "events", "namespaces"} <= core_names


# ---------------------------------------------------------------------- list


def test_list_pages_with_limit_and_continue_form_one_consistent_list(
    kube_api: KubeApiServer, core: client.CoreV1Api
) -> None:
    kube_api.create_many("pods", (make_pod(f"p{i:03d}") for i in range(25)))
    first = core.list_namespaced_pod("default", limit=10)
    list_rv = first.metadata.resource_version
    assert len(first.items) == 10 and first.metadata.remaining_item_count == 15
    # Changes after the first page do not show in the later pages: they come from the
    # snapshot taken at the list's resourceVersion.
    kube_api.create("pods", make_pod("p000a"))
    kube_api.delete("pods", "p020")
    names = [p.metadata.name for p in first.items]
    token = first.metadata._continue
    while token:
        page = core.list_namespaced_pod("default", limit=10, _continue=token)
        assert page.metadata.resource_version == list_rv
        names += [p.metadata.name for p in page.items]
        token = page.metadata._continue
    assert names == [f"p{i:03d}" for i in range(25)]


def test_list_filters_by_field_and_label_selectors(kube_api: KubeApiServer, core: client.CoreV1Api) -> None:
    kube_api.create("nodes", make_node("n1"))
    kube_api.create("pods", make_pod("a", labels={"app": "x", "tier": "web"}, scheduler_name="volcano"))
    kube_api.create("pods", make_pod("b", labels={"app": "y"}, scheduler_name="default-scheduler"))
    kube_api.create("pods", make_pod("c", labels={"app": "x"}, node_name="n1"))

    def names(**kw: Any) -> list[str]:
        return [p.metadata.name for p in core.list_pod_for_all_namespaces(**kw).items]

    assert names(field_selector="spec.nodeName=") == ["a", "b"]
    assert names(field_selector="spec.nodeName=n1") == ["c"]
    assert names(field_selector="spec.schedulerName=volcano,spec.nodeName!=n1") == ["a"]
    assert names(field_selector="metadata.name=b") == ["b"]
    assert names(field_selector="status.phase=Running") == ["c"]
    assert names(label_selector="app=x") == ["a", "c"]
    assert names(label_selector="app in (x,y),!tier") == ["b", "c"]
    assert names(label_selector="tier") == ["a"]
    with pytest.raises(ApiException) as err:
        core.list_pod_for_all_namespaces(field_selector="spec.hostname=x")
    assert err.value.status == 400
    assert "field label not supported: spec.hostname" in _status(err.value)["message"]


def test_list_of_an_expired_continue_token_is_410(kube_api: KubeApiServer, core: client.CoreV1Api) -> None:
    kube_api.create_many("pods", (make_pod(f"p{i}") for i in range(5)))
    token = core.list_namespaced_pod("default", limit=2).metadata._continue
    kube_api.expire_history()
    with pytest.raises(ApiException) as err:
        core.list_namespaced_pod("default", limit=2, _continue=token)
    assert err.value.status == 410
    assert _status(err.value)["reason"] == "Expired"


# ---------------------------------------------------------------------- watch


def _collect(stream: Any, until: int) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for ev in stream:
        name = ev["raw_object"]["metadata"].get("name", "")
        out.append((ev["type"], name))
        if len(out) >= until:
            break
    return out


def test_watch_from_a_resource_version_sees_each_change_once(kube_api: KubeApiServer, core: client.CoreV1Api) -> None:
    kube_api.create("pods", make_pod("old"))
    rv = core.list_namespaced_pod("default").metadata.resource_version
    kube_api.create("pods", make_pod("new"))
    kube_api.patch("pods", "old", {"metadata": {"labels": {"a": "b"}}})
    kube_api.delete("pods", "new")
    w = watch.Watch()
    events = _collect(w.stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=5), 3)
    w.stop()
    assert events == [("ADDED", "new"), ("MODIFIED", "old"), ("DELETED", "new")]


def test_watch_without_a_resource_version_starts_with_the_current_objects(
    kube_api: KubeApiServer, core: client.CoreV1Api
) -> None:
    kube_api.create("pods", make_pod("a"))
    kube_api.create("pods", make_pod("b"))
    w = watch.Watch()
    events = _collect(w.stream(core.list_namespaced_pod, "default", timeout_seconds=5), 2)
    w.stop()
    assert events == [("ADDED", "a"), ("ADDED", "b")]


def test_watch_streams_changes_made_while_it_is_open(kube_api: KubeApiServer, core: client.CoreV1Api) -> None:
    rv = core.list_namespaced_pod("default").metadata.resource_version

    def later() -> None:
        time.sleep(0.2)
        kube_api.create("pods", make_pod("live"))

    threading.Thread(target=later, daemon=True).start()
    w = watch.Watch()
    events = _collect(w.stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=5), 1)
    w.stop()
    assert events == [("ADDED", "live")]


def test_a_field_selected_watch_sees_objects_enter_and_leave_the_selection(
    kube_api: KubeApiServer, core: client.CoreV1Api
) -> None:
    kube_api.create("pods", make_pod("p"))
    rv = core.list_namespaced_pod("default").metadata.resource_version
    _bind(core, "p", "n1")  # leaves spec.nodeName= ...
    kube_api.create("pods", make_pod("q"))  # ... while q enters it
    w = watch.Watch()
    events = _collect(
        w.stream(
            core.list_namespaced_pod, "default", resource_version=rv, field_selector="spec.nodeName=", timeout_seconds=5
        ),
        2,
    )
    w.stop()
    assert events == [("DELETED", "p"), ("ADDED", "q")]


def test_bookmarks_carry_the_current_resource_version(kube_api: KubeApiServer, core: client.CoreV1Api) -> None:
    kube_api.set_bookmark_interval(0.1)
    rv = core.list_namespaced_pod("default").metadata.resource_version
    kube_api.create("nodes", make_node("n1"))  # another type moves the global resourceVersion
    w = watch.Watch()
    seen = []
    for ev in w.stream(
        core.list_namespaced_pod, "default", resource_version=rv, allow_watch_bookmarks=True, timeout_seconds=5
    ):
        seen.append(ev)
        break
    w.stop()
    assert seen[0]["type"] == "BOOKMARK"
    assert seen[0]["raw_object"]["kind"] == "Pod"
    assert int(seen[0]["raw_object"]["metadata"]["resourceVersion"]) == kube_api.resource_version > int(rv)


def test_watch_from_an_expired_resource_version_gets_410_expired(
    kube_api: KubeApiServer, core: client.CoreV1Api
) -> None:
    rv = core.list_namespaced_pod("default").metadata.resource_version
    kube_api.expire_history()  # even the latest version handed out expires
    resp = core.list_namespaced_pod("default", watch=True, resource_version=rv, _preload_content=False)
    lines = [json.loads(line) for line in resp.read().splitlines()]
    assert [e["type"] for e in lines] == ["ERROR"]
    assert lines[0]["object"]["code"] == 410 and lines[0]["object"]["reason"] == "Expired"
    # The client's watch helper retries once and then raises the 410 to its caller.
    with pytest.raises(ApiException) as err:
        list(watch.Watch().stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=2))
    assert err.value.status == 410


def test_a_small_history_expires_old_versions_by_itself(kube_api_factory: Any) -> None:
    server = kube_api_factory(history_size=3)
    start = server.resource_version
    for i in range(10):
        server.create("pods", make_pod(f"p{i}"))
    recent = server.resource_version - 2
    with pytest.raises(Exception) as err:
        server.store.watch_start(server.rt("pods"), str(start))
    assert getattr(err.value, "code", None) == 410
    assert server.store.watch_start(server.rt("pods"), str(recent))[0] == recent


def test_a_dropped_watch_breaks_the_stream_mid_way(kube_api: KubeApiServer, core: client.CoreV1Api) -> None:
    rv = core.list_namespaced_pod("default").metadata.resource_version
    kube_api.drop_watches_after(2)
    for i in range(4):
        kube_api.create("pods", make_pod(f"p{i}"))
    resp = core.list_namespaced_pod("default", watch=True, resource_version=rv, _preload_content=False)
    got = []
    with pytest.raises(Exception):  # noqa: B017 - urllib3 reports the cut stream as a protocol error
        for line in resp.stream(64):
            got.append(line)
        resp.read()
        raise AssertionError("the stream ended cleanly")
    events = [json.loads(line) for line in b"".join(got).splitlines()]
    assert [e["object"]["metadata"]["name"] for e in events] == ["p0", "p1"]


def test_drop_watches_ends_open_streams(kube_api: KubeApiServer, core: client.CoreV1Api) -> None:
    rv = core.list_namespaced_pod("default").metadata.resource_version
    resp = core.list_namespaced_pod("default", watch=True, resource_version=rv, _preload_content=False)
    threading.Timer(0.2, kube_api.drop_watches, kwargs={"abrupt": False}).start()
    assert resp.read() == b""  # a clean end of the stream, no event


# ---------------------------------------------------------------------- writes


def test_update_with_a_stale_resource_version_is_409(kube_api: KubeApiServer, core: client.CoreV1Api) -> None:
    kube_api.create("nodes", make_node("n1"))
    node = core.read_node("n1")
    node.metadata.labels["x"] = "1"
    core.replace_node("n1", node)
    node.metadata.labels["x"] = "2"
    with pytest.raises(ApiException) as err:
        core.replace_node("n1", node)  # still carries the old resourceVersion
    assert err.value.status == 409 and _status(err.value)["reason"] == "Conflict"
    assert kube_api.get("nodes", "n1", "")["metadata"]["labels"]["x"] == "1"


def test_lease_updates_from_two_holders_conflict(api: client.ApiClient) -> None:
    coord = client.CoordinationV1Api(api)
    lease = client.V1Lease(
        metadata=client.V1ObjectMeta(name="volcano", namespace="kube-system"),
        spec=client.V1LeaseSpec(holder_identity="a", lease_duration_seconds=15),
    )
    coord.create_namespaced_lease("kube-system", lease)
    with pytest.raises(ApiException) as err:
        coord.create_namespaced_lease("kube-system", lease)
    assert err.value.status == 409 and _status(err.value)["reason"] == "AlreadyExists"
    seen_a = coord.read_namespaced_lease("volcano", "kube-system")
    seen_b = coord.read_namespaced_lease("volcano", "kube-system")
    seen_a.spec.holder_identity = "a"
    seen_a.spec.renew_time = "2026-01-01T00:00:00.000000Z"
    coord.replace_namespaced_lease("volcano", "kube-system", seen_a)
    seen_b.spec.holder_identity = "b"
    with pytest.raises(ApiException) as err:
        coord.replace_namespaced_lease("volcano", "kube-system", seen_b)
    assert err.value.status == 409
    assert coord.read_namespaced_lease("volcano", "kube-system").spec.holder_identity == "a"


def test_custom_resources_need_a_resource_version_to_update(api: client.ApiClient) -> None:
    crd = client.CustomObjectsApi(api)
    crd.create_namespaced_custom_object(*VOLCANO, "default", "podgroups", make_podgroup("pg"))
    pg = crd.get_namespaced_custom_object(*VOLCANO, "default", "podgroups", "pg")
    pg["status"] = {"phase": "Running", "running": 1}
    # PodGroups have no status subresource: a full update writes the status.
    crd.replace_namespaced_custom_object(*VOLCANO, "default", "podgroups", "pg", pg)
    assert crd.get_namespaced_custom_object(*VOLCANO, "default", "podgroups", "pg")["status"]["phase"] == "Running"
    with pytest.raises(ApiException) as err:
        crd.replace_namespaced_custom_object(*VOLCANO, "default", "podgroups", "pg", pg)
    assert err.value.status == 409
    del pg["metadata"]["resourceVersion"]
    with pytest.raises(ApiException) as err:
        crd.replace_namespaced_custom_object(*VOLCANO, "default", "podgroups", "pg", pg)
    assert err.value.status == 422
    with pytest.raises(ApiException) as err:
        crd.get_namespaced_custom_object_status(*VOLCANO, "default", "podgroups", "pg")
    assert err.value.status == 404


def test_queue_status_is_written_only_through_its_subresource(api: client.ApiClient) -> None:
    crd = client.CustomObjectsApi(api)
    crd.create_cluster_custom_object(*VOLCANO, "queues", make_queue("q1"))
    q = crd.get_cluster_custom_object(*VOLCANO, "queues", "q1")
    q["status"]["allocated"] = {"cpu": "2"}
    q["spec"]["weight"] = 5
    crd.replace_cluster_custom_object(*VOLCANO, "queues", "q1", q)
    after = crd.get_cluster_custom_object(*VOLCANO, "queues", "q1")
    assert after["spec"]["weight"] == 5 and "allocated" not in after["status"]
    after["status"]["allocated"] = {"cpu": "2"}
    after["spec"]["weight"] = 9
    crd.replace_cluster_custom_object_status(*VOLCANO, "queues", "q1", after)
    final = crd.get_cluster_custom_object(*VOLCANO, "queues", "q1")
    assert final["status"]["allocated"] == {"cpu": "2"} and final["spec"]["weight"] == 5
    crd.patch_cluster_custom_object_status(*VOLCANO, "queues", "q1", {"status": {"allocated": {"cpu": "3"}}})
    assert crd.get_cluster_custom_object(*VOLCANO, "queues", "q1")["status"]["allocated"] == {"cpu": "3"}


def test_pod_status_patch_merges_conditions_by_type(kube_api: KubeApiServer, core: client.CoreV1Api) -> None:
    kube_api.create("pods", make_pod("p"))
    kube_api.patch(
        "pods", "p", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}, subresource="status"
    )
    patch = {
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/3 nodes are available",
                }
            ]
        }
    }
    core.patch_namespaced_pod_status("p", "default", patch)  # sent as a strategic merge patch
    conds = {c["type"]: c for c in kube_api.get("pods", "p")["status"]["conditions"]}
    assert conds["Ready"]["status"] == "False"
    assert conds["PodScheduled"]["reason"] == "Unschedulable"
    # The main resource ignores status; the status subresource ignores the spec.
    pod = core.read_namespaced_pod("p", "default")
    pod.status.phase = "Running"
    core.replace_namespaced_pod("p", "default", pod)
    assert kube_api.get("pods", "p")["status"]["phase"] == "Pending"


def test_pod_spec_changes_other_than_the_allowed_ones_are_invalid(
    kube_api: KubeApiServer, core: client.CoreV1Api
) -> None:
    kube_api.create("pods", make_pod("p"))
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_pod("p", "default", {"spec": {"nodeName": "n1"}})
    assert err.value.status == 422
    core.patch_namespaced_pod("p", "default", {"spec": {"containers": [{"name": "main", "image": "busybox:2"}]}})
    assert kube_api.get("pods", "p")["spec"]["containers"][0]["image"] == "busybox:2"


def test_scheduling_gates_are_removed_by_a_strategic_merge_patch(
    kube_api: KubeApiServer, core: client.CoreV1Api
) -> None:
    pod = make_pod("p")
    pod["spec"]["schedulingGates"] = [{"name": "scheduling.volcano.sh/queue-allocation-gate"}, {"name": "other"}]
    kube_api.create("pods", pod)
    with pytest.raises(ApiException) as err:
        _bind(core, "p", "n1")  # a gated pod cannot be bound
    assert err.value.status == 409 and "schedulingGates" in _status(err.value)["message"]
    patch = {"spec": {"schedulingGates": [{"name": "scheduling.volcano.sh/queue-allocation-gate", "$patch": "delete"}]}}
    core.patch_namespaced_pod("p", "default", patch)
    assert kube_api.get("pods", "p")["spec"]["schedulingGates"] == [{"name": "other"}]
    core.patch_namespaced_pod("p", "default", {"spec": {"schedulingGates": None}})
    assert _bind(core, "p", "n1").status == 201


def test_json_patch_and_merge_patch(kube_api: KubeApiServer, api: client.ApiClient) -> None:
    crd = client.CustomObjectsApi(api)
    kube_api.create("podgroups", make_podgroup("pg", min_member=2))
    # The client sends custom object patches as merge patches unless told otherwise.
    crd.patch_namespaced_custom_object(
        *VOLCANO,
        "default",
        "podgroups",
        "pg",
        [{"op": "replace", "path": "/spec/minMember", "value": 3}],
        _content_type="application/json-patch+json",
    )
    crd.patch_namespaced_custom_object(*VOLCANO, "default", "podgroups", "pg", {"spec": {"queue": None}})
    spec = kube_api.get("podgroups", "pg")["spec"]
    assert spec == {"minMember": 3}


def test_a_pod_without_containers_is_invalid(kube_api: KubeApiServer, core: client.CoreV1Api) -> None:
    pod = make_pod("p")
    pod["spec"]["containers"] = []
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod("default", pod)
    assert err.value.status == 422 and _status(err.value)["details"]["causes"][0]["field"] == "spec.containers"


def test_create_in_a_missing_namespace_is_404_and_an_unknown_priority_class_403(
    kube_api: KubeApiServer, core: client.CoreV1Api
) -> None:
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod("nowhere", make_pod("p", namespace="nowhere"))
    assert err.value.status == 404
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod("default", make_pod("p", priority_class="gold"))
    assert err.value.status == 403
    kube_api.create("priorityclasses", {"metadata": {"name": "gold"}, "value": 1000})
    created = core.create_namespaced_pod("default", make_pod("p", priority_class="gold"))
    assert created.spec.priority == 1000


# ---------------------------------------------------------------------- binding


def test_binding_sets_the_node_once_and_409s_after(kube_api: KubeApiServer, core: client.CoreV1Api) -> None:
    kube_api.create("pods", make_pod("p", group="pg1"))
    uid = kube_api.get("pods", "p")["metadata"]["uid"]
    binding = _binding("p", "n1", uid)
    binding.metadata.annotations = {"volcano.sh/topology-decision": "x"}
    resp = core.create_namespaced_pod_binding("p", "default", binding, _preload_content=False)
    assert resp.status == 201 and json.loads(resp.data)["status"] == "Success"
    pod = kube_api.get("pods", "p")
    assert pod["spec"]["nodeName"] == "n1"
    assert pod["metadata"]["annotations"] == {
        "scheduling.k8s.io/group-name": "pg1",
        "volcano.sh/topology-decision": "x",
    }
    assert {"type": "PodScheduled", "status": "True"}.items() <= pod["status"]["conditions"][0].items()
    with pytest.raises(ApiException) as err:
        _bind(core, "p", "n2")
    assert err.value.status == 409 and "already assigned to node" in _status(err.value)["message"]
    assert kube_api.get("pods", "p")["spec"]["nodeName"] == "n1"


def test_binding_with_a_stale_uid_or_to_a_missing_pod_fails(kube_api: KubeApiServer, core: client.CoreV1Api) -> None:
    kube_api.create("pods", make_pod("p"))
    with pytest.raises(ApiException) as err:
        _bind(core, "p", "n1", uid="00000000-0000-0000-0000-000000000000")
    assert err.value.status == 409
    with pytest.raises(ApiException) as err:
        _bind(core, "absent", "n1")
    assert err.value.status == 404
    assert "nodeName" not in kube_api.get("pods", "p")["spec"]


def test_injected_bind_failures_then_success(kube_api: KubeApiServer, core: client.CoreV1Api) -> None:
    kube_api.create("pods", make_pod("p"))
    kube_api.fail_next_binds(2)
    for _ in range(2):
        with pytest.raises(ApiException) as err:
            _bind(core, "p", "n1")
        assert err.value.status == 500
    assert "nodeName" not in kube_api.get("pods", "p")["spec"]
    assert _bind(core, "p", "n1").status == 201
    binds = kube_api.requests("POST", "/binding")
    assert [code for _, _, code in binds] == [500, 500, 201]


def test_run_bound_pods_turns_a_bound_pod_running(kube_api_factory: Any) -> None:
    server = kube_api_factory(run_bound_pods=True)
    server.create("pods", make_pod("p"))
    server.store.bind("default", "p", {"target": {"name": "n1"}})
    assert server.get("pods", "p")["status"]["phase"] == "Running"


# ---------------------------------------------------------------------- eviction and deletion


def _evict(core: client.CoreV1Api, name: str, grace: int | None = None) -> Any:
    body = client.V1Eviction(
        metadata=client.V1ObjectMeta(name=name, namespace="default"),
        delete_options=client.V1DeleteOptions(grace_period_seconds=grace) if grace is not None else None,
    )
    return core.create_namespaced_pod_eviction(name, "default", body)


def test_eviction_honours_a_pod_disruption_budget(kube_api: KubeApiServer, core: client.CoreV1Api) -> None:
    for i in range(3):
        kube_api.create("pods", make_pod(f"w{i}", node_name="n1", labels={"app": "w"}))
    kube_api.create("pods", make_pod("other", node_name="n1"))
    kube_api.create(
        "poddisruptionbudgets",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "pdb"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "w"}}},
        },
    )
    _evict(core, "w0", grace=0)
    assert kube_api.find("pods", "w0") is None
    with pytest.raises(ApiException) as err:
        _evict(core, "w1")
    assert err.value.status == 429 and _status(err.value)["reason"] == "TooManyRequests"
    assert kube_api.find("pods", "w1") is not None
    _evict(core, "other", grace=0)  # not covered by the budget
    assert kube_api.find("pods", "other") is None


def test_eviction_budget_with_max_unavailable_percent(kube_api: KubeApiServer, core: client.CoreV1Api) -> None:
    for i in range(4):
        kube_api.create("pods", make_pod(f"w{i}", node_name="n1", labels={"app": "w"}))
    kube_api.create(
        "poddisruptionbudgets",
        {
            "metadata": {"name": "pdb"},
            "spec": {"maxUnavailable": "50%", "selector": {"matchLabels": {"app": "w"}}},
            "status": {"expectedPods": 4},  # the replica count a controller would give
        },
    )
    assert kube_api.pdb_status("pdb")["disruptionsAllowed"] == 2
    _evict(core, "w0", grace=0)
    _evict(core, "w1", grace=0)
    with pytest.raises(ApiException) as err:
        _evict(core, "w2", grace=0)
    assert err.value.status == 429


def test_graceful_deletion_of_a_bound_pod_goes_through_terminating(kube_api_factory: Any) -> None:
    server = kube_api_factory(pod_deletion_delay=None)
    server.create("pods", make_pod("bound", node_name="n1"))
    server.create("pods", make_pod("pending"))
    server.delete("pods", "pending")
    assert server.find("pods", "pending") is None  # unbound: removed at once
    server.delete("pods", "bound")
    pod = server.get("pods", "bound")
    assert pod["metadata"]["deletionTimestamp"] and pod["metadata"]["deletionGracePeriodSeconds"] == 30
    assert server.finalize_pod("bound")
    assert server.find("pods", "bound") is None


def test_graceful_deletion_ends_by_itself_after_the_kubelet_delay(
    kube_api: KubeApiServer, core: client.CoreV1Api
) -> None:
    kube_api.create("pods", make_pod("bound", node_name="n1"))
    rv = core.list_namespaced_pod("default").metadata.resource_version
    core.delete_namespaced_pod("bound", "default")
    w = watch.Watch()
    events = _collect(w.stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=5), 2)
    w.stop()
    assert events == [("MODIFIED", "bound"), ("DELETED", "bound")]


def test_finalizers_hold_an_object_until_removed(kube_api: KubeApiServer) -> None:
    kube_api.create("podgroups", {**make_podgroup("pg"), "metadata": {"name": "pg", "finalizers": ["x"]}})
    kube_api.delete("podgroups", "pg")
    pg = kube_api.get("podgroups", "pg")
    assert pg["metadata"]["deletionTimestamp"]
    pg["metadata"]["finalizers"] = []
    kube_api.update("podgroups", pg)
    assert kube_api.find("podgroups", "pg") is None


def test_delete_with_a_stale_precondition_is_409(kube_api: KubeApiServer, core: client.CoreV1Api) -> None:
    kube_api.create("pods", make_pod("p"))
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_pod(
            "p", "default", body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="not-the-uid"))
        )
    assert err.value.status == 409
    assert kube_api.find("pods", "p") is not None


def test_events_are_created_and_listed_by_involved_object(core: client.CoreV1Api) -> None:
    for name, reason in (("a", "Scheduled"), ("b", "FailedScheduling")):
        core.create_namespaced_event(
            "default",
            client.CoreV1Event(
                metadata=client.V1ObjectMeta(generate_name=f"{name}."),
                involved_object=client.V1ObjectReference(kind="Pod", name=name, namespace="default"),
                reason=reason,
                message="m",
                type="Normal",
            ),
        )
    listed = core.list_namespaced_event("default", field_selector="involvedObject.name=b").items
    assert [e.reason for e in listed] == ["FailedScheduling"]


def test_injected_delay_holds_the_matching_request(kube_api: KubeApiServer, core: client.CoreV1Api) -> None:
    kube_api.delay(0.3, count=1, method="GET", resource="nodes")
    core.list_namespaced_pod("default")  # does not match: the delay is still pending
    assert kube_api.store.faults[0].remaining == 1
    start = time.monotonic()
    core.list_node()
    assert time.monotonic() - start >= 0.3  # a lower bound only: sleeping guarantees it
    assert kube_api.store.faults[0].remaining == 0


def test_a_watch_list_sends_the_state_then_an_annotated_bookmark(
    kube_api: KubeApiServer, core: client.CoreV1Api
) -> None:
    kube_api.create("pods", make_pod("a"))
    resp = core.list_namespaced_pod(
        "default",
        watch=True,
        send_initial_events=True,
        allow_watch_bookmarks=True,
        resource_version_match="NotOlderThan",
        timeout_seconds=1,
        _preload_content=False,
    )
    events = [json.loads(line) for line in resp.read().splitlines()]
    assert events[0]["type"] == "ADDED" and events[0]["object"]["metadata"]["name"] == "a"
    assert events[1]["type"] == "BOOKMARK"
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    with pytest.raises(ApiException) as err:
        core.list_namespaced_pod("default", watch=True, send_initial_events=True, _preload_content=False)
    assert err.value.status == 422


def test_an_injected_429_carries_retry_after_which_the_client_honours(
    kube_api: KubeApiServer, core: client.CoreV1Api
) -> None:
    kube_api.fail_next(1, 429, method="GET", resource="nodes")
    # urllib3 under the client waits Retry-After and repeats the request, as it would
    # against API priority and fairness.
    assert core.list_node().items == []
    assert [code for _, _, code in kube_api.requests("GET", "/api/v1/nodes")] == [429, 200]
    kube_api.fail_next(1, 429, method="GET", resource="nodes")
    with pytest.raises(urllib.error.HTTPError) as raw:
        urllib.request.urlopen(f"{kube_api.url}/api/v1/nodes")
    assert raw.value.code == 429 and raw.value.headers["Retry-After"] == "1"
    assert json.loads(raw.value.read())["details"] == {"retryAfterSeconds": 1}
    kube_api.fail_next(1, 500, method="GET", resource="nodes")
    with pytest.raises(ApiException) as err:
        core.list_node()
    assert err.value.status == 500 and "Retry-After" not in err.value.headers


def test_list_items_of_built_in_types_carry_no_type_metadata(kube_api: KubeApiServer) -> None:
    kube_api.create("pods", make_pod("p"))
    kube_api.create("podgroups", make_podgroup("pg"))

    def get(path: str) -> Any:
        with urllib.request.urlopen(kube_api.url + path) as resp:
            return json.loads(resp.read())

    pods = get("/api/v1/namespaces/default/pods")
    assert pods["kind"] == "PodList" and "kind" not in pods["items"][0] and pods["items"][0]["metadata"]["name"] == "p"
    assert get("/api/v1/namespaces/default/pods/p")["kind"] == "Pod"
    groups = get("/apis/scheduling.volcano.sh/v1beta1/podgroups")
    assert groups["items"][0]["kind"] == "PodGroup"  # custom resources keep it, as unstructured objects do
