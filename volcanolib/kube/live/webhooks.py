"""Volcano's admission as Kubernetes admission webhooks: ``volcanolib serve --webhooks``.

:func:`review` answers one ``admission.k8s.io/v1`` AdmissionReview with the
rules of :mod:`volcanolib.manifests.admission`, on the paths of Volcano's
webhook manager:

* ``/jobs/validate``, ``/queues/validate``, ``/podgroups/validate``: the
  object is allowed, or refused with ``status.code`` 400 and a message
  naming the object and the field;
* ``/jobs/mutate``, ``/queues/mutate``, ``/podgroups/mutate``: the object is
  allowed with a JSON Patch turning it into its defaulted form (none when it
  has its defaults already).

Jobs and PodGroups are judged on CREATE, Queues on CREATE and UPDATE, as
Volcano's webhooks are registered; any other operation is allowed. The
checks that read other objects (a Job's or a PodGroup's queue, a Queue's
parent and children, a namespace's queue annotation) are not made: the
webhook reads nothing from the cluster.

:func:`serve_webhooks` serves :func:`review` over HTTPS.
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
from collections.abc import Callable, Mapping
from http.server import ThreadingHTTPServer
from typing import Any, Final

from volcanolib.errors import ConfigError, ManifestError
from volcanolib.manifests import admission
from volcanolib.manifests.fields import Ref

__all__ = ["MAX_BODY", "OPERATIONS", "PATHS", "ReviewError", "review", "serve_webhooks", "tls_context"]

log = logging.getLogger("volcanolib.kube.live")

#: The largest AdmissionReview read, in bytes (the API server sends at most about 3 MiB of object).
MAX_BODY: Final = 8 << 20

_VOLCANO_BATCH: Final = "batch.volcano.sh"
_VOLCANO_SCHEDULING: Final = "scheduling.volcano.sh"

#: Each path served: the group and kind it judges, and whether it mutates (else it validates).
PATHS: Final[Mapping[str, tuple[str, str, bool]]] = {
    "/jobs/validate": (_VOLCANO_BATCH, "Job", False),
    "/jobs/mutate": (_VOLCANO_BATCH, "Job", True),
    "/queues/validate": (_VOLCANO_SCHEDULING, "Queue", False),
    "/queues/mutate": (_VOLCANO_SCHEDULING, "Queue", True),
    "/podgroups/validate": (_VOLCANO_SCHEDULING, "PodGroup", False),
    "/podgroups/mutate": (_VOLCANO_SCHEDULING, "PodGroup", True),
}

#: The operations validated, by kind (Volcano's registrations); others are allowed. Mutation is on CREATE only.
OPERATIONS: Final = {"Job": ("CREATE",), "Queue": ("CREATE", "UPDATE"), "PodGroup": ("CREATE",)}


class ReviewError(Exception):
    """A request that is no AdmissionReview this webhook can answer: ``status`` is the HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message
        super().__init__(message)


def review(path: str, body: Any, *, scheduler_name: str = "volcano") -> dict[str, Any]:
    """The AdmissionReview answering ``body`` (a decoded AdmissionReview) on the webhook ``path``.

    An object of another kind than the path's, or one that is not a mapping,
    is refused (``allowed: false``, code 400) with a message saying so.

    :param path: one of :data:`PATHS`.
    :param scheduler_name: the scheduler name a Job without one is given.
    :raises ReviewError: 404 for a path not served, 400 for a body that is no
        ``admission.k8s.io/v1`` AdmissionReview with a ``request.uid``.
    """
    if path not in PATHS:
        raise ReviewError(404, f"no webhook at {path!r} (served: {', '.join(PATHS)})")
    group, kind, mutate = PATHS[path]
    if not isinstance(body, dict) or body.get("kind") != "AdmissionReview":
        raise ReviewError(400, "expected an AdmissionReview object")
    if body.get("apiVersion") != "admission.k8s.io/v1":
        raise ReviewError(400, f"apiVersion: expected admission.k8s.io/v1, got {body.get('apiVersion')!r}")
    request = body.get("request")
    if not isinstance(request, dict):
        raise ReviewError(400, "request: expected a mapping")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise ReviewError(400, "request.uid: expected a non-empty string")
    response: dict[str, Any] = {"uid": uid, "allowed": True}
    answer = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
    requested = request.get("kind")
    got = (requested.get("group"), requested.get("kind")) if isinstance(requested, dict) else (None, None)
    if got != (group, kind):
        return _refuse(answer, f"{path} judges {kind} objects of {group}, got request.kind {requested!r}")
    if request.get("operation") not in (("CREATE",) if mutate else OPERATIONS[kind]):
        return answer
    obj = request.get("object")
    if not isinstance(obj, dict):
        return _refuse(answer, "request.object: expected a mapping")
    namespace = str(request.get("namespace") or "")
    try:
        if mutate:
            defaulted = _default(kind, obj, scheduler_name)
            patch = _patch(obj, defaulted, "")
            if patch:
                response["patchType"] = "JSONPatch"
                response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
        else:
            _validate(kind, obj, namespace, scheduler_name)
    except ManifestError as exc:
        return _refuse(answer, str(exc))
    return answer


