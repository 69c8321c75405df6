"""How agy's failures become the adapter's typed errors, said once: a non-2xx connect answer (its
status, or its JSON ``{"code", "message"}``), an end-of-stream trailer that carries an error, and a
transport failure (timeout or unreachable). agy's overloaded "input not registered" and a missing
method are told apart here and nowhere else."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agy_harness.core import safejson

from .errors import (
    RpcError,
    RpcInputNotRegistered,
    RpcMethodNotFound,
    RpcTimeout,
    RpcUnreachable,
    StreamBroken,
)

if TYPE_CHECKING:
    from .codec import Frame

_STATUS_CODES = {
    400: "internal",
    401: "unauthenticated",
    403: "permission_denied",
    404: "unimplemented",
    408: "deadline_exceeded",
    429: "unavailable",
    502: "unavailable",
    503: "unavailable",
    504: "unavailable",
}


def error_from_response(method: str, status: int, body: bytes) -> RpcError:
    """Map a non-2xx connect answer (JSON {"code","message"} or anything else) to a typed error."""
    code = _STATUS_CODES.get(status, "unknown")
    message = body[:500].decode(errors="replace").strip()
    try:
        parsed = safejson.loads(body)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        code = str(parsed.get("code") or code)
        message = str(parsed.get("message") or message)
    return make_error(method, status, code, message)


def make_error(method: str, status: int, code: str, message: str) -> RpcError:
    cls: type[RpcError] = RpcError
    if status == 404 or code == "unimplemented":
        cls = RpcMethodNotFound
    elif "input not registered" in message.lower():
        cls = RpcInputNotRegistered
    return cls(method, status, code, message)


def transport_error(method: str, exc: BaseException) -> RpcError:
    if isinstance(exc, TimeoutError):
        return RpcTimeout(method, 0, "deadline_exceeded", str(exc) or "deadline exceeded")
    return RpcUnreachable(method, 0, "unavailable", str(exc) or type(exc).__name__)


def raise_trailer(method: str, status: int, frame: Frame) -> None:
    if frame.bad is not None:
        raise StreamBroken(method, status, "internal", f"bad end-of-stream trailer: {frame.bad}")
    error = frame.trailer_error
    if error is not None:
        raise make_error(method, status, str(error.get("code") or "unknown"), str(error.get("message") or ""))
