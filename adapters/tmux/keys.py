"""Types keys into agy's tmux pane: the digits, Enter and Escape that answer its own prompt
(:mod:`agy_harness.core.tui_keys`). Anything else is refused: no text agy controls is ever typed."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

import libtmux

from .plumbing import _check

_ALLOWED = re.compile(r"^(?:[0-9]{1,3}|Enter|Escape)$")


class TmuxKeys:
    """``send-keys -t TARGET KEY...`` for one pane (a libtmux ``server``, or the default one)."""

    def __init__(self, target: str, server: Any = None) -> None:
        self.target = target
        self.server = server if server is not None else libtmux.Server()

    async def send_keys(self, keys: Sequence[str]) -> None:
        bad = [k for k in keys if not _ALLOWED.match(k)]
        if bad:
            raise ValueError(f"refusing to type {bad!r} into agy's pane (only digits, Enter, Escape)")
        for key in keys:  # one at a time: agy's menu reacts to each
            result = await asyncio.to_thread(self.server.cmd, "send-keys", "-t", self.target, key)
            _check(self.target, "send-keys", result)
