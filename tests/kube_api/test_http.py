"""The HTTP layer on raw sockets: request parsing, keep-alive, chunked watch framing."""

from __future__ import annotations

import json
import socket

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
