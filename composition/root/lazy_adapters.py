"""The adapters the container (:mod:`.container`) builds only when a session needs them, each imported
late (tmux, agy's transcript, the decision ledger, the rules): a session that needs none of them never
loads them. Also the tmux lookups an entry point asks before it builds a container."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agy_harness.ports.policy import GatePolicy
from agy_harness.ports.protocols import DecisionLedger, StepSnapshot, StepSource, TurnSender

from .version_gate import Capabilities


def transcript_tail(caps: Capabilities) -> StepSource:
    from agy_harness.adapters.transcript.tail import TranscriptTailSource

    assert caps.transcript_root is not None  # selected only when the version gate found one
    return TranscriptTailSource(caps.transcript_root)


def tmux_sender(target: str, server: Any, step_reader: StepSnapshot) -> TurnSender:
    from agy_harness.adapters.tmux.sender import TmuxTurnSender

    return TmuxTurnSender(target, server=server, step_reader=step_reader)


def tui_keys(target: str | None, server: Any) -> Any:
    """agy's pane, to close its prompt after an RPC answer and to type "allow always" (None: unknown)."""
    if not target:
        return None
    from agy_harness.adapters.tmux.keys import TmuxKeys

    return TmuxKeys(target, server)


def tui_screen(target: str | None, server: Any) -> Any:
    """agy's pane, read to tell our terminal's /clear from another client's conversation (None: unknown)."""
    if not target:
        return None
    from agy_harness.adapters.tmux.pane_screen import TmuxScreen

    return TmuxScreen(target, server)


def default_ledger() -> DecisionLedger:
    """This install's file ledger (this process's one writer for it)."""
    from agy_harness.adapters.store.ledger_file import shared_ledger

    return shared_ledger()


def session_rules(workspace: str | None) -> GatePolicy:
    """The rules that answer gates for the human, read once for the session from their tiers
    (:mod:`agy_harness.adapters.policy.files`; the project tier is ``workspace``, default the current
    directory). Files that fail turn the rules off: everything is asked, and the session says why."""
    from agy_harness.adapters.policy.files import load_policy

    return load_policy(Path(workspace) if workspace else None)


def pane_process(tmux_target: str) -> int:
    """The process running in agy's tmux pane ``tmux_target`` (``pane_pid=`` narrows discovery to
    it); raises when there is no such pane."""
    from agy_harness.adapters.tmux import find_pane_pid

    return find_pane_pid(tmux_target)


def default_tmux_server() -> Any:
    """The user's default tmux server named by its socket (a libtmux.Server), whatever ``TMUX`` this
    process inherited: where an entry point starts agy for the user (``tmux attach`` reaches it)."""
    from agy_harness.adapters.tmux.plumbing import default_server

    return default_server()
