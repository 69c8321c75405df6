"""tmux adapters: type a user turn into agy's TUI running in a tmux pane."""

from .sender import (
    ComposerNotReady,
    PaneNotFound,
    TmuxCommandFailed,
    TmuxError,
    TmuxTurnSender,
    TurnNotStarted,
    TurnUnconfirmed,
    agy_composer,
    agy_ready,
    clean_text,
    default_composer,
    default_ready,
    find_pane_pid,
    sim_composer,
    sim_ready,
)

__all__ = [
    "ComposerNotReady",
    "PaneNotFound",
    "TmuxCommandFailed",
    "TmuxError",
    "TmuxTurnSender",
    "TurnNotStarted",
    "TurnUnconfirmed",
    "agy_composer",
    "agy_ready",
    "clean_text",
    "default_composer",
    "default_ready",
    "find_pane_pid",
    "sim_composer",
    "sim_ready",
]
