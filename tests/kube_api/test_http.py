"""The HTTP layer on raw sockets: request parsing, keep-alive, chunked watch framing."""

from __future__ import annotations

import contextlib
import json
import socket

import pytest

from .bulk import make_pod
from .server import KubeApiServer


def _exchange(server: KubeApiServer, request: bytes) -> bytes:
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        chunks = []
        while True:
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks)


def test_two_requests_on_one_connection_then_close(kube_api: KubeApiServer) -> None:
    kube_api.create("pods", make_pod("p"))
    body = json.dumps({"metadata": {"labels": {"a": "b"}}}).encode()
    raw = _exchange(
        kube_api,
        b"GET /api/v1/namespaces/default/pods/p HTTP/1.1\r\nHost: x\r\nACCEPT: application/json\r\n\r\n"
        b"PATCH /api/v1/namespaces/default/pods/p HTTP/1.1\r\nhost: x\r\n"
        b"content-type: application/merge-patch+json\r\nContent-Length: " + str(len(body)).encode() + b"\r\n"
        b"Connection: close\r\n\r\n" + body,
    )
    answers = raw.split(b"HTTP/1.1 ")[1:]
    assert [a[:3] for a in answers] == [b"200", b"200"]
    assert json.loads(answers[1].split(b"\r\n\r\n", 1)[1])["metadata"]["labels"] == {"a": "b"}


def test_an_http_1_0_request_is_answered_and_closed(kube_api: KubeApiServer) -> None:
    raw = _exchange(kube_api, b"GET /version HTTP/1.0\r\n\r\n")
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.") and b" 200 " in head.split(b"\r\n")[0]
    assert json.loads(body)["major"] == "1"


def test_a_watch_is_chunked_json_lines_and_ends_with_the_last_chunk(kube_api: KubeApiServer) -> None:
    kube_api.create("pods", make_pod("p"))
    raw = _exchange(
        kube_api,
        b"GET /api/v1/namespaces/default/pods?watch=true&timeoutSeconds=1 HTTP/1.1\r\nHost: x\r\n"
        b"Connection: close\r\n\r\n",
    )
    head, _, body = raw.partition(b"\r\n\r\n")
    assert b"Transfer-Encoding: chunked" in head
    assert body.endswith(b"0\r\n\r\n")
    size, _, rest = body.partition(b"\r\n")
    event = rest[: int(size, 16)]
    assert event.endswith(b"\n") and json.loads(event)["type"] == "ADDED"


def test_an_unknown_path_is_a_404_status(kube_api: KubeApiServer) -> None:
    raw = _exchange(kube_api, b"GET /apis/example.com/v1/widgets HTTP/1.1\r\nConnection: close\r\n\r\n")
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 404")
    assert json.loads(body)["kind"] == "Status"


def test_a_refused_request_with_a_body_leaves_the_connection_usable(kube_api: KubeApiServer) -> None:
    body = json.dumps(make_pod("p")).encode()
    length = str(len(body)).encode()
    raw = _exchange(
        kube_api,
        b"POST /apis/example.com/v1/namespaces/default/widgets HTTP/1.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: "
        + length
        + b"\r\n\r\n"
        + body
        + b"POST /api/v1/namespaces/nowhere/pods HTTP/1.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + length + b"\r\n\r\n" + body + b"GET /version HTTP/1.1\r\nConnection: close\r\n\r\n",
    )
    assert [a[:3] for a in raw.split(b"HTTP/1.1 ")[1:]] == [b"404", b"400", b"200"]


def test_a_patch_in_an_unknown_format_is_415(kube_api: KubeApiServer) -> None:
    kube_api.create("pods", make_pod("p"))
    body = b'{"metadata":{"labels":{"a":"b"}}}'
    raw = _exchange(
        kube_api,
        b"PATCH /api/v1/namespaces/default/pods/p HTTP/1.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body,
    )
    assert raw.startswith(b"HTTP/1.1 415")
    assert "labels" not in kube_api.get("pods", "p")["metadata"]


def _binding(name: str, node: str) -> bytes:
    body = json.dumps({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": {"name": node}})
    return (
        f"POST /api/v1/namespaces/default/pods/{name}/binding HTTP/1.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n{body}"
    ).encode()


def test_a_dropped_answer_takes_effect_and_closes_the_connection_unanswered(kube_api: KubeApiServer) -> None:
    kube_api.create("pods", make_pod("p"))
    kube_api.drop_answers(1, method="POST", resource="pods", subresource="binding")
    assert _exchange(kube_api, _binding("p", "n0") + b"GET /version HTTP/1.1\r\n\r\n") == b""
    assert kube_api.get("pods", "p")["spec"]["nodeName"] == "n0"
    # Only the next matching request loses its answer.
    kube_api.create("pods", make_pod("q"))
    assert (
        _exchange(kube_api, _binding("q", "n0").replace(b"1.1\r\n", b"1.1\r\nConnection: close\r\n", 1))[:12]
        == b"HTTP/1.1 201"
    )


def test_a_429_carries_the_retry_after_it_was_given(kube_api: KubeApiServer) -> None:
    kube_api.fail_next(1, 429, method="GET", resource="pods", retry_after=7)
    raw = _exchange(kube_api, b"GET /api/v1/namespaces/default/pods HTTP/1.1\r\nConnection: close\r\n\r\n")
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 429") and b"Retry-After: 7" in head
    assert json.loads(body)["details"] == {"retryAfterSeconds": 7}


def test_an_outage_refuses_connections_cuts_open_ones_and_keeps_the_objects(kube_api: KubeApiServer) -> None:
    kube_api.create("pods", make_pod("p"))
    host, port = kube_api.url.removeprefix("http://").split(":")
    idle = socket.create_connection((host, int(port)), timeout=10)
    try:
        with kube_api.outage():
            with contextlib.suppress(ConnectionResetError):  # cut: reset, or closed
                assert idle.recv(1) == b""
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection((host, int(port)), timeout=10)
            kube_api.store.bind("default", "p", {"target": {"name": "n0"}})  # what etcd holds moves on
    finally:
        idle.close()
    raw = _exchange(kube_api, b"GET /api/v1/namespaces/default/pods/p HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert json.loads(raw.partition(b"\r\n\r\n")[2])["spec"]["nodeName"] == "n0"
