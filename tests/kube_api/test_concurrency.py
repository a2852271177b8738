"""Concurrent clients: one bind wins, optimistic concurrency loses no update, a watch sees
every change once and in order."""

from __future__ import annotations

import http.client
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .bulk import make_node, make_pod
from .server import KubeApiServer


def _request(server: KubeApiServer, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    host, port = server.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        data = json.dumps(body) if body is not None else None
        ctype = "application/merge-patch+json" if method == "PATCH" else "application/json"
        conn.request(method, path, data, {"Content-Type": ctype})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_of_many_concurrent_binds_of_one_pod_exactly_one_wins(kube_api: KubeApiServer) -> None:
    kube_api.create("pods", make_pod("p"))
    start = threading.Barrier(8)

    def bind(i: int) -> int:
        start.wait()
        body = {"metadata": {"name": "p"}, "target": {"kind": "Node", "name": f"n{i}"}}
        return _request(kube_api, "POST", "/api/v1/namespaces/default/pods/p/binding", body)[0]

    with ThreadPoolExecutor(8) as pool:
        codes = sorted(pool.map(bind, range(8)))
    assert codes == [201] + [409] * 7
    winner = kube_api.get("pods", "p")["spec"]["nodeName"]
    assert [t for t, _, name, _ in kube_api.history("pods") if name == "p"] == ["ADDED", "MODIFIED"]
    assert winner in {f"n{i}" for i in range(8)}


def test_read_modify_write_with_retries_loses_no_update(kube_api: KubeApiServer) -> None:
    kube_api.create("nodes", make_node("n1"))
    path = "/api/v1/nodes/n1"

    def increment(_: int) -> int:
        conflicts = 0
        while True:
            _, node = _request(kube_api, "GET", path)
            labels = node["metadata"].setdefault("labels", {})
            labels["count"] = str(int(labels.get("count", "0")) + 1)
            code, _ = _request(kube_api, "PUT", path, node)
            if code == 200:
                return conflicts
            assert code == 409
            conflicts += 1

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(increment, range(30)))
    assert kube_api.get("nodes", "n1", "")["metadata"]["labels"]["count"] == "30"


def test_a_watch_sees_every_concurrent_change_once_and_in_order(kube_api: KubeApiServer) -> None:
    _, listed = _request(kube_api, "GET", "/api/v1/pods")
    rv = listed["metadata"]["resourceVersion"]
    host, port = kube_api.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", f"/api/v1/pods?watch=1&resourceVersion={rv}&timeoutSeconds=20")
    stream = conn.getresponse()

    def write(i: int) -> None:
        name = f"p{i}"
        path = f"/api/v1/namespaces/default/pods/{name}"
        assert _request(kube_api, "POST", "/api/v1/namespaces/default/pods", make_pod(name))[0] == 201
        assert _request(kube_api, "PATCH", path, {"metadata": {"labels": {"x": "1"}}})[0] == 200
        assert _request(kube_api, "DELETE", path)[0] == 200

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(write, range(40)))
    seen: list[tuple[str, str, int]] = []
    for line in stream:
        event = json.loads(line)
        meta = event["object"]["metadata"]
        seen.append((event["type"], meta["name"], int(meta["resourceVersion"])))
        if len(seen) == 120:
            break
    conn.close()
    versions = [v for _, _, v in seen]
    assert versions == sorted(set(versions))  # in order, none twice
    assert [(t, n, v) for t, _, n, v in kube_api.history("pods")][-120:] == seen  # none missing
    for i in range(40):
        assert [t for t, n, _ in seen if n == f"p{i}"] == ["ADDED", "MODIFIED", "DELETED"]


def test_bookmarks_amid_changes_never_skip_an_event(kube_api: KubeApiServer) -> None:
    kube_api.set_bookmark_interval(0.01)
    _, listed = _request(kube_api, "GET", "/api/v1/pods")
    rv = listed["metadata"]["resourceVersion"]
    host, port = kube_api.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", f"/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion={rv}&timeoutSeconds=20")
    stream = conn.getresponse()

    def write(i: int) -> None:
        kube_api.create("pods", make_pod(f"p{i}"))
        kube_api.create("nodes", make_node(f"n{i}"))  # moves the resourceVersion under the watch

    events: list[tuple[str, int]] = []
    lines = iter(stream)

    def read_until(added: int, bookmark: bool) -> None:
        for line in lines:
            event = json.loads(line)
            events.append((event["type"], int(event["object"]["metadata"]["resourceVersion"])))
            if sum(1 for t, _ in events if t == "ADDED") >= added and (not bookmark or event["type"] == "BOOKMARK"):
                return

    for first in (0, 30):  # two rounds of writes with at least one bookmark between them
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(write, range(first, first + 30)))
        read_until(first + 30, bookmark=first == 0)
    conn.close()
    added = [v for t, v in events if t == "ADDED"]
    assert any(t == "BOOKMARK" for t, _ in events)
    for i, (kind, version) in enumerate(events):
        if kind == "BOOKMARK":
            # A client resuming from this bookmark gets exactly the events after it.
            assert all(v <= version for t, v in events[:i] if t == "ADDED")
            assert all(v > version for t, v in events[i + 1 :] if t == "ADDED")
    assert added == sorted(added) and len(set(added)) == 60
