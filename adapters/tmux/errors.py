"""The tmux adapter's errors. Everything but :class:`TurnNotStarted` is raised before anything is typed."""

from __future__ import annotations

from collections.abc import Sequence

from agy_harness.ports.errors import AgyHarnessError


class TmuxError(AgyHarnessError):
    """Base of the tmux adapter's errors (a member of the vocabulary, :mod:`agy_harness.ports.errors`)."""


class TmuxCommandFailed(TmuxError):
    def __init__(self, command: str, stderr: str) -> None:
        super().__init__(f"tmux {command} failed: {stderr or 'no error text'}")
        self.command = command
        self.stderr = stderr


class PaneNotFound(TmuxError):
    """The target pane (or the tmux server) does not exist."""

    def __init__(self, target: str, detail: str = "") -> None:
        super().__init__(f"tmux pane {target!r} not found" + (f": {detail}" if detail else ""))
        self.target = target


class ComposerNotReady(TmuxError):
    """The composer did not become ready (idle, empty) before the deadline; nothing was typed."""

    def __init__(self, target: str, reason: str, screen_tail: Sequence[str] = ()) -> None:
        tail = " | ".join(line for line in screen_tail if line.strip())
        super().__init__(
            f"composer of pane {target!r} not ready: {reason}" + (f" [screen: {tail}]" if tail else "")
        )
        self.target = target
        self.reason = reason
        self.screen_tail = list(screen_tail)


class TurnNotStarted(TmuxError):
    """The text was typed but no turn was seen starting within the deadline (after the retries)."""

    def __init__(self, target: str, reason: str, attempts: int, screen_tail: Sequence[str] = ()) -> None:
        tail = " | ".join(line for line in screen_tail if line.strip())
        super().__init__(
            f"turn in pane {target!r} not started after {attempts} attempt(s): {reason}"
            + (f" [screen: {tail}]" if tail else "")
        )
        self.target = target
        self.reason = reason
        self.attempts = attempts
        self.screen_tail = list(screen_tail)


class TurnUnconfirmed(TmuxError):
    """The pane shows a submitted turn but the step reader never saw a USER_INPUT with the text.

    Not raised by ``send`` (the turn is submitted: a caller's retry would submit it twice); it is
    logged and recorded in ``TmuxTurnSender.unconfirmed``. Usually the pane serves another cascade
    than the one asked for (a ``/clear`` happened, or the wrong pane).
    """

    def __init__(self, target: str, cascade_id: str, screen_tail: Sequence[str] = ()) -> None:
        tail = " | ".join(line for line in screen_tail if line.strip())
        super().__init__(
            f"pane {target!r} shows a submitted turn but no USER_INPUT with its text appeared on cascade "
            f"{cascade_id!r} (does the pane serve another cascade?)" + (f" [screen: {tail}]" if tail else "")
        )
        self.target = target
        self.cascade_id = cascade_id
        self.screen_tail = list(screen_tail)
