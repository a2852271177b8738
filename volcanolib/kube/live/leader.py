"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go's elector does it.

One replica holds the Lease and renews it every ``retry_period``; the others
try as often and take it over only when its holder has not renewed it for
``lease_duration`` (measured on their own clock, from when they last saw it
change). A holder that cannot renew within ``renew_deadline`` (shorter than
the lease duration) stops writing at once, before anyone else may take the
Lease over, so two replicas never write at the same time.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from typing import Any

from volcanolib.kube.live._client import ApiError, KubeApi

__all__ = ["LeaseElector"]

log = logging.getLogger("volcanolib.kube.live")


def _micro_time(when: float) -> str:
    """A Lease's MicroTime (RFC 3339 with microseconds, UTC)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(when)) + f".{int(when % 1 * 1e6):06d}Z"


class LeaseElector:
    """Holds or waits for one Lease.

    :param api: the connection.
    :param namespace: the Lease's namespace.
    :param name: the Lease's name (Volcano's is ``volcano``).
    :param identity: this replica's name in the Lease (default ``<hostname>_<uuid>``).
    :param lease_duration: seconds a Lease stays with a holder that stopped renewing.
    :param renew_deadline: seconds a holder keeps leading without a successful renewal.
    :param retry_period: seconds between two attempts to acquire or renew.
    """

    def __init__(
        self,
        api: KubeApi,
        namespace: str,
        name: str = "volcano",
        *,
        identity: str | None = None,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
    ) -> None:
        if not retry_period < renew_deadline < lease_duration:
            raise ValueError("leader election needs retry_period < renew_deadline < lease_duration")
        self.api = api
        self.namespace = namespace
        self.name = name
        self.identity = identity or f"{socket.gethostname()}_{uuid.uuid4()}"
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._renewed = -float("inf")  # monotonic time of the last successful acquire or renewal
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self.lost = threading.Event()
        self._leading = False
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    @property
    def path(self) -> str:
        """The Lease's API path."""
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases/{self.name}"

    def is_leader(self) -> bool:
        """Whether this replica holds the Lease and renewed it less than ``renew_deadline`` ago."""
        return self._leading and time.monotonic() - self._renewed < self.renew_deadline

    def try_acquire_or_renew(self) -> bool:
        """One attempt: take the Lease if it is free or expired, renew it if it is ours."""
        now_wall = time.time()
        now = time.monotonic()
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.lease_duration) or 1,
            "renewTime": _micro_time(now_wall),
        }
        try:
            lease = self.api.request("GET", self.path)
        except ApiError as exc:
            if exc.status != 404:
                log.warning("leader election: cannot read Lease %s/%s: %s", self.namespace, self.name, exc)
                return False
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": dict(spec, acquireTime=_micro_time(now_wall), leaseTransitions=0),
            }
            try:
                self.api.request("POST", f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases", body=body)
            except ApiError:
                return False
            self._renewed = now
            return True
        old = lease.get("spec") or {}
        holder = old.get("holderIdentity") or ""
        record = (holder, old.get("renewTime"), old.get("acquireTime"), old.get("leaseTransitions"))
        if record != self._observed:
            self._observed = record
            self._observed_at = now
        duration = float(old.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and self._observed_at + duration > now:
            return False  # held by another replica, which renewed it lately
        new_spec = dict(old, **spec)
        if holder != self.identity:
            new_spec["acquireTime"] = _micro_time(now_wall)
            new_spec["leaseTransitions"] = int(old.get("leaseTransitions") or 0) + 1
        lease["spec"] = new_spec
        try:
            self.api.request("PUT", self.path, body=lease)  # carries the resourceVersion read: a race gives 409
        except ApiError:
            return False
        self._renewed = now
        return True

    def start(self) -> None:
        """Start trying to lead, and renewing once leading, in a daemon thread."""
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
        self._thread.start()

    def wait_leading(self, stop: threading.Event) -> bool:
        """Block until this replica leads (``True``) or ``stop`` is set (``False``)."""
        while not stop.is_set():
            if self.is_leader():
                return True
            stop.wait(min(0.1, self.retry_period))
        return False

    def _run(self) -> None:
        while not self._stop.is_set():
            ok = self.try_acquire_or_renew()
            if ok and not self._leading:
                log.warning("leader election: %s now leads (Lease %s/%s)", self.identity, self.namespace, self.name)
                self._leading = True
            elif self._leading and time.monotonic() - self._renewed >= self.renew_deadline:
                log.error("leader election: Lease %s/%s lost", self.namespace, self.name)
                self._leading = False
                self.lost.set()
                return
            self._stop.wait(self.retry_period)

    def stop(self, *, release: bool = True) -> None:
        """Stop renewing; with ``release``, give the Lease up so another replica may lead at once."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.retry_period + 5)
        if release and self.is_leader():
            self._leading = False
            try:
                lease = self.api.request("GET", self.path)
                spec = lease.get("spec") or {}
                if spec.get("holderIdentity") == self.identity:
                    spec["holderIdentity"] = ""
                    spec["leaseDurationSeconds"] = 1
                    spec["renewTime"] = _micro_time(time.time())
                    lease["spec"] = spec
                    self.api.request("PUT", self.path, body=lease)
            except ApiError as exc:
                log.info("leader election: Lease not released: %s", exc)
        self._leading = False
