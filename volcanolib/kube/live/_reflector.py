"""List then watch one kind of object, for as long as it takes.

A :class:`Reflector` lists every object (in pages), hands the list to its
handler as the complete set, then watches from the list's
``resourceVersion``: bookmarks move the version on, a dropped stream is
reopened from the last version seen (after a back-off when it failed), and a
``410 Gone`` (the version is too old for the server) starts over with a
fresh list, which the handler reconciles with what it had, so that no object
is lost or counted twice. While the server does not answer, attempts are
spaced by a :class:`~volcanolib.kube.live._backoff.Backoff` (0.1 s doubling,
at most about a second), so that a server back from an outage is seen
within about a second; a refusal that will not go by itself (a CRD not
installed, a missing grant) is retried after 0.5 s doubling to 30 s.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from volcanolib._gc import gc_paused
from volcanolib.kube.live._backoff import Backoff
from volcanolib.kube.live._client import ApiError, KubeApi, watch_lines
from volcanolib.kube.live._writes import retryable

__all__ = ["Handler", "Reflector"]

log = logging.getLogger("volcanolib.kube.live")


class Handler(Protocol):
    """What a reflector feeds: the complete set after a list, then one change at a time."""

    def replace(self, items: list[dict[str, Any]]) -> None:
        """Make the known objects exactly ``items`` (a list, first or after a ``410``)."""

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        """Apply one watch event: ``ADDED``, ``MODIFIED`` or ``DELETED``."""


class _Gone(Exception):
    """The watch's resourceVersion is too old: list again."""


