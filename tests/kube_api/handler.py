"""The HTTP side of the stand-in: routes Kubernetes REST paths to the :class:`~.store.Store`,
answers with JSON, streams watches as chunked newline-delimited JSON, and applies the
programmed faults."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from . import errors
from .errors import ApiError
from .patch import JSON_PATCH, MERGE, STRATEGIC
from .records import Obj, Stored, dumps
from .resources import (
    ResourceType,
    api_group_doc,
    api_group_list_doc,
    api_versions_doc,
    openapi_v3_doc,
    openapi_v3_root,
    resource_list_doc,
)
from .store import Store, find_type
from .tables import table, wants_table

VERSION_DOC = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-volcanolib-standin",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.23",
    "compiler": "gc",
    "platform": "linux/amd64",
}

NAMESPACE_SUBRESOURCES = ("status", "finalize")
PATCH_TYPES = (JSON_PATCH, MERGE, STRATEGIC)
# What anonymous clients may read (the system:public-info-viewer role).
PUBLIC_PATHS = (["version"], ["healthz"], ["livez"], ["readyz"])


class _Headers(dict[str, str]):
    """Request headers by lower-case name, looked up case-insensitively."""

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())


class _Route:
    """A parsed resource path."""

    __slots__ = ("name", "namespace", "rt", "sub")

    def __init__(self, rt: ResourceType, namespace: str | None, name: str | None, sub: str | None) -> None:
        self.rt = rt
        self.namespace = namespace
        self.name = name
        self.sub = sub


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # A buffered writer sends the headers and a small body in one segment, and no Nagle
    # delay (TCP_NODELAY, as Go's servers set): otherwise each answer waits for the
    # client's delayed ACK (about 40 ms).
    wbufsize = 1 << 16
    disable_nagle_algorithm = True
    server: _HTTPServer
    _body_read = False  # whether the current request's body has been read
    _body: Any = None  # the current request's body, once read
    _drop_answer = False  # whether the current request's answer is to be lost (a fault)

    def setup(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):
            self.request.do_handshake()
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def parse_request(self) -> bool:
        """Parse the request line and headers without the email parser the base class uses
        (a third of the cost of a small request); anything unusual goes to the base class."""
        requestline: bytes = self.raw_requestline  # type: ignore[has-type]
        line = str(requestline, "iso-8859-1").rstrip("\r\n")
        words = line.split()
        if len(words) != 3 or words[2] != "HTTP/1.1":
            self.raw_requestline = (line + "\r\n").encode("iso-8859-1")
            return super().parse_request()
        self.requestline = line
        self.command, self.path, self.request_version = words
        headers = _Headers()
        while True:
            raw = self.rfile.readline(65537)
            if raw in (b"\r\n", b"\n", b""):
                break
            if len(headers) > 100 or len(raw) > 65536:
                self.send_error(431, "Request Header Fields Too Large")
                return False
            name, _, value = str(raw, "iso-8859-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        self.headers = headers  # type: ignore[assignment]
        self.close_connection = headers.get("connection", "").lower() == "close"
        if headers.get("expect", "").lower() == "100-continue":
            return self.handle_expect_100()
        return True

    # ------------------------------------------------------------------ plumbing

    @property
    def store(self) -> Store:
        return self.server.store

    def _send(
        self, code: int, body: bytes, content_type: str = "application/json", retry_after: int | None = None
    ) -> None:
        with self.store.cond:  # logged before the client can see the answer
            self.store.requests.append((self.command, self.path, code))
            self.store.request_times.append(time.monotonic())
        if self._drop_answer:  # a programmed fault: the request took effect, its answer is lost
            self._drop_answer = False
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.send_response(code)
        if retry_after is not None:
            self.send_header("Retry-After", str(retry_after))
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.wfile.write(body)

    def _send_json(self, code: int, obj: Any) -> None:
        self._send(code, dumps(obj))

    def _read_body(self) -> Any:
        if self._body_read:
            return self._body
        self._body_read = True
        self._body = None
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        ctype = self.headers.get("Content-Type", "")
        if "protobuf" in ctype or "cbor" in ctype:
            # kubectl's typed commands (create namespace, run ...) send protobuf; a real
            # server decodes it, the stand-in has no schemas to do so.
            raise ApiError(
                415, "UnsupportedMediaType", f"the stand-in API server accepts only JSON bodies, not {ctype}"
            )
        try:
            self._body = json.loads(raw)
        except ValueError as exc:
            raise errors.bad_request(f"the request body is not JSON: {exc}") from exc
        return self._body

    def _dispatch(self) -> None:
        self._body_read = False
        self._drop_answer = False
        try:
            self._route()
        except ApiError as exc:
            self._skip_body()
            self._send(exc.code, dumps(exc.status()), retry_after=exc.retry_after)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # a bug in the stand-in: answer 500 rather than hang the client
            self._skip_body()
            self._send_json(500, errors.internal(f"{type(exc).__name__}: {exc}").status())

    def _skip_body(self) -> None:
        """Read a body left unread by a refused request, so that the connection stays usable."""
        if not self._body_read:
            self._body_read = True
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _dispatch

    # ------------------------------------------------------------------ routing

    def _route(self) -> None:
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        segs = [s for s in parts.path.split("/") if s]
        method = self.command
        token = self.server.token
        if token is not None and segs not in PUBLIC_PATHS:
            # The scheme is case-insensitive: the Python client's in-cluster loader sends "bearer".
            scheme, _, given = (self.headers.get("Authorization") or "").partition(" ")
            if scheme.lower() != "bearer" or given.strip() != token:
                raise ApiError(401, "Unauthorized", "Unauthorized")
        if method == "GET":
            doc = self._discovery(segs)
            if doc is not None:
                if isinstance(doc, bytes):
                    self._send(200, doc, "text/plain; charset=utf-8")
                else:
                    self._send_json(200, doc)
                return
        route = self._parse(segs)
        fault = self.store.take_fault(method, route.rt.plural, route.sub, route.name)
        if fault is not None:
            if fault.delay:
                self._read_body()  # received whole before the server stalls, as a real one would
                time.sleep(fault.delay)
            if fault.code:
                err = ApiError(fault.code, _reason(fault.code), fault.message)
                if fault.code in (429, 503):
                    # As API priority and fairness answers; a client may wait this long.
                    err.retry_after = fault.retry_after
                    err.details = {"retryAfterSeconds": fault.retry_after}
                raise err
            self._drop_answer = fault.drop_answer
            if fault.drop_answer and not fault.apply:
                self._skip_body()
                self._send(0, b"")  # logged with code 0, and no answer
                return
        self._resource(method, route, query)

    def _discovery(self, segs: list[str]) -> Any:
        resources = self.store.resources
        if segs == ["version"]:
            return VERSION_DOC
        if segs in (["healthz"], ["readyz"], ["livez"]):
            return b"ok"
        if segs == ["api"]:
            return api_versions_doc()
        if segs == ["api", "v1"]:
            return resource_list_doc(resources, "", "v1")
        if segs == ["apis"]:
            return api_group_list_doc(resources)
        if len(segs) == 2 and segs[0] == "apis":
            doc = api_group_doc(resources, segs[1])
            if doc is None:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            return doc
        if len(segs) == 3 and segs[0] == "apis":
            doc = resource_list_doc(resources, segs[1], segs[2])
            if doc is None:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            return doc
        if segs == ["openapi", "v3"]:
            return openapi_v3_root(resources)
        if segs[:3] == ["openapi", "v3", "api"] and len(segs) == 4:
            doc = openapi_v3_doc(resources, "", segs[3])
            if doc is not None:
                return doc
        if segs[:3] == ["openapi", "v3", "apis"] and len(segs) == 5:
            doc = openapi_v3_doc(resources, segs[3], segs[4])
            if doc is not None:
                return doc
        if segs and segs[0] == "openapi":
            raise ApiError(404, "NotFound", "the stand-in API server serves no OpenAPI schema")
        return None

    def _parse(self, segs: list[str]) -> _Route:
        if len(segs) >= 3 and segs[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", segs[2:]
        elif len(segs) >= 4 and segs[0] == "apis":
            group, version, rest = segs[1], segs[2], segs[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        types = self.store.types
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in NAMESPACE_SUBRESOURCES:
            namespace, rest = rest[1], rest[2:]
        rt = find_type(types, group, version, rest[0])
        if namespace is not None and not rt.namespaced:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if len(rest) > 3 or (rt.namespaced and namespace is None and len(rest) > 1):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub is not None and sub not in rt.subresources:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return _Route(rt, namespace, name, sub)

    # ------------------------------------------------------------------ resources

    def _resource(self, method: str, r: _Route, query: dict[str, str]) -> None:
        store, rt = self.store, r.rt
        ns = r.namespace or ""
        if r.name is None:
            if method == "GET":
                pred = store.make_filter(rt, query.get("labelSelector", ""), query.get("fieldSelector", ""))
                if query.get("watch", "").lower() in ("1", "true"):
                    self._watch(rt, r.namespace, pred, query)
                else:
                    self._list(rt, r.namespace, pred, query)
                return
            if method == "POST":
                body = self._read_body()
                if not isinstance(body, dict):
                    raise errors.bad_request("the request body must be an object")
                if not rt.namespaced:
                    ns = ""
                st = store.create(rt, ns, body)
                self._send(201, st.raw)
                return
            if method == "DELETE":
                body = self._read_body() or {}
                pred = store.make_filter(rt, query.get("labelSelector", ""), query.get("fieldSelector", ""))
                deleted = store.delete_collection(rt, r.namespace, pred, _delete_options(body, query))
                self._send_list(rt, store.rv, deleted, "", None)
                return
            raise ApiError(405, "MethodNotAllowed", f"the server does not allow this method on {rt.plural}")
        name = r.name
        if r.sub in ("binding", "eviction"):
            if method != "POST":
                raise ApiError(
                    405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
                )
            body = self._read_body() or {}
            if r.sub == "binding":
                store.bind(ns, name, body)
            else:
                store.evict(ns, name, body)
            self._send_json(201, errors.success(201))
            return
        if method == "GET":
            st = store.get(rt, ns, name)  # the status subresource reads the whole object too
            if wants_table(self.headers.get("Accept", "")):
                self._send_json(200, table(rt, [st.obj]))
            else:
                self._send(200, st.raw)
            return
        if method == "PUT":
            body = self._read_body()
            if not isinstance(body, dict):
                raise errors.bad_request("the request body must be an object")
            self._send(200, store.update(rt, ns, name, body, r.sub or "").raw)
            return
        if method == "PATCH":
            ctype = self.headers.get("Content-Type", "").split(";")[0].strip()
            if ctype.startswith("application/apply-patch"):
                raise ApiError(415, "UnsupportedMediaType", "the stand-in does not implement server-side apply")
            if ctype not in PATCH_TYPES:
                raise ApiError(
                    415,
                    "UnsupportedMediaType",
                    f"the body of the request was in an unknown format - accepted media types include: "
                    f"{', '.join(PATCH_TYPES)}",
                )
            body = self._read_body()
            self._send(200, store.patch(rt, ns, name, ctype, body, r.sub or "").raw)
            return
        if method == "DELETE":
            if r.sub:
                raise ApiError(
                    405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
                )
            body = self._read_body() or {}
            self._send(200, store.delete(rt, ns, name, _delete_options(body, query)).raw)
            return
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def _list(self, rt: ResourceType, ns: str | None, pred: Any, query: dict[str, str]) -> None:
        try:
            limit = int(query.get("limit") or 0)
        except ValueError as exc:
            raise errors.bad_request(f"invalid limit: {query.get('limit')}") from exc
        list_rv, items, token, remaining = self.store.list_page(rt, ns, pred, limit, query.get("continue", ""))
        self._send_list(rt, list_rv, items, token, remaining)

    def _send_list(
        self, rt: ResourceType, list_rv: int, items: list[Stored], token: str, remaining: int | None
    ) -> None:
        meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if token:
            meta["continue"] = token
        if remaining is not None:
            meta["remainingItemCount"] = remaining
        if wants_table(self.headers.get("Accept", "")):
            self._send_json(200, table(rt, [st.obj for st in items], meta))
            return
        head = dumps({"kind": f"{rt.kind}List", "apiVersion": rt.api_version, "metadata": meta})
        body = head[:-1] + b',"items":[' + b",".join([rt.list_item(st.raw) for st in items]) + b"]}"
        self._send(200, body)

    # ------------------------------------------------------------------ watch

    def _watch(self, rt: ResourceType, ns: str | None, pred: Any, query: dict[str, str]) -> None:
        store = self.store
        generation = store.watch_generation
        budget = store.watch_event_budget
        bookmarks = query.get("allowWatchBookmarks", "").lower() in ("1", "true")
        try:
            timeout = float(query.get("timeoutSeconds") or 0) or None  # 0: no timeout, as unset
        except ValueError as exc:
            raise errors.bad_request(f"invalid timeoutSeconds: {query.get('timeoutSeconds')}") from exc
        start = time.monotonic()
        error: dict[str, Any] | None = None
        send_initial = query.get("sendInitialEvents", "").lower() in ("1", "true")
        if send_initial and (not bookmarks or query.get("resourceVersionMatch") != "NotOlderThan"):
            raise errors.invalid(
                "ListOptions",
                "",
                "",
                "",
                "sendInitialEvents",
                "Forbidden: sendInitialEvents is only supported with allowWatchBookmarks=true and "
                "resourceVersionMatch=NotOlderThan",
            )
        try:
            pos, initial = store.watch_start(rt, query.get("resourceVersion", ""), send_initial)
        except ApiError as exc:
            if exc.code != 410:
                raise
            pos, initial, error = 0, None, exc.status()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        with store.cond:
            store.requests.append((self.command, self.path, 200))
            store.request_times.append(time.monotonic())
        sent = 0
        as_table = wants_table(self.headers.get("Accept", ""))

        def emit(etype: str, raw: bytes, obj: Obj | None = None) -> None:
            if as_table and obj is not None:
                raw = dumps(table(rt, [obj]))
            data = b'{"type":"' + etype.encode() + b'","object":' + raw + b"}\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

        try:
            if error is not None:
                emit("ERROR", dumps(error))
                self._end_chunks()
                return
            for st in initial or ():
                if _in_scope(st.obj, ns) and (pred is None or pred(st.obj)):
                    emit("ADDED", st.raw, st.obj)
                    sent += 1
            if send_initial:
                # The end of the initial state (a "watch list"), marked by an annotated bookmark.
                emit("BOOKMARK", _bookmark(rt, pos, {"k8s.io/initial-events-end": "true"}))
            self.wfile.flush()
            next_bookmark = time.monotonic() + store.bookmark_interval
            while True:
                now = time.monotonic()
                wait = store.bookmark_interval if bookmarks else 3600.0
                if bookmarks:
                    wait = max(0.0, next_bookmark - now)
                if timeout is not None:
                    wait = min(wait, max(0.0, start + timeout - now))
                try:
                    res = store.watch_next(rt, pos, wait, generation)
                except ApiError as exc:
                    emit("ERROR", dumps(exc.status()))
                    break
                if res is None:
                    if store.abrupt_drop and not store.stopping:
                        self._abort()
                        return
                    break
                events, current = res
                for ev in events:
                    pos = ev.rv
                    if ns is not None and ev.namespace != ns:
                        continue
                    etype, raw = _filtered(ev.type, ev.new, ev.old, pred)
                    if etype is None:
                        continue
                    emit(etype, raw, ev.new.obj)
                    sent += 1
                    if budget is not None and sent >= budget:
                        self.wfile.flush()
                        self._abort()
                        return
                self.wfile.flush()
                now = time.monotonic()
                if timeout is not None and now >= start + timeout:
                    break
                if bookmarks and now >= next_bookmark:  # every event up to current was in this batch
                    pos = current
                    emit("BOOKMARK", _bookmark(rt, current))
                    self.wfile.flush()
                    next_bookmark = now + store.bookmark_interval
            self._end_chunks()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    def _end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _abort(self) -> None:
        """Cut the connection mid-stream, as a load balancer or a crashed API server would."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def _bookmark(rt: ResourceType, rv: int, annotations: dict[str, str] | None = None) -> bytes:
    """A BOOKMARK's object: only kind, apiVersion and metadata.resourceVersion mean anything.
    For a built-in type the API server encodes an empty typed object, so the metadata has
    ``creationTimestamp: null`` (and a pod an empty spec and status); a client must not
    read a bookmark as an object."""
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if annotations:
        meta["annotations"] = annotations
    obj: dict[str, Any] = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}
    if not rt.crd:
        meta["creationTimestamp"] = None
        if rt.plural == "pods":
            obj["spec"] = {"containers": None}
            obj["status"] = {}
    return dumps(obj)


