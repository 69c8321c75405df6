"""The installed ``agy-harness`` command's module (``python -m agy_harness.composition.cli`` too); the
command itself is :mod:`.entrypoints.cli`."""

from __future__ import annotations

from .entrypoints.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
