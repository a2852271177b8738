"""API errors, answered as ``Status`` objects with the API server's reasons and wording."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An error the stand-in answers with an HTTP status and a ``Status`` body.

    :param code: HTTP status code.
    :param reason: the ``Status.reason`` (``NotFound``, ``Conflict``, ``Expired`` ...).
    :param message: the ``Status.message``.
    :param details: the ``Status.details`` (name, group, kind, causes).
    """

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}
        self.retry_after: int | None = None

    def status(self) -> dict[str, Any]:
        """The ``Status`` object sent as the response body."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def _details(group: str, plural: str, name: str) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name, "kind": plural}
    if group:
        d["group"] = group
    return d


def _qualified(group: str, plural: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(group: str, plural: str, name: str) -> ApiError:
    """``404 NotFound``: ``pods "x" not found``."""
    return ApiError(404, "NotFound", f'{_qualified(group, plural)} "{name}" not found', _details(group, plural, name))


def already_exists(group: str, plural: str, name: str) -> ApiError:
    """``409 AlreadyExists``: ``pods "x" already exists``."""
    return ApiError(
        409, "AlreadyExists", f'{_qualified(group, plural)} "{name}" already exists', _details(group, plural, name)
    )


def conflict(group: str, plural: str, name: str, why: str) -> ApiError:
    """``409 Conflict``: ``Operation cannot be fulfilled on pods "x": <why>``."""
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(group, plural)} "{name}": {why}',
        _details(group, plural, name),
    )


STALE = "the object has been modified; please apply your changes to the latest version and try again"


def invalid(kind: str, group: str, plural: str, name: str, field: str, why: str) -> ApiError:
    """``422 Invalid``: ``Pod "x" is invalid: <field>: <why>``."""
    details = _details(group, plural, name)
    details["causes"] = [{"reason": "FieldValueInvalid", "message": why, "field": field}]
    return ApiError(422, "Invalid", f'{kind} "{name}" is invalid: {field}: {why}', details)


def bad_request(message: str) -> ApiError:
    """``400 BadRequest``."""
    return ApiError(400, "BadRequest", message)


def expired(message: str) -> ApiError:
    """``410 Expired`` (reason ``Expired``, as for a too old resourceVersion or continue token)."""
    return ApiError(410, "Expired", message)


def too_many_requests(message: str, causes: list[dict[str, str]] | None = None) -> ApiError:
    """``429 TooManyRequests``, as for an eviction a PodDisruptionBudget forbids."""
    return ApiError(429, "TooManyRequests", message, {"causes": causes} if causes else None)


def internal(message: str) -> ApiError:
    """``500 InternalError``."""
    return ApiError(500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]})


def success(code: int = 201) -> dict[str, Any]:
    """A ``Status`` with ``status: Success`` (the answer to a binding or an eviction)."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}