def _in_scope(obj: Obj, ns: str | None) -> bool:
    return ns is None or obj["metadata"].get("namespace", "") == ns


def _filtered(etype: str, new: Stored, old: Stored | None, pred: Any) -> tuple[str | None, bytes]:
    """The event a selector-filtered watch sees: an object moving into the selection is
    ``ADDED``, one moving out is ``DELETED``."""
    if pred is None:
        return etype, new.raw
    if etype == "MODIFIED" and old is not None:
        was, now = pred(old.obj), pred(new.obj)
        if was and now:
            return "MODIFIED", new.raw
        if now:
            return "ADDED", new.raw
        if was:
            return "DELETED", new.raw
        return None, b""
    return (etype, new.raw) if pred(new.obj) else (None, b"")


def _delete_options(body: Any, query: dict[str, str]) -> dict[str, Any]:
    opts = dict(body) if isinstance(body, dict) else {}
    if "gracePeriodSeconds" in query:
        opts["gracePeriodSeconds"] = int(query["gracePeriodSeconds"])
    return opts


def _reason(code: int) -> str:
    return {
        400: "BadRequest",
        401: "Unauthorized",
        403: "Forbidden",
        404: "NotFound",
        409: "Conflict",
        410: "Expired",
        422: "Invalid",
        429: "TooManyRequests",
        500: "InternalError",
        503: "ServiceUnavailable",
        504: "Timeout",
    }.get(code, "Unknown")


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True

    def __init__(
        self, addr: tuple[str, int], store: Store, tls: ssl.SSLContext | None = None, token: str | None = None
    ) -> None:
        self.store = store
        self.tls = tls
        self.token = token
        self.lock = threading.Lock()
        #: The open client connections (cut by :meth:`cut_connections`).
        self.connections: set[Any] = set()
        super().__init__(addr, _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = super().get_request()
        if self.tls is not None:
            # The handshake runs on the connection's own thread (see _Handler.setup).
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        with self.lock:
            self.connections.add(sock)
        return sock, addr

    def shutdown_request(self, request: Any) -> None:
        with self.lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def cut_connections(self) -> None:
        """Cut every open connection at once, as a crashed server's would be."""
        with self.lock:
            connections = list(self.connections)
            self.connections.clear()
        for sock in connections:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that went away or failed the TLS handshake: nothing to report