def _default(kind: str, obj: Mapping[str, Any], scheduler_name: str) -> dict[str, Any]:
    if kind == "Job":
        return admission.default_job(obj, scheduler_name=scheduler_name)
    if kind == "Queue":
        return admission.default_queue(obj)
    return admission.default_pod_group(obj)


def _validate(kind: str, obj: Mapping[str, Any], namespace: str, scheduler_name: str) -> None:
    """Raise the admission module's error for ``obj``, judged after its defaults (as the API server does)."""
    meta = obj.get("metadata")
    name = str(meta.get("name") or "") if isinstance(meta, dict) else ""
    if isinstance(meta, dict) and not namespace:
        namespace = str(meta.get("namespace") or "")
    if kind == "Job":
        admission.admit_job(obj, Ref(None, "", kind, name, namespace or "default"), scheduler_name=scheduler_name)
    elif kind == "Queue":
        admission.validate_queue(admission.default_queue(obj), Ref(None, "", kind, name), created=True)
    else:
        ref = Ref(None, "", kind, name, namespace or "default")
        admission.validate_pod_group(admission.default_pod_group(obj), ref)


def _refuse(answer: dict[str, Any], message: str) -> dict[str, Any]:
    answer["response"]["allowed"] = False
    answer["response"]["status"] = {"code": 400, "reason": "BadRequest", "message": message}
    return answer


def _patch(old: Any, new: Any, pointer: str) -> list[dict[str, Any]]:
    """JSON Patch operations turning ``old`` into ``new``: mappings member by member, any other value whole."""
    if isinstance(old, dict) and isinstance(new, dict):
        ops: list[dict[str, Any]] = []
        for key in old.keys() - new.keys():
            ops.append({"op": "remove", "path": f"{pointer}/{_escape(key)}"})
        for key, value in new.items():
            if key not in old:
                ops.append({"op": "add", "path": f"{pointer}/{_escape(key)}", "value": value})
            elif old[key] != value:
                ops.extend(_patch(old[key], value, f"{pointer}/{_escape(key)}"))
        return ops
    if old == new:
        return []
    return [{"op": "replace", "path": pointer, "value": new}]


def _escape(key: str) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def tls_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    """A server's TLS context presenting the PEM certificate (chain) ``cert_file`` with its key ``key_file``.

    :raises ConfigError: naming ``--tls-cert-file`` or ``--tls-private-key-file`` when a file
        cannot be read, or both when they are not a certificate and its key.
    """
    for flag, name in (("--tls-cert-file", cert_file), ("--tls-private-key-file", key_file)):
        try:
            with open(name, "rb"):
                pass
        except OSError as exc:
            raise ConfigError(exc.strerror or str(exc), key=flag, source=name) from None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert_file, key_file)
    except (ssl.SSLError, ValueError) as exc:
        raise ConfigError(
            f"not a PEM certificate and its private key ({exc})", key="--tls-cert-file, --tls-private-key-file"
        ) from None
    return context


def serve_webhooks(
    host: str, port: int, context: ssl.SSLContext, *, scheduler_name: str = "volcano"
) -> ThreadingHTTPServer:
    """Serve :func:`review` over HTTPS on ``host:port`` in a daemon thread; return the server.

    A POST of an AdmissionReview to one of :data:`PATHS` is answered with an
    AdmissionReview; a request that is none is answered ``{"status": code,
    "error": message}`` with that HTTP status.

    :param context: the server's TLS context (:func:`tls_context`).
    :raises ConfigError: naming ``--webhook-address`` when it cannot be listened on.
    """
    from volcanolib.kube.live.inspect import InspectionError, request_body
    from volcanolib.kube.live.metrics import json_reply, serve_routes

    def route(method: str, target: str, header: Callable[[str], str | None], read: Callable[[int], bytes]) -> Any:
        path = target.split("?", 1)[0]
        if path not in PATHS:
            return None
        try:
            if method != "POST":
                raise ReviewError(405, f"{method} {path}: only POST is served")
            try:
                body = json.loads(request_body(header, read, MAX_BODY))
            except ValueError as exc:
                raise ReviewError(400, f"the body is not JSON: {exc}") from None
            return json_reply(200, review(path, body, scheduler_name=scheduler_name))
        except (ReviewError, InspectionError) as exc:
            return json_reply(exc.status, {"status": exc.status, "error": exc.message})
        except Exception as exc:  # a bug: an answer all the same, and a log line
            log.exception("%s %s failed", method, path)
            return json_reply(500, {"status": 500, "error": f"{type(exc).__name__}: {exc}"})

    return serve_routes(
        host, port, [route], max_body=MAX_BODY, flag="--webhook-address", name="webhooks-https", tls=context
    )
