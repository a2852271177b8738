"""Store behaviours that need no HTTP client: garbage collection, namespaces, history."""

from __future__ import annotations

from typing import Any

import pytest

from .bulk import make_pod, make_podgroup
from .errors import ApiError
from .server import KubeApiServer


def _owned_podgroup(name: str, owner: dict[str, Any]) -> dict[str, Any]:
    pg = make_podgroup(name, owner["metadata"]["namespace"])
    pg["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": True,
        }
    ]
    return pg


def test_dependents_go_when_their_owner_goes(kube_api_factory: Any) -> None:
    server = kube_api_factory(pod_deletion_delay=None)
    pending = server.create("pods", make_pod("pending"))
    bound = server.create("pods", make_pod("bound", node_name="n1"))
    server.create("podgroups", _owned_podgroup("podgroup-pending", pending))
    server.create("podgroups", _owned_podgroup("podgroup-bound", bound))
    server.delete("pods", "pending")
    assert server.find("podgroups", "podgroup-pending") is None
    server.delete("pods", "bound")  # graceful: the owner still exists while terminating
    assert server.find("podgroups", "podgroup-bound") is not None
    server.finalize_pod("bound")
    assert server.find("podgroups", "podgroup-bound") is None
    assert [t for t, _, name, _ in server.history("podgroups") if name == "podgroup-bound"] == ["ADDED", "DELETED"]


def test_an_object_with_another_live_owner_stays(kube_api: KubeApiServer) -> None:
    a = kube_api.create("pods", make_pod("a"))
    b = kube_api.create("pods", make_pod("b"))
    pg = _owned_podgroup("shared", a)
    pg["metadata"]["ownerReferences"].append(
        {"apiVersion": "v1", "kind": "Pod", "name": "b", "uid": b["metadata"]["uid"]}
    )
    kube_api.create("podgroups", pg)
    kube_api.delete("pods", "a")
    assert kube_api.find("podgroups", "shared") is not None
    kube_api.delete("pods", "b")
    assert kube_api.find("podgroups", "shared") is None


def test_orphan_propagation_keeps_the_dependents_without_the_reference(kube_api: KubeApiServer) -> None:
    owner = kube_api.create("pods", make_pod("owner"))
    kube_api.create("podgroups", _owned_podgroup("pg", owner))
    kube_api.store.delete(kube_api.rt("pods"), "default", "owner", {"propagationPolicy": "Orphan"})
    assert kube_api.get("podgroups", "pg")["metadata"]["ownerReferences"] == []


def test_deleting_a_namespace_deletes_its_objects(kube_api: KubeApiServer) -> None:
    kube_api.create("namespaces", {"metadata": {"name": "team"}})
    owner = kube_api.create("pods", make_pod("p", namespace="team"))
    kube_api.create("podgroups", _owned_podgroup("pg", owner))
    kube_api.create("pods", make_pod("other"))
    kube_api.delete("namespaces", "team")
    assert kube_api.list("pods") and [p["metadata"]["name"] for p in kube_api.list("pods")] == ["other"]
    assert kube_api.list("podgroups") == []
    with pytest.raises(ApiError) as err:
        kube_api.create("pods", make_pod("late", namespace="team"))
    assert err.value.code == 404


def test_count_applies_the_selectors(kube_api: KubeApiServer) -> None:
    kube_api.create("pods", make_pod("a", node_name="n1", labels={"app": "x"}))
    kube_api.create("pods", make_pod("b", labels={"app": "x"}))
    kube_api.create("pods", make_pod("c"))
    assert kube_api.count("pods") == 3
    assert kube_api.count("pods", field_selector="spec.nodeName!=") == 1
    assert kube_api.count("pods", label_selector="app=x", field_selector="spec.nodeName=") == 1
