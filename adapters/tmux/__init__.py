"""tmux adapters: type a user turn into agy's TUI running in a tmux pane."""

from .errors import (
    ComposerNotReady,
    PaneNotFound,
    TmuxCommandFailed,
    TmuxError,
    TurnNotStarted,
    TurnUnconfirmed,
)
from .plumbing import find_pane_pid
from .screen import agy_composer, agy_ready, default_composer, default_ready, sim_composer, sim_ready
from .sender import TmuxTurnSender
from .text import turn_text

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
    "default_composer",
    "default_ready",
    "find_pane_pid",
    "sim_composer",
    "sim_ready",
    "turn_text",
]