class Reflector:
    """Keeps one handler in step with one kind of object on the API server.

    :param api: the connection.
    :param kind: the kind's name, for logs and metrics (``pods``).
    :param path: the collection's path (``/api/v1/pods``).
    :param handler: receives the list and the events.
    :param query: extra query parameters for both list and watch (a field selector).
    :param page_size: objects per list page (``limit``).
    :param watch_timeout: seconds the server keeps one watch open before it is reopened.
    :param on_relist: called with the kind each time the reflector lists again.
    """

    def __init__(
        self,
        api: KubeApi,
        kind: str,
        path: str,
        handler: Handler,
        *,
        query: Mapping[str, str] | None = None,
        page_size: int = 5000,
        watch_timeout: int = 300,
        on_relist: Callable[[str], None] | None = None,
    ) -> None:
        self.api = api
        self.kind = kind
        self.path = path
        self.handler = handler
        self.query = dict(query or {})
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.on_relist = on_relist
        #: Set once the first list has been handed to the handler.
        self.synced = threading.Event()
        #: The last resourceVersion seen (from a list, an event or a bookmark).
        self.resource_version = ""
        #: How many times the kind was listed (1 after start-up; more after each ``410``).
        self.lists = 0
        #: The last list's seconds: fetching and decoding the pages, then applying them.
        self.list_seconds = (0.0, 0.0)
        #: How many watches were opened.
        self.watches = 0
        #: The waits between attempts the server did not answer (its ``history`` holds the last ones) ...
        self.backoff = Backoff()
        #: ... and between attempts it refused (a 404 for a CRD not installed, a 403).
        self.refusals = Backoff(first=0.5, cap=30.0)
        self._stop = threading.Event()
        self._response: Any = None
        self._got = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start listing and watching in a daemon thread."""
        self._thread = threading.Thread(target=self._run, name=f"reflector-{self.kind}", daemon=True)
        self._thread.start()

    def list_once(self) -> None:
        """List the kind once and hand the list to the handler, in this thread; no watch follows.

        :raises ApiError: when the API server refuses or does not answer.
        """
        self._list()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching: close the open stream and wait for the thread."""
        self._stop.set()
        response = self._response
        if response is not None:
            # shutdown() unblocks a read in progress (urllib3 2.3+); close() also frees the socket.
            for method in ("shutdown", "close"):
                with contextlib.suppress(Exception):
                    getattr(response, method)()
        if self._thread is not None:
            self._thread.join(timeout)

    # ------------------------------------------------------------------ the loop

    def _run(self) -> None:
        backoff = self.backoff
        need_list = True
        while not self._stop.is_set():
            wait = 0.0
            try:
                if need_list:
                    self._list()
                    need_list = False
                    backoff.reset()
                    self.refusals.reset()
                if self._watch():
                    backoff.reset()
            except _Gone:
                log.info("%s: resourceVersion %s expired, listing again", self.kind, self.resource_version)
                need_list = True
                continue
            except ApiError as exc:
                if exc.status == 410:
                    need_list = True
                    continue
                if self._stop.is_set():
                    return
                if retryable(exc):  # away or busy: back soon, or when it says
                    wait = max(backoff.next(), min(60.0, exc.retry_after or 0.0))
                    failures = backoff.failures
                else:  # it answered and refused: that will not go by itself
                    wait = self.refusals.next()
                    failures = self.refusals.failures
                if not failures & (failures - 1):  # the 1st, 2nd, 4th, 8th ... in a row
                    log.warning("%s: %s; retrying in %.2f s (failure %d in a row)", self.kind, exc, wait, failures)
            except Exception as exc:  # a stream cut mid-chunk, a decoding error: reconnect
                if self._stop.is_set():
                    return
                # A stream that delivered events before it broke reconnects at once; one that keeps failing backs off.
                if self._got:
                    backoff.reset()
                else:
                    wait = backoff.next()
                (log.warning if wait else log.info)(
                    "%s: watch failed (%s: %s); retrying in %.2f s", self.kind, type(exc).__name__, exc, wait
                )
            if wait:
                self._stop.wait(wait)

    def _list(self) -> None:
        self._got = False
        items: list[dict[str, Any]] = []
        cont = ""
        started = time.perf_counter()
        with gc_paused():
            while True:
                query: dict[str, Any] = dict(self.query, limit=self.page_size)
                if cont:
                    query["continue"] = cont
                page = self.api.request("GET", self.path, query=query, timeout=(10.0, 120.0))
                items.extend(page.get("items") or ())
                meta = page.get("metadata") or {}
                cont = meta.get("continue") or ""
                if not cont:
                    break
            self.resource_version = str(meta.get("resourceVersion") or "")
            fetched = time.perf_counter()
            self.handler.replace(items)
        self.list_seconds = (fetched - started, time.perf_counter() - fetched)
        self.lists += 1
        if self.lists > 1 and self.on_relist is not None:
            self.on_relist(self.kind)
        self.synced.set()

    def _watch(self) -> bool:
        """Watch until the stream ends; return whether any event arrived."""
        query = dict(
            self.query,
            watch="true",
            resourceVersion=self.resource_version,
            allowWatchBookmarks="true",
            timeoutSeconds=str(self.watch_timeout),
        )
        response = self.api.stream(self.path, query=query, timeout=self.watch_timeout + 30.0)
        self._response = response
        self.watches += 1
        got = self._got = False
        handler = self.handler
        try:
            for line in watch_lines(response):
                if self._stop.is_set():
                    break
                event = json.loads(line)
                kind = event.get("type")
                obj = event.get("object") or {}
                if kind == "ERROR":
                    code = obj.get("code")
                    if code == 410:
                        raise _Gone
                    raise ApiError(int(code or 0), str(obj.get("message", "")), str(obj.get("reason", "")))
                version = (obj.get("metadata") or {}).get("resourceVersion")
                if kind != "BOOKMARK":
                    handler.event(kind, obj)
                    got = self._got = True
                if version:
                    self.resource_version = str(version)
        finally:
            self._response = None
            with contextlib.suppress(Exception):  # closed under our feet by stop()
                response.release_conn()
        return got

    def wait_synced(self, timeout: float | None = None) -> bool:
        """Wait for the first list; return whether it was handed over."""
        return self.synced.wait(timeout)
