"""Typed errors of the RPC adapters, each a member of the library's vocabulary
(:mod:`agy_harness.ports.errors`): callers outside this package catch the vocabulary's types."""

from __future__ import annotations

from collections.abc import Sequence

from agy_harness.ports.errors import (
    AgyAmbiguous,
    AgyCallFailed,
    AgyHarnessError,
    AgyNotBound,
    AgyNotFound,
    AgyUnreachable,
    MethodMissing,
    SourceIdle,
)


class CodecError(AgyCallFailed):
    """The envelope stream itself is unusable (cannot resynchronise)."""


class TruncatedStreamError(CodecError):
    """EOF inside a frame: ``pending`` bytes of a partial envelope were left over."""

    def __init__(self, pending: int) -> None:
        super().__init__(f"stream ended inside a frame ({pending} bytes left over)")
        self.pending = pending


class FrameTooLargeError(CodecError):
    """An envelope declared a length above the decoder's limit."""

    def __init__(self, length: int, limit: int) -> None:
        super().__init__(f"frame of {length} bytes exceeds the {limit} byte limit")
        self.length = length
        self.limit = limit


class NonLoopbackError(AgyHarnessError, ValueError):
    """A base URL whose host is not a loopback address (refused before any byte is sent)."""


class RpcError(AgyCallFailed):
    """A failed RPC: a connect error body, an unusable response, or a transport failure (status 0)."""

    def __init__(self, method: str, status: int, code: str, message: str) -> None:
        super().__init__(f"{method}: HTTP {status} {code}: {message}")
        self.method = method
        self.status = status
        self.code = code
        self.message = message


class RpcMethodNotFound(RpcError, MethodMissing):
    """HTTP 404 / ``unimplemented``: this agy does not have the method."""


class RpcInputNotRegistered(RpcError):
    """HTTP 500 "input not registered for step N"."""


class RpcBadResponse(RpcError):
    """A 2xx answer that is not a JSON object."""


class RpcUnreachable(RpcError, AgyUnreachable):
    """No HTTP answer at all (connection refused/reset, TLS failure, timeout). ``status`` is 0."""


class RpcTimeout(RpcUnreachable):
    """The call's deadline passed."""


class StreamBroken(RpcError):
    """A server-stream ended without its end-of-stream trailer (EOF, reset, truncated frame)."""


class CompressedFrameRefused(RpcError):
    """The server sent a compressed envelope although we never offered compression."""


class StreamIdle(SourceIdle):
    """The stream was silent past its idle deadline while the cascade was running: re-open it."""

    def __init__(self, cascade_id: str, idle_seconds: float) -> None:
        super().__init__(f"stream for {cascade_id} silent for {idle_seconds:.1f}s while running")
        self.cascade_id = cascade_id
        self.idle_seconds = idle_seconds


class DiscoveryError(AgyNotBound):
    """Port discovery could not bind a port."""


class NoAgyFound(DiscoveryError, AgyNotFound):
    """No candidate port answered for our cascade (``wrong_cascade``: a live agy answered, but it
    hosts other conversations: the id is the problem, not agy). ``others``: ports found whose socket
    is another user's (nothing was sent to them), so that a caller can say why they were not taken."""

    def __init__(self, message: str, others: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.others = others

    @classmethod
    def instead(
        cls,
        port: int | None,
        cascade_id: str | None,
        probed: Sequence[int],
        foreign: Sequence[int],
        strangers: Sequence[int] = (),
    ) -> NoAgyFound:
        """What discovery found instead of our agy, in the user's words (ports, not "candidates")."""
        others = f"; {_ports(strangers)} served by another user, not by you: not asked" if strangers else ""
        if foreign:  # a live agy, just not the one hosting this conversation
            error = cls(f"the agy on {_ports(foreign)} does not host conversation {cascade_id}{others}")
            error.wrong_cascade = True
        elif strangers:
            error = cls(others[2:])
        elif port is not None:
            error = cls(f"nothing answers as agy on 127.0.0.1:{port}")
        elif not probed:
            error = cls("no agy process is running")
        else:
            error = cls(f"no agy language server answers on the ports agy listens on ({list(probed)})")
        error.others = tuple(strangers)
        return error


def _ports(numbers: Sequence[int]) -> str:
    return f"port {numbers[0]}" if len(numbers) == 1 else f"ports {list(numbers)}"


class AmbiguousAgy(DiscoveryError, AgyAmbiguous):
    """More than one port answered; refusing to guess."""

    def __init__(self, message: str, ports: list[int]) -> None:
        super().__init__(message)
        self.ports = ports
