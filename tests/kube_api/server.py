"""The stand-in Kubernetes API server on a thread (:class:`KubeApiServer`), and the handle
tests use to look at and change its state or program faults."""

from __future__ import annotations

import base64
import contextlib
import json
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .errors import ApiError
from .handler import _Handler, _HTTPServer
from .records import Fault, Obj
from .resources import ResourceType
from .store import Store
from .tls import certificate, server_context

__all__ = ["KubeApiServer", "_Handler"]


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

    def bind(self, name: str, node: str, namespace: str = "default") -> None:
        """Bind a pod to a node, as another scheduler would (``pods/binding``)."""
        self.store.bind(namespace, name, {"target": {"name": node}})

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
        retry_after: int = 1,
    ) -> None:
        """Answer the next ``count`` matching requests with ``code`` and a ``Status`` (count < 0: all).

        A ``429`` or ``503`` carries ``Retry-After: retry_after`` (and ``details.retryAfterSeconds``).
        """
        fault = Fault(method, resource, subresource, name, code, count, 0.0, message, retry_after=retry_after)
        with self.store.cond:
            self.store.faults.append(fault)

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
        name: str | None = None,
    ) -> None:
        """Delay the next ``count`` matching requests (count < 0: all) by ``seconds``."""
        with self.store.cond:
            self.store.faults.append(Fault(method, resource, subresource, name, 0, count, seconds))

    def drop_answers(
        self,
        count: int = -1,
        *,
        method: str | None = None,
        resource: str | None = None,
        subresource: str | None = None,
        name: str | None = None,
        apply: bool = True,
    ) -> None:
        """Close the connections of the next ``count`` matching requests (count < 0: all)
        without answering, after applying them (``apply``: the client does not learn that
        they took effect) or without (they did not). The request log has them with the
        code they would have had, or 0 when not applied."""
        fault = Fault(method, resource, subresource, name, 0, count, drop_answer=True, apply=apply)
        with self.store.cond:
            self.store.faults.append(fault)

    def go_away(self) -> None:
        """Stop as a crashed API server would: new connections are refused and every open one
        is cut (watches mid-stream; a request in flight, held by :meth:`delay`, still takes
        effect when its delay is over, and its answer is lost). The objects are kept:
        :meth:`come_back` serves them again."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._httpd.cut_connections()
        self.store.drop_watches(abrupt=True)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def come_back(self) -> None:
        """Serve again on the same address, with the same objects (an API server restarted
        over the same etcd)."""
        old = self._httpd
        self._httpd = _HTTPServer(old.server_address[:2], self.store, old.tls, self.token)
        self.start()

    @contextlib.contextmanager
    def outage(self) -> Iterator[None]:
        """The API server is gone inside the block (:meth:`go_away`) and back after it."""
        self.go_away()
        try:
            yield
        finally:
            self.come_back()

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

    def timed_requests(self, method: str | None = None, contains: str = "") -> list[tuple[float, str, str, int]]:
        """As :meth:`requests`, each with the time it was answered first (``time.monotonic()``)."""
        with self.store.cond:
            pairs = zip(self.store.request_times, self.store.requests, strict=True)
            return [(t, *r) for t, r in pairs if (method is None or r[0] == method) and contains in r[1]]

    def clear_requests(self) -> None:
        """Forget the request log."""
        with self.store.cond:
            self.store.requests.clear()
            self.store.request_times.clear()

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

    def write_incluster_files(self, folder: str | Path) -> dict[str, str]:
        """Write what a pod's service account mount holds (``token``, ``ca.crt``,
        ``namespace``) into ``folder`` and return the environment a pod sees
        (``KUBERNETES_SERVICE_HOST`` and ``KUBERNETES_SERVICE_PORT``) plus the two file paths
        (``token_file``, ``ca_file``), for testing in-cluster configuration. Needs the
        ``tls`` and ``token`` options, as in a cluster.

        :raises ValueError: when the server has no TLS or no token.
        """
        if self.ca_file is None or self.token is None:
            raise ValueError("in-cluster configuration needs a server started with tls=True and a token")
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "token").write_text(self.token)
        (folder / "ca.crt").write_bytes(self.ca_file.read_bytes())
        (folder / "namespace").write_text("default")
        host, port = self._httpd.server_address[:2]
        return {
            "KUBERNETES_SERVICE_HOST": str(host),
            "KUBERNETES_SERVICE_PORT": str(port),
            "token_file": str(folder / "token"),
            "ca_file": str(folder / "ca.crt"),
        }

    list = list_objects  # the short name; defined last so that "list" in annotations stays the builtin
