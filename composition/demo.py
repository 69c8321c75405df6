"""``agy-harness demo`` and ``agy-harness attach`` (wired in a later step)."""

from __future__ import annotations

import argparse
from typing import Any


def add_demo_commands(sub: Any) -> None:
    del sub


def _unused(args: argparse.Namespace) -> int:
    return 0
