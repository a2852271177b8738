"""The official ``kubernetes`` client, used lean: JSON in, JSON out.

The client's typed models cost about a millisecond per pod to build; the
adapter reads and writes plain JSON through the client's own
:class:`kubernetes.client.ApiClient` (its configuration, authentication and
connection pool) and parses it with :mod:`json`, which is what lets a start-up
list 50,000 pods in seconds.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

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
    except ImportError:
        raise MissingExtraError("kube", "prometheus-client", KUBE_EXTRA) from None
    return prometheus_client


class ApiError(CacheError):
    """The API server refused a request, or could not be reached (``status`` 0).

    :param status: the HTTP status (0 when there was no answer).
    :param message: the server's message, or the connection error.
    :param reason: the ``reason`` of the server's Status (``Conflict``, ``Expired``, ...).
    """

    def __init__(self, status: int, message: str, reason: str = "") -> None:
        self.status = status
        self.reason = reason
        self.message = message
        super().__init__(f"{status} {reason}: {message}" if status else message)


def _status_error(status: int, data: bytes) -> ApiError:
    try:
        body = json.loads(data)
    except ValueError:
        return ApiError(status, data.decode("utf-8", "replace")[:200])
    if isinstance(body, dict):
        return ApiError(status, str(body.get("message", "")), str(body.get("reason", "")))
    return ApiError(status, str(body)[:200])


class KubeApi:
    """Requests to the API server through an official-client ``ApiClient``.

    :param api_client: a configured :class:`kubernetes.client.ApiClient`.
    """

    def __init__(self, api_client: Any) -> None:
        self.api_client = api_client

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
            raise ApiError(0, f"{method} {path}: {type(exc).__name__}: {exc}") from exc

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float | tuple[float, float] | None = 30.0,
    ) -> Any:
        """Send one request and return the decoded JSON answer (``None`` when empty).

        :raises ApiError: for any answer outside 2xx, or no answer.
        """
        response = self._send(method, path, query, body, content_type, timeout)
        try:
            data = response.read()
        except Exception as exc:
            raise ApiError(0, f"{method} {path}: {type(exc).__name__}: {exc}") from exc
        if not 200 <= response.status < 300:
            raise _status_error(response.status, data)
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
                source = os.environ.get("KUBECONFIG") or str(Path("~/.kube/config").expanduser())
                kubernetes.config.load_kube_config(client_configuration=configuration)
    except ConfigError:
        raise
    except Exception as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        raise ConfigError(f"cannot use this kubeconfig: {message}", source=source or "kubeconfig") from None
    configuration.connection_pool_maxsize = pool_size
    return KubeApi(kubernetes.client.ApiClient(configuration))
