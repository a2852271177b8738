"""The official ``kubernetes`` client, used lean: JSON in, JSON out.

The client's typed models cost about a millisecond per pod to build; the
adapter reads and writes plain JSON through the client's own
:class:`kubernetes.client.ApiClient` (its configuration, authentication and
connection pool) and parses it with :mod:`json`, which is what lets a start-up
list 50,000 pods in seconds.

Plain requests (binds, status writes, Events, lists) go one step further
when the configuration allows it (``http`` or ``https`` without a proxy, a
custom TLS server name or socket options): they are sent on keep-alive
:mod:`http.client` connections, one per thread, with the configuration's
CA, client certificate and token, which costs less than half the CPU of a
request through the client's pool (headers and body leave in one write).
Watches always use the client.
"""

from __future__ import annotations

import http.client
import json
import os
import select
import socket
import ssl
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote, urlencode, urlsplit

from volcanolib.errors import CacheError, ConfigError, MissingExtraError

__all__ = ["KUBE_EXTRA", "ApiError", "KubeApi", "import_kube", "load_api"]

#: What needs the client libraries, as errors name it.
KUBE_EXTRA: Final = "the Kubernetes adapter"
JSON: Final = "application/json"
MERGE_PATCH: Final = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"


def import_kube() -> Any:
    """Import and return the ``kubernetes`` package.

    :raises MissingExtraError: naming the extra to install when it is missing.
    """
    try:
        import kubernetes.client
        import kubernetes.config
    except ImportError:
        raise MissingExtraError("kube", "kubernetes", KUBE_EXTRA) from None
    return kubernetes


def import_prometheus() -> Any:
    """Import and return ``prometheus_client``.

    :raises MissingExtraError: naming the extra to install when it is missing.
    """
    try:
        import prometheus_client
        import prometheus_client.core
        import prometheus_client.utils
    except ImportError:
        raise MissingExtraError("kube", "prometheus-client", KUBE_EXTRA) from None
    return prometheus_client


class ApiError(CacheError):
    """The API server refused a request, or could not be reached (``status`` 0).

    :param status: the HTTP status (0 when there was no answer).
    :param message: the server's message, or the connection error.
    :param reason: the ``reason`` of the server's Status (``Conflict``, ``Expired``, ...).
    :param retry_after: seconds the server asked the client to wait (``Retry-After``), if it did.
    :param maybe_applied: with ``status`` 0, whether the request may have reached the server
        and taken effect (its answer was lost), rather than never having left.
    """

    def __init__(
        self,
        status: int,
        message: str,
        reason: str = "",
        *,
        retry_after: float | None = None,
        maybe_applied: bool = False,
    ) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after
        self.maybe_applied = maybe_applied and not status
        super().__init__(f"{status} {reason}: {message}" if status else message)


def _retry_after(header: str | None, body: Any) -> float | None:
    """The seconds of a ``Retry-After`` header, else of the Status's ``details.retryAfterSeconds``."""
    if header:
        try:
            return max(0.0, float(header))
        except ValueError:
            pass  # an HTTP date: the Status's details, if any, say it in seconds
    details = body.get("details") if isinstance(body, dict) else None
    seconds = details.get("retryAfterSeconds") if isinstance(details, dict) else None
    return float(seconds) if isinstance(seconds, (int, float)) and seconds >= 0 else None


def _status_error(status: int, data: bytes, retry_after: str | None = None) -> ApiError:
    try:
        body = json.loads(data)
    except ValueError:
        return ApiError(status, data.decode("utf-8", "replace")[:200], retry_after=_retry_after(retry_after, None))
    if isinstance(body, dict):
        return ApiError(
            status,
            str(body.get("message", "")),
            str(body.get("reason", "")),
            retry_after=_retry_after(retry_after, body),
        )
    return ApiError(status, str(body)[:200], retry_after=_retry_after(retry_after, None))


def _dropped(sock: socket.socket) -> bool:
    """Whether an idle kept-alive connection was closed by the server (it reads as ready: end of stream)."""
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        ready, _, _ = select.select([sock], [], [], 0)
        return bool(ready)
    except (OSError, ValueError):
        return True


#: Errors of a kept-alive connection the server closed while it was idle: an idempotent request is sent again, once.
#: A TLS connection whose server exited (an API server restarted) ends without a TLS close: SSLEOFError.
_STALE: Final = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ssl.SSLEOFError)


