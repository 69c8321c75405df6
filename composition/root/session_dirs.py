"""Where the ACP agent keeps its sessions' directories (the root wires the adapter for the entry point)."""

from __future__ import annotations

from agy_harness.adapters.store.session_cwds import SessionCwds

__all__ = ["SessionCwds"]
