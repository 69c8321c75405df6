"""What the CLI says when a command fails: exit codes, and one readable line per kind of error."""

from __future__ import annotations

from agy_harness.ports.errors import (
    AgyAmbiguous,
    AgyCallFailed,
    AgyHarnessError,
    AgyNotFound,
    AgyUnreachable,
    NoTurnSender,
)

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2  # usage errors (argparse's own code) and bad input
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C

NO_AGY_HINT = (
    "Is agy running? Start it (or `agy-harness sim` for the simulator) and retry; "
    "--port N names its language-server port"
)
WRONG_CASCADE_HINT = (
    "Check the id, or leave out --cascade to take agy's most recent conversation "
    "(`agy-harness sim` starts a simulator of its own)"
)
NO_TMUX_TURNS = (
    "this agy takes no turns over RPC (versions before 1.0.10); "
    "pass --tmux PANE (agy's tmux pane, e.g. %3) to type turns into it"
)


class UserFacingError(AgyHarnessError, RuntimeError):
    """A failure whose message already says what to do; shown as it is."""


class BadInput(UserFacingError):
    """A file, value or combination of options the command cannot use: one line naming it and what to
    do, exit :data:`EXIT_USAGE` (as argparse's own usage errors)."""


def explain(exc: BaseException) -> str:
    """One line for a human: what failed and, where we know it, what to do. Read from the error
    vocabulary (:mod:`agy_harness.ports.errors`) alone: an adapter's own error is one of its types.
    Every failure exits :data:`EXIT_FAILURE` (argparse's usage errors and replay's bad input: 2)."""
    if isinstance(exc, UserFacingError):
        return str(exc)
    if isinstance(exc, AgyNotFound):
        if exc.wrong_cascade:  # agy runs: the conversation id is the problem
            return f"no agy found: {exc}. {WRONG_CASCADE_HINT}"
        return f"no agy found: {exc}. {NO_AGY_HINT}"
    if isinstance(exc, AgyAmbiguous):
        return f"more than one agy answers: {exc}"
    if isinstance(exc, AgyUnreachable):
        return f"agy's language server does not answer: {exc.message or exc}. {NO_AGY_HINT}"
    if isinstance(exc, AgyCallFailed):
        return f"agy refused a call: {exc}"
    if isinstance(exc, NoTurnSender):
        return NO_TMUX_TURNS
    if isinstance(exc, TimeoutError):
        return f"timed out{': ' + str(exc) if str(exc) else ''}"
    text = str(exc) or type(exc).__name__
    return f"{text} ({type(exc).__name__}; -vv logs the traceback)"
