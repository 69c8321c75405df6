"""The JSON-RPC errors ``agy-harness acp`` answers when agy is not there to talk to.

An editor shows a JSON-RPC error's ``message`` to its user, so each of these carries a whole
sentence that says what is wrong and what to do; ``data`` keeps a machine-readable ``reason`` and
the technical ``details``. The codes are in JSON-RPC's server-error range; ``-32002`` is ACP's own
"resource not found".

* no agy runs (for this user, at ``--port``, in ``--tmux``'s pane): ``-32001``, reason ``no_agy``
  (a port served by another user is named: discovery binds only the user's own agy);
* more than one agy answers: ``-32003``, reason ``ambiguous_agy`` (with the ports);
* the conversation is not on the agy that runs: ``-32002``, reason ``conversation_gone``;
* ``session/new`` whose ``cwd`` is not the directory agy works in: ``-32004``, reason
  ``other_workspace`` (with both paths);
* a session id this connection has not open (never opened, or closed): ``-32002`` (ACP's "resource
  not found"), reason ``unknown_session``.
"""

from __future__ import annotations

from acp import RequestError

from agy_harness.ports.errors import AgyAmbiguous, AgyNotFound

NO_AGY = -32001
CONVERSATION_GONE = -32002
AMBIGUOUS_AGY = -32003
OTHER_WORKSPACE = -32004

NO_AGY_SENTENCE = (
    "No agy is running for you: start agy in a terminal (or start agy-harness acp with --start-agy "
    "so that it starts one in tmux), then try again."
)


def no_agy(exc: BaseException | str, *, hint: str = "") -> RequestError:
    others = exc.others if isinstance(exc, AgyNotFound) else ()
    data: dict[str, object] = {"reason": "no_agy", "details": str(exc)}
    message = NO_AGY_SENTENCE
    if others:  # discovery's uid rule: another user's process listens there, and it was sent nothing
        ports = ", ".join(str(p) for p in others)
        message = (
            f"Port {ports} is served by another user of this machine, not by your agy: agy-harness "
            f"sent it nothing. {message}"
        )
        data["othersPorts"] = list(others)
    return RequestError(NO_AGY, message + (f" {hint}" if hint else ""), data)


def ambiguous_agy(exc: AgyAmbiguous) -> RequestError:
    ports = ", ".join(str(p) for p in exc.ports)
    return RequestError(
        AMBIGUOUS_AGY,
        f"More than one agy is running (ports {ports}) and agy-harness will not guess which one you "
        "mean: start agy-harness acp with --port N (or --tmux PANE for the agy in that tmux pane).",
        {"reason": "ambiguous_agy", "ports": list(exc.ports), "details": str(exc)},
    )


def conversation_gone(session_id: str, details: str) -> RequestError:
    return RequestError(
        CONVERSATION_GONE,
        f"agy has no conversation {session_id}: it was never on this agy, or agy was restarted "
        "without it. Start a new session (or list agy's conversations) instead.",
        {"reason": "conversation_gone", "sessionId": session_id, "details": details},
    )


def other_workspace(cwd: str, workspace: str) -> RequestError:
    return RequestError(
        OTHER_WORKSPACE,
        f"The agy running here works in {workspace}, not in {cwd}: agy works in the directory it was "
        f"started in. Open {workspace} in the editor, or start agy in {cwd} (in a terminal there, or "
        "with agy-harness acp --start-agy when no agy runs).",
        {"reason": "other_workspace", "cwd": cwd, "workspace": workspace},
    )


def unknown_session(session_id: str) -> RequestError:
    return RequestError(
        CONVERSATION_GONE,
        f"No session {session_id} is open here: it was closed, or never opened on this connection. "
        "Load it (session/load) or start a new session.",
        {"reason": "unknown_session", "sessionId": session_id},
    )


def agy_unreachable(exc: BaseException) -> RequestError:
    return RequestError(
        NO_AGY,
        f"agy did not answer ({type(exc).__name__}); it may be starting or stopping. Try again.",
        {"reason": "agy_unreachable", "details": str(exc)},
    )


__all__ = [
    "AMBIGUOUS_AGY",
    "CONVERSATION_GONE",
    "NO_AGY",
    "OTHER_WORKSPACE",
    "ambiguous_agy",
    "conversation_gone",
    "no_agy",
    "other_workspace",
    "unknown_session",
]