class _Direct:
    """Requests on :mod:`http.client` keep-alive connections, one per thread, as the client's configuration says.

    Build it with :meth:`for_client`, which returns ``None`` when the
    configuration needs what only the client's pool does (a proxy, a TLS
    server name other than the host, socket options).
    """

    def __init__(self, api_client: Any) -> None:
        cfg = api_client.configuration
        self.api_client = api_client
        self.configuration = cfg
        parts = urlsplit(cfg.host)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or "localhost"
        self.port = parts.port or (443 if self.https else 80)
        self.prefix = parts.path.rstrip("/")
        self.context: ssl.SSLContext | None = None
        if self.https:
            context = ssl.create_default_context(cafile=cfg.ssl_ca_cert, cadata=getattr(cfg, "ca_cert_data", None))
            if not cfg.verify_ssl:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            elif cfg.assert_hostname is False:
                context.check_hostname = False
            if cfg.cert_file:
                context.load_cert_chain(cfg.cert_file, cfg.key_file)
            self.context = context
        self._local = threading.local()

    @classmethod
    def for_client(cls, api_client: Any) -> _Direct | None:
        """The direct transport for this client, or ``None`` when its configuration needs the client's pool."""
        cfg = api_client.configuration
        scheme = urlsplit(str(cfg.host or "")).scheme
        if scheme not in ("http", "https") or getattr(cfg, "proxy", None):
            return None
        if getattr(cfg, "tls_server_name", None) or getattr(cfg, "socket_options", None) is not None:
            return None
        if getattr(cfg, "keep_alive", False) or getattr(cfg, "assert_hostname", None) not in (None, False):
            return None
        return cls(api_client)

    def headers(self, content_type: str | None) -> dict[str, str]:
        """What the client would send besides the body: its default headers, cookie and credentials."""
        client = self.api_client
        headers = {"Accept": JSON, **client.default_headers}
        if content_type is not None:
            headers["Content-Type"] = content_type
        if client.cookie:
            headers["Cookie"] = client.cookie
        for setting in self.configuration.auth_settings().values():  # refreshes an expiring token
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        return headers

    def _connection(self, connect: float | None) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self.https:
                conn = http.client.HTTPSConnection(self.host, self.port, timeout=connect, context=self.context)
            else:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=connect)
            self._local.conn = conn
        return conn

    def send(
        self,
        method: str,
        path: str,
        params: list[tuple[str, Any]],
        body: Any,
        content_type: str,
        timeout: float | tuple[float, float] | None,
        idempotent: bool = True,
    ) -> tuple[int, bytes, str | None]:
        """Send one request; return the status, the whole answer and its ``Retry-After`` header.

        A kept-alive connection the server closed while idle is noticed
        before it is used, and replaced. When it is closed under the
        request all the same, an ``idempotent`` request is sent again once
        on a new connection; any other is not (it may have taken effect).

        :raises ApiError: status 0 when there was no answer.
        """
        url = self.prefix + path
        if params:
            url += "?" + urlencode([(k, str(v)) for k, v in params], quote_via=quote)
        data = None if body is None else json.dumps(body).encode()
        headers = self.headers(content_type if body is not None else None)
        connect, read = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        for attempt in (0, 1):
            conn = self._connection(connect)
            if conn.sock is not None and _dropped(conn.sock):
                conn.close()
            reused = conn.sock is not None
            connected = reused
            try:
                if conn.sock is None:
                    conn.timeout = connect
                    conn.connect()
                    connected = True
                assert conn.sock is not None
                conn.sock.settimeout(read)
                conn.request(method, url, body=data, headers=headers)
                response = conn.getresponse()
                answer = response.read()
            except _STALE as exc:
                conn.close()
                if reused and not attempt and idempotent:
                    continue  # the server closed the idle connection: once more, on a new one
                message = f"{method} {path}: {type(exc).__name__}: {exc}"
                raise ApiError(0, message, maybe_applied=True) from exc
            except Exception as exc:  # refused, timed out, TLS: no answer
                conn.close()
                message = f"{method} {path}: {type(exc).__name__}: {exc}"
                raise ApiError(0, message, maybe_applied=connected) from exc
            return response.status, answer, response.getheader("Retry-After")
        raise AssertionError("unreachable")  # pragma: no cover


