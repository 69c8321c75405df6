"""Every agy language server of this user, each with what a reader of it needs (no session): the
servers ``agy-harness board`` lists. Built here, like everything that reaches agy.

Servers are found by the rules ``attach`` uses (:mod:`agy_harness.adapters.rpc.discovery`): agy's own
log line first (:mod:`~agy_harness.adapters.rpc.agy_log`), then the loopback ports its processes
listen on; a port counts only when it answers ``Heartbeat`` over TLS as the user's own agy (agy's
plain-HTTP port does not, nor another user's socket).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agy_harness.adapters.rpc.actions import RpcCascadeDirectory, RpcModelCatalog
from agy_harness.adapters.rpc.agy_log import logged_endpoints
from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.discovery import Candidate, PsutilScanner, Verdict, candidates, probe
from agy_harness.adapters.rpc.sources import RpcPollSource
from agy_harness.ports.protocols import CascadeDirectory, ModelCatalog, StepSnapshot

from .dependency_injection import containers, providers


@dataclass
class AgyServer:
    """One verified agy server: its conversations (``directory``, unshared: one listing a tick is the
    board's own), their steps (``snapshot``), its models; ``close`` when it is dropped."""

    port: int
    pid: int | None
    csrf_token: str | None
    directory: CascadeDirectory
    snapshot: StepSnapshot
    models: ModelCatalog
    close: Callable[[], Awaitable[None]]


class ServerFinder:
    """Finds the user's agy servers (``pids``/``ports`` narrow it; ``scanner`` reads the process table)."""

    def __init__(
        self, *, scanner: Any = None, pids: Sequence[int] | None = None, ports: Sequence[int] = ()
    ) -> None:
        self._scanner = scanner or PsutilScanner()
        self._pids = list(pids) if pids is not None else None
        self._ports = list(ports)

    def _candidates(self) -> list[Candidate]:
        procs = self._scanner.processes(pids=self._pids)
        if self._ports:
            return [Candidate(port, None, None) for port in self._ports]
        found = {c.port: c for c in candidates(self._scanner, procs)}
        for pid, port, token in logged_endpoints((p.pid, p.cmdline) for p in procs):
            found.setdefault(port, Candidate(port, pid, token))
        return list(found.values())

    async def find(self, known: Sequence[int] = ()) -> list[AgyServer]:
        """The servers not ``known`` yet that answer as the user's agy (raises when the process table
        cannot be read)."""
        found = await asyncio.to_thread(self._candidates)
        fresh = [c for c in found if c.port not in known]
        verdicts = await asyncio.gather(*(probe(c, None) for c in fresh))
        return [_open(c) for c, verdict in zip(fresh, verdicts, strict=True) if verdict is Verdict.OURS]


class ServerContainer(containers.DeclarativeContainer):
    """The adapters one agy server is read through (no session, no version gate: nothing is chosen)."""

    config = providers.Configuration()
    client = providers.Singleton(RpcClient, config.base_url, csrf_token=config.csrf_token, timeout=5.0)
    directory = providers.Singleton(RpcCascadeDirectory, client, share=False)
    snapshot = providers.Singleton(RpcPollSource, client)
    models = providers.Singleton(RpcModelCatalog, client)


def _open(found: Candidate) -> AgyServer:
    container = ServerContainer()
    container.config.from_dict(
        {"base_url": f"https://127.0.0.1:{found.port}", "csrf_token": found.csrf_token}
    )

    async def close() -> None:
        with contextlib.suppress(Exception):
            await container.client().aclose()

    return AgyServer(
        found.port,
        found.pid,
        found.csrf_token,
        container.directory(),
        container.snapshot(),
        container.models(),
        close,
    )
