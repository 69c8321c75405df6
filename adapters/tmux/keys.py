"""agy's tmux pane: what its prompt shows (``capture-pane``), and the digits, Enter and Escape that
answer it (:mod:`agy_harness.core.tui_keys`). Any other key is refused: no text agy controls is ever
typed."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

import libtmux

from agy_harness.ports.events import GateOpened

from .pane_screen import TmuxScreen
from .plumbing import _check
from .screen import prompt_shown

_ALLOWED = re.compile(r"^(?:[0-9]{1,3}|Enter|Escape)$")


class TmuxKeys:
    """``send-keys -t TARGET KEY...`` for one pane (a libtmux ``server``, or the default one)."""

    def __init__(self, target: str, server: Any = None) -> None:
        self.target = target
        self.server = server if server is not None else libtmux.Server()

    async def shows_prompt(self, gate: GateOpened) -> bool:
        lines = await TmuxScreen(self.target, self.server).screen()
        return prompt_shown([row.rstrip() for row in lines], gate)

    async def send_keys(self, keys: Sequence[str]) -> None:
        bad = [k for k in keys if not _ALLOWED.match(k)]
        if bad:
            raise ValueError(f"refusing to type {bad!r} into agy's pane (only digits, Enter, Escape)")
        for key in keys:  # one at a time: agy's menu reacts to each
            result = await asyncio.to_thread(self.server.cmd, "send-keys", "-t", self.target, key)
            _check(self.target, "send-keys", result)
