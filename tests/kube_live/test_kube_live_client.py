"""The adapter's own keep-alive connections answer exactly as the official client's pool does."""

from __future__ import annotations

import shutil
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kube_api import KubeApiServer, make_node, make_pod

from volcanolib.kube.live import load_api
from volcanolib.kube.live._client import MERGE_PATCH, STRATEGIC_MERGE_PATCH, ApiError, KubeApi

PODS = "/api/v1/namespaces/default/pods"


def _volatile(obj: Any, pod: str, uid: str) -> Any:
    """The answer without what differs between two pods' (versions, times; name and uid made ``POD``, ``UID``)."""
    if isinstance(obj, dict):
        return {
            k: _volatile(v, pod, uid)
            for k, v in obj.items()
            if k not in ("resourceVersion", "creationTimestamp", "lastTransitionTime", "uid")
        }
    if isinstance(obj, (list, tuple)):
        return [_volatile(v, pod, uid) for v in obj]
    if isinstance(obj, str):
        return obj.replace(pod, "POD").replace(uid, "UID")
    return obj


def _outcome(call: Callable[[], Any]) -> Any:
    try:
        return ("ok", call())
    except ApiError as exc:
        return ("error", exc.status, exc.reason, exc.message)


def _exercise(api: KubeApi, suffix: str) -> list[Any]:
    """The requests the adapter makes, on objects of its own (named with ``suffix``)."""
    pod = f"p-{suffix}"
    pods = f"{PODS}/{pod}"
    steps = [
        lambda: api.request("POST", PODS, body=make_pod(pod)),
        lambda: api.request("POST", PODS, body=make_pod(pod)),  # 409 AlreadyExists
        lambda: api.request(
            "PATCH",
            f"{pods}/status",
            body={"status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}},
            content_type=STRATEGIC_MERGE_PATCH,
        ),
        lambda: api.request("PATCH", pods, body={"metadata": {"labels": {"a": "b c/d"}}}, content_type=MERGE_PATCH),
        lambda: api.request(
            "POST",
            f"{pods}/binding",
            body={"metadata": {"name": pod}, "target": {"kind": "Node", "name": "n1"}},
        ),
        lambda: api.request("GET", pods),
        lambda: api.request("GET", f"{PODS}/missing"),  # 404
        lambda: api.request("GET", "/api/v1/pods", query={"fieldSelector": f"metadata.name={pod}", "limit": 5}),
        lambda: api.request("DELETE", pods, body={"preconditions": {"uid": "not-its-uid"}}),  # 409 Conflict
        lambda: api.request("GET", "/api/v1/nodes", query={"labelSelector": "zone in (a,b)", "limit": None}),
    ]
    outcomes = [_outcome(step) for step in steps]
    uid = outcomes[0][1]["metadata"]["uid"]
    return [_volatile(outcome, pod, uid) for outcome in outcomes]


@pytest.fixture(params=["http", "https and a token"])
def standin(request: pytest.FixtureRequest, kube_api_factory: Callable[..., KubeApiServer]) -> KubeApiServer:
    if request.param == "http":
        server = kube_api_factory()
    else:
        if shutil.which("openssl") is None:
            pytest.fail("the openssl command is needed to make the stand-in's certificate")
        server = kube_api_factory(tls=True, token="s3cret")
    server.create("nodes", make_node("n1", labels={"zone": "a"}))
    return server


def test_the_direct_connections_answer_as_the_clients_pool_does(standin: KubeApiServer, tmp_path: Path) -> None:
    kubeconfig = str(standin.write_kubeconfig(tmp_path / "kubeconfig"))
    direct = load_api(kubeconfig)
    plain = KubeApi(direct.api_client, direct=False)
    assert direct.direct and not plain.direct

    assert _exercise(direct, "a") == _exercise(plain, "b")
    # Each sees what the other wrote.
    assert plain.request("GET", f"{PODS}/p-a") == direct.request("GET", f"{PODS}/p-a")
    assert direct.request("GET", "/api/v1/nodes")["items"] == plain.request("GET", "/api/v1/nodes")["items"]
    bound = [(code, path) for method, path, code in standin.requests("POST", "/binding")]
    assert sorted(bound) == [(201, f"{PODS}/p-a/binding"), (201, f"{PODS}/p-b/binding")]


def test_a_wrong_token_is_refused_alike(kube_api_factory: Callable[..., KubeApiServer], tmp_path: Path) -> None:
    server = kube_api_factory(token="s3cret")
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    kubeconfig.write_text(kubeconfig.read_text().replace('"s3cret"', '"wrong"'))
    direct = load_api(str(kubeconfig))
    plain = KubeApi(direct.api_client, direct=False)
    answers = [_outcome(lambda api=api: api.request("GET", "/api/v1/nodes")) for api in (direct, plain)]
    assert answers[0] == answers[1] and answers[0][:2] == ("error", 401)


def test_a_proxy_leaves_requests_to_the_clients_pool(kube_api: KubeApiServer, tmp_path: Path) -> None:
    api = load_api(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    api.api_client.configuration.proxy = "http://127.0.0.1:1"
    assert not KubeApi(api.api_client).direct


def _local_api(port: int, tmp_path: Path) -> KubeApi:
    """A connection to ``http://127.0.0.1:port`` through a kubeconfig, as the adapter makes it."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        '{"apiVersion": "v1", "kind": "Config", "current-context": "c",'
        f' "clusters": [{{"name": "c", "cluster": {{"server": "http://127.0.0.1:{port}"}}}}],'
        ' "users": [{"name": "u", "user": {}}],'
        ' "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}'
    )
    return load_api(str(kubeconfig))


@pytest.fixture
def closing_server() -> Iterator[tuple[int, list[int]]]:
    """A server that answers one request per connection, then closes it without saying so."""
    listener = socket.create_server(("127.0.0.1", 0))
    connections: list[int] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            connections.append(1)
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                body = b'{"kind":"Status","n":%d}' % len(connections)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                    % (len(body), body)
                )

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1], connections
    listener.close()


def test_a_connection_the_server_closed_while_idle_is_replaced_once(
    closing_server: tuple[int, list[int]], tmp_path: Path
) -> None:
    port, connections = closing_server
    api = _local_api(port, tmp_path)
    assert api.direct
    assert [api.request("GET", "/version")["n"] for _ in range(3)] == [1, 2, 3]
    assert len(connections) == 3


def test_no_answer_is_status_0(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # closed again: nothing listens there
    with pytest.raises(ApiError) as err:
        _local_api(port, tmp_path).request("GET", "/api/v1/nodes", timeout=2.0)
    assert err.value.status == 0 and "ConnectionRefusedError" in err.value.message


def test_a_post_whose_answer_is_lost_is_not_sent_again_but_a_get_is(kube_api: KubeApiServer, tmp_path: Path) -> None:
    api = load_api(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    kube_api.create("pods", make_pod("p"))
    api.request("GET", f"{PODS}/p")  # the connection is kept alive ...
    kube_api.drop_answers(1, method="GET", resource="pods", name="p")
    assert api.request("GET", f"{PODS}/p")["metadata"]["name"] == "p"  # ... closed under a GET: sent again
    kube_api.drop_answers(1, method="POST", resource="pods", subresource="binding")
    binding = {"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}}
    with pytest.raises(ApiError) as err:
        api.request("POST", f"{PODS}/p/binding", body=binding)
    assert err.value.status == 0 and err.value.maybe_applied  # it may have taken effect (it did)
    assert [code for _m, _p, code in kube_api.requests("POST", "/binding")] == [201]
    assert [code for _m, _p, code in kube_api.requests("GET", f"{PODS}/p")] == [200, 200, 200]


def test_a_kept_connection_the_server_cut_while_idle_is_noticed_before_a_post(
    kube_api: KubeApiServer, tmp_path: Path
) -> None:
    api = load_api(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    api.request("GET", "/api/v1/nodes")
    with kube_api.outage():  # cuts the kept connection
        pass
    event = {"metadata": {"generateName": "e."}, "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "R"}
    api.request("POST", "/api/v1/namespaces/default/events", body=event, idempotent=False)
    assert [code for _m, _p, code in kube_api.requests("POST", "/events")] == [201]


def test_a_refused_connection_never_reached_the_server_and_a_429_says_how_long_to_wait(
    kube_api: KubeApiServer, tmp_path: Path
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    with pytest.raises(ApiError) as err:
        _local_api(port, tmp_path).request("POST", "/api/v1/namespaces/default/events", body={}, timeout=2.0)
    assert err.value.status == 0 and not err.value.maybe_applied
    api = load_api(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    for client in (api, KubeApi(api.api_client, direct=False)):
        kube_api.fail_next(1, 429, method="POST", resource="pods", subresource="binding", retry_after=3)
        with pytest.raises(ApiError) as err:
            client.request("POST", f"{PODS}/p/binding", body={"metadata": {"name": "p"}})
        assert err.value.status == 429 and err.value.retry_after == 3.0