class KubeApi:
    """Requests to the API server through an official-client ``ApiClient``.

    :param api_client: a configured :class:`kubernetes.client.ApiClient`.
    :param direct: send plain requests on the adapter's own keep-alive
        connections when the configuration allows it (see the module); the
        answers are the same either way.
    """

    def __init__(self, api_client: Any, *, direct: bool = True) -> None:
        self.api_client = api_client
        self._direct = _Direct.for_client(api_client) if direct else None

    @property
    def direct(self) -> bool:
        """Whether plain requests go on the adapter's own connections."""
        return self._direct is not None

    def _send(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None,
        body: Any,
        content_type: str,
        timeout: float | tuple[float, float] | None,
    ) -> Any:
        client = self.api_client
        params = [(k, v) for k, v in (query or {}).items() if v is not None]
        headers = {"Accept": JSON}
        if body is not None:
            headers["Content-Type"] = content_type
        serialized = client.param_serialize(
            method, path, query_params=params, header_params=headers, body=body, auth_settings=["BearerToken"]
        )
        try:
            return client.call_api(*serialized, _request_timeout=timeout)
        except Exception as exc:  # connection refused, reset, timed out: no answer
            unsent = "NewConnectionError" in repr(exc) or "ConnectTimeoutError" in repr(exc)
            raise ApiError(0, f"{method} {path}: {type(exc).__name__}: {exc}", maybe_applied=not unsent) from exc

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float | tuple[float, float] | None = 30.0,
        idempotent: bool | None = None,
    ) -> Any:
        """Send one request and return the decoded JSON answer (``None`` when empty).

        :param idempotent: whether sending the request twice does no harm,
            so that it may be sent again when a kept-alive connection closes
            under it (default: any method but ``POST``).
        :raises ApiError: for any answer outside 2xx (with the server's
            ``Retry-After``, if any), or no answer (status 0).
        """
        direct = self._direct
        retry_after: str | None = None
        if direct is not None:
            params = [(k, v) for k, v in (query or {}).items() if v is not None]
            again = method != "POST" if idempotent is None else idempotent
            status, data, retry_after = direct.send(method, path, params, body, content_type, timeout, again)
        else:
            response = self._send(method, path, query, body, content_type, timeout)
            try:
                data = response.read()
            except Exception as exc:
                raise ApiError(0, f"{method} {path}: {type(exc).__name__}: {exc}", maybe_applied=True) from exc
            status = response.status
            if not 200 <= status < 300:
                retry_after = response.getheader("Retry-After")
        if not 200 <= status < 300:
            raise _status_error(status, data, retry_after)
        return json.loads(data) if data else None

    def stream(self, path: str, *, query: Mapping[str, Any], timeout: float) -> Any:
        """Open a watch and return the open response (read it with :func:`watch_lines`).

        :raises ApiError: for an answer outside 2xx (a 410 when the version is too old).
        """
        response = self._send("GET", path, query, None, JSON, (10.0, timeout))
        if not 200 <= response.status < 300:
            raise _status_error(response.status, response.read())
        return response.response


def watch_lines(response: Any) -> Iterator[bytes]:
    """The lines of a watch stream, one JSON event each, as the chunks arrive."""
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=False):
        buffer += chunk
        start = 0
        while True:
            end = buffer.find(b"\n", start)
            if end < 0:
                break
            if end > start:
                yield buffer[start:end]
            start = end + 1
        buffer = buffer[start:]
    if buffer.strip():
        yield buffer


def _default_kubeconfigs() -> tuple[list[str], str]:
    """The kubeconfig files read without ``--kubeconfig`` outside a cluster, as ``kubectl`` reads them, and why."""
    listed = [f for f in os.environ.get("KUBECONFIG", "").split(os.pathsep) if f]
    if listed:
        return listed, "named by KUBECONFIG"
    default = str(Path("~/.kube/config").expanduser())
    return [default], "the default kubeconfig, read outside a cluster without --kubeconfig or KUBECONFIG"


def load_api(kubeconfig: str | None = None, *, pool_size: int = 32) -> KubeApi:
    """Connect as ``kubectl`` would: the given kubeconfig, else in-cluster, else ``~/.kube/config``.

    :param kubeconfig: a kubeconfig file; ``None`` tries the pod's service
        account, then ``$KUBECONFIG`` or ``~/.kube/config``.
    :param pool_size: the most connections kept open to the API server.
    :raises ConfigError: naming the kubeconfig when it cannot be used.
    """
    kubernetes = import_kube()
    configuration = kubernetes.client.Configuration()
    source = kubeconfig
    try:
        if kubeconfig is not None:
            if not Path(kubeconfig).is_file():
                raise ConfigError("no such file", source=kubeconfig)
            kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        else:
            try:
                kubernetes.config.load_incluster_config(client_configuration=configuration)
            except kubernetes.config.ConfigException:
                files, why = _default_kubeconfigs()
                source = os.pathsep.join(files)
                if not any(Path(f).is_file() for f in files):
                    files_word = "file" if len(files) == 1 else "files"
                    raise ConfigError(f"no such {files_word} ({why})", source=", ".join(files)) from None
                kubernetes.config.load_kube_config(client_configuration=configuration)
    except ConfigError:
        raise
    except Exception as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        raise ConfigError(f"cannot use this kubeconfig: {message}", source=source or "kubeconfig") from None
    configuration.connection_pool_maxsize = pool_size
    return KubeApi(kubernetes.client.ApiClient(configuration))
