"""Reads agy's tmux pane (``capture-pane``): what agy's own terminal shows, one string per row."""

from __future__ import annotations

import asyncio
from typing import Any

import libtmux

from .plumbing import _check


class TmuxScreen:
    """The screen of one pane (a libtmux ``server``, or the default one)."""

    def __init__(self, target: str, server: Any = None) -> None:
        self.target = target
        self.server = server if server is not None else libtmux.Server()

    async def screen(self) -> list[str]:
        result = await asyncio.to_thread(self.server.cmd, "capture-pane", "-p", "-J", "-t", self.target)
        return _check(self.target, "capture-pane", result)
