"""The HTTP side of the stand-in: routes Kubernetes REST paths to the :class:`~.store.Store`,
answers with JSON, streams watches as chunked newline-delimited JSON, and applies the
programmed faults. :class:`KubeApiServer` runs it on a thread and is the tests' handle."""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from . import errors
from .errors import ApiError
from .patch import JSON_PATCH, MERGE, STRATEGIC
from .resources import (
    ResourceType,
    api_group_doc,
    api_group_list_doc,
    api_versions_doc,
    openapi_v3_doc,
    openapi_v3_root,
    resource_list_doc,
)
from .store import Fault, Obj, Store, Stored, find_type
from .tables import table, wants_table
from .tls import certificate, server_context

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


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


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
        self.send_response(code)
        if retry_after is not None:
            self.send_header("Retry-After", str(retry_after))
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.wfile.write(body)

    def _send_json(self, code: int, obj: Any) -> None:
        self._send(code, _dumps(obj))

    def _read_body(self) -> Any:
        if self._body_read:
            return None
        self._body_read = True
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
            return json.loads(raw)
        except ValueError as exc:
            raise errors.bad_request(f"the request body is not JSON: {exc}") from exc

    def _dispatch(self) -> None:
        self._body_read = False
        try:
            self._route()
        except ApiError as exc:
            self._skip_body()
            self._send(exc.code, _dumps(exc.status()), retry_after=exc.retry_after)
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
        if token is not None and segs not in PUBLIC_PATHS and self.headers.get("Authorization") != f"Bearer {token}":
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
                time.sleep(fault.delay)
            if fault.code:
                err = ApiError(fault.code, _reason(fault.code), fault.message)
                if fault.code in (429, 503):
                    # As API priority and fairness answers; a client may wait this long.
                    err.retry_after = 1
                    err.details = {"retryAfterSeconds": 1}
                raise err
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
        head = _dumps({"kind": f"{rt.kind}List", "apiVersion": rt.api_version, "metadata": meta})
        body = head[:-1] + b',"items":[' + b",".join([rt.list_item(st.raw) for st in items]) + b"]}"
        self._send(200, body)

    # ------------------------------------------------------------------ watch

    def _watch(self, rt: ResourceType, ns: str | None, pred: Any, query: dict[str, str]) -> None:
        store = self.store
        generation = store.watch_generation
        budget = store.watch_event_budget
        bookmarks = query.get("allowWatchBookmarks", "").lower() in ("1", "true")
        timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None
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
        sent = 0
        as_table = wants_table(self.headers.get("Accept", ""))

        def emit(etype: str, raw: bytes, obj: Obj | None = None) -> None:
            if as_table and obj is not None:
                raw = _dumps(table(rt, [obj]))
            data = b'{"type":"' + etype.encode() + b'","object":' + raw + b"}\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

        try:
            if error is not None:
                emit("ERROR", _dumps(error))
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
                    emit("ERROR", _dumps(exc.status()))
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
                if bookmarks and now >= next_bookmark:  # every event up to current were in this batch
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
    return _dumps(obj)


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
        super().__init__(addr, _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = super().get_request()
        if self.tls is not None:
            # The handshake runs on the connection's own thread (see _Handler.setup).
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that went away or failed the TLS handshake: nothing to report


class KubeApiServer:
    """A stand-in Kubernetes API server on a thread, and the handle tests use to look at and
    change its state or program faults.

    :param host: address to listen on.
    :param port: port; 0 picks a free one.
    :param tls: serve HTTPS with a self-signed certificate (made with the ``openssl``
        command; :meth:`write_kubeconfig` puts it in the kubeconfig as the CA).
    :param token: require ``Authorization: Bearer <token>`` on every request but
        ``/version`` and the health checks (``401 Unauthorized`` otherwise).
    :param store_options: passed to :class:`~.store.Store` (``history_size``,
        ``pod_deletion_delay``, ``run_bound_pods``, ``podgroup_status_subresource``).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        tls: bool = False,
        token: str | None = None,
        **store_options: Any,
    ) -> None:
        self.store = Store(**store_options)
        self.token = token
        self._httpd = _HTTPServer((host, port), self.store, server_context() if tls else None, token)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://host:port`` (``https://`` in TLS mode) of the running server."""
        host, port = self._httpd.server_address[:2]
        scheme = "https" if self._httpd.tls is not None else "http"
        return f"{scheme}://{host!s}:{port}"

    @property
    def ca_file(self) -> Path | None:
        """The PEM file of the certificate authority in TLS mode (None otherwise)."""
        return certificate()[0] if self._httpd.tls is not None else None

    def start(self) -> KubeApiServer:
        """Serve on a daemon thread; returns self."""
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="kube-api-standin", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """End open watches, stop serving and close the socket."""
        self.store.stop()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> KubeApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ state

    def rt(self, resource: str) -> ResourceType:
        """The resource type named ``plural`` or ``plural.group`` (``pods``, ``podgroups.scheduling.volcano.sh``)."""
        plural, _, group = resource.partition(".")
        matches = [r for r in self.store.resources if r.plural == plural and (not group or r.group == group)]
        if not matches:
            raise KeyError(f"unknown resource {resource!r}")
        return matches[0]

    def get(self, resource: str, name: str, namespace: str = "default") -> Obj:
        """A copy of one object.

        :raises ApiError: ``404`` when absent.
        """
        return self.store.get(self.rt(resource), namespace, name).copy()

    def find(self, resource: str, name: str, namespace: str = "default") -> Obj | None:
        """A copy of one object, or None when absent."""
        try:
            return self.get(resource, name, namespace)
        except ApiError:
            return None

    def list_objects(self, resource: str, namespace: str | None = None) -> list[Obj]:
        """Copies of every object of a type (in one namespace when given), by key order."""
        return self.store.objects(self.rt(resource), namespace)

    def count(self, resource: str, field_selector: str = "", label_selector: str = "") -> int:
        """How many objects of a type match the selectors (no copies: fast on large stores)."""
        rt = self.rt(resource)
        pred = self.store.make_filter(rt, label_selector, field_selector)
        _, items, _, _ = self.store.list_page(rt, None, pred)
        return len(items)

    def create(self, resource: str, obj: Obj, namespace: str | None = None) -> Obj:
        """Create an object as a POST would (the namespace defaults to the object's, then ``default``)."""
        rt = self.rt(resource)
        ns = namespace or (obj.get("metadata") or {}).get("namespace") or ("default" if rt.namespaced else "")
        return self.store.create(rt, ns, obj).copy()

    def create_many(self, resource: str, objs: Iterable[Obj]) -> int:
        """Create many objects fast (no per-object copy; missing namespaces are created).

        :returns: how many were created.
        """
        return self.store.bulk_create(self.rt(resource), objs)

    def update(self, resource: str, obj: Obj, subresource: str = "") -> Obj:
        """Replace an object as a PUT would (a stale ``metadata.resourceVersion`` raises ``409``)."""
        rt = self.rt(resource)
        meta = obj["metadata"]
        return self.store.update(rt, meta.get("namespace", ""), meta["name"], obj, subresource).copy()

    def patch(
        self,
        resource: str,
        name: str,
        patch: Any,
        namespace: str = "default",
        subresource: str = "",
        content_type: str = "application/merge-patch+json",
    ) -> Obj:
        """Patch an object (JSON merge patch by default)."""
        rt = self.rt(resource)
        return self.store.patch(rt, namespace if rt.namespaced else "", name, content_type, patch, subresource).copy()

    def delete(self, resource: str, name: str, namespace: str = "default", grace_period: int | None = None) -> None:
        """Delete an object as a DELETE would (graceful for a bound pod unless ``grace_period=0``)."""
        rt = self.rt(resource)
        opts = {} if grace_period is None else {"gracePeriodSeconds": grace_period}
        self.store.delete(rt, namespace if rt.namespaced else "", name, opts)

    def set_pod_phase(self, name: str, phase: str, namespace: str = "default") -> Obj:
        """Set a pod's ``status.phase`` (and its Ready condition), as its kubelet would."""
        ready = {"type": "Ready", "status": "True" if phase == "Running" else "False"}
        pod = self.get("pods", name, namespace)
        conds = [c for c in pod.get("status", {}).get("conditions") or [] if c.get("type") != "Ready"]
        status = {**pod.get("status", {}), "phase": phase, "conditions": [*conds, ready]}
        return self.patch("pods", name, {"status": status}, namespace, subresource="status")

    def pdb_status(self, name: str, namespace: str = "default") -> dict[str, int]:
        """A PodDisruptionBudget's status as the disruption controller would compute it now."""
        return self.store.pdb_status(namespace, name)

    def finalize_pod(self, name: str, namespace: str = "default") -> bool:
        """Remove a terminating pod, as its kubelet does (see ``pod_deletion_delay``)."""
        return self.store.finalize_pod(namespace, name)

    @property
    def resource_version(self) -> int:
        """The current global resourceVersion."""
        with self.store.cond:
            return self.store.rv

    # ------------------------------------------------------------------ faults and inspection

    def fail_next(
        self,
        count: int,
        code: int = 500,
        *,
        method: str | None = None,
        resource: str | None = None,
        subresource: str | None = None,
        name: str | None = None,
        message: str = "injected failure",
    ) -> None:
        """Answer the next ``count`` matching requests with ``code`` and a ``Status`` (count < 0: all)."""
        with self.store.cond:
            self.store.faults.append(Fault(method, resource, subresource, name, code, count, 0.0, message))

    def fail_next_binds(self, count: int, code: int = 500) -> None:
        """Make the next ``count`` ``pods/binding`` requests fail with ``code``."""
        self.fail_next(count, code, method="POST", resource="pods", subresource="binding")

    def delay(
        self,
        seconds: float,
        count: int = -1,
        *,
        method: str | None = None,
        resource: str | None = None,
        subresource: str | None = None,
    ) -> None:
        """Delay the next ``count`` matching requests (count < 0: all) by ``seconds``."""
        with self.store.cond:
            self.store.faults.append(Fault(method, resource, subresource, None, 0, count, seconds))

    def clear_faults(self) -> None:
        """Forget every programmed failure and delay."""
        with self.store.cond:
            self.store.faults.clear()

    def drop_watches(self, abrupt: bool = True) -> None:
        """End every open watch stream now (abrupt: the connection is cut mid-stream)."""
        self.store.drop_watches(abrupt)

    def drop_watches_after(self, events: int | None) -> None:
        """Cut each watch opened from now on after it has sent ``events`` events (None: never)."""
        with self.store.cond:
            self.store.watch_event_budget = events

    def expire_history(self, drop_watches: bool = True) -> None:
        """Forget all events and list snapshots: any earlier resourceVersion now gets ``410 Gone``."""
        self.store.expire_history(drop_watches)

    def set_bookmark_interval(self, seconds: float) -> None:
        """How often a watch with ``allowWatchBookmarks`` gets a BOOKMARK when idle."""
        with self.store.cond:
            self.store.bookmark_interval = seconds

    def history(self, resource: str) -> list[tuple[str, str, str, int]]:
        """The kept watch events of a type as ``(type, namespace, name, resourceVersion)``, oldest first."""
        with self.store.cond:
            events = list(self.store.history[self.rt(resource).key].events)
        return [(e.type, e.namespace, e.new.obj["metadata"]["name"], e.rv) for e in events]

    def requests(self, method: str | None = None, contains: str = "") -> list[tuple[str, str, int]]:
        """The requests answered so far as ``(method, path with query, status code)``, filtered."""
        with self.store.cond:
            return [r for r in self.store.requests if (method is None or r[0] == method) and contains in r[1]]

    def clear_requests(self) -> None:
        """Forget the request log."""
        with self.store.cond:
            self.store.requests.clear()

    def write_kubeconfig(self, path: str | Path, namespace: str = "default") -> Path:
        """Write a kubeconfig pointing at this server (with its CA in TLS mode and its token
        when it has one) and return its path."""
        path = Path(path)
        cluster: dict[str, Any] = {"server": self.url}
        if self.ca_file is not None:
            cluster["certificate-authority-data"] = base64.b64encode(self.ca_file.read_bytes()).decode()
        user = {"token": self.token} if self.token is not None else {}
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "standin", "cluster": cluster}],
                    "users": [{"name": "standin", "user": user}],
                    "contexts": [
                        {
                            "name": "standin",
                            "context": {"cluster": "standin", "user": "standin", "namespace": namespace},
                        }
                    ],
                    "current-context": "standin",
                },
                indent=2,
            )
        )
        return path

    list = list_objects  # the short name; defined last so that "list" in annotations stays the builtin
