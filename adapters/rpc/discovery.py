"""Find the agy language server that serves OUR cascade: processes -> loopback ports -> probes -> one port.

Never binds a foreign agy (its GetConversationMetadata does not know our cascade) and refuses to guess
when two ports answer. Only the current user's agy: other users' processes are not scanned, and no
byte goes to a port whose listening socket is not the user's (:mod:`.listeners`), so the csrf token,
turns and answers never reach another user's process, however well it mimics agy. The process scan is injectable (:class:`ProcessScanner`) so tests can scope it
to their own pid, where the simulator's listeners live.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

import psutil

from . import listeners
from .agy_log import csrf_token_from_cmdline, logged_endpoints
from .client import PROBE_TIMEOUT, RpcClient, check_loopback
from .errors import AmbiguousAgy, NoAgyFound, RpcError
from .listeners import PeerCheck, check_listener, is_loopback_host, is_mine, listen_ip_ok, proc_listen_ports
from .listeners import parse_proc_net_tcp as parse_proc_net_tcp  # (re-exported: moved to .listeners)
from .proc_names import ruled_out

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AgyProcess:
    pid: int
    name: str
    cmdline: tuple[str, ...]


#: The embedded simulator stands in for agy: ``python -m agy_harness.adapters.simulator[.tui]``.
_SIMULATOR_MODULES = ("agy_harness.adapters.simulator",)


def _is_simulator(cmdline: Sequence[str]) -> bool:
    """``agy-harness [-v] sim ...`` (also as ``python -m agy_harness.composition.cli sim``) or the
    simulator's modules run with ``python -m``."""
    args = list(cmdline[:8])
    rest: list[str] | None = None
    for i, arg in enumerate(args):
        if arg == "-m" and i + 1 < len(args):
            module = args[i + 1]
            if module.startswith(_SIMULATOR_MODULES):
                return True
            if module in (
                "agy_harness.composition.cli",
                "agy_harness.composition.entrypoints.cli",
                "agy_harness.composition",
            ):
                rest = args[i + 2 :]
            break
        if os.path.basename(arg) == "agy-harness":
            rest = args[i + 1 :]
            break
    if rest is None:
        return False
    return [a for a in rest if not a.startswith("-v") and a != "--verbose"][:1] == ["sim"]


def looks_like_agy(name: str, cmdline: Sequence[str]) -> bool:
    """agy itself or its language server, or the harness's simulator of it; never the harness itself
    (whose name also contains "agy")."""
    if _is_simulator(cmdline):
        return True
    exe = os.path.basename(cmdline[0]) if cmdline else ""
    words = [name.lower(), exe.lower()]
    if any("agy-harness" in w or "agy_harness" in w for w in words):
        return False
    if any("agy" in w or "language_server" in w for w in words):
        return True
    return any("language_server" in arg for arg in cmdline[:2])


def read_csrf_token(pid: int) -> str | None:
    """The ``--csrf_token X`` agy was started with, if any (None when unreadable)."""
    try:
        return csrf_token_from_cmdline(psutil.Process(pid).cmdline())
    except (psutil.Error, OSError):
        return None


# ------------------------------------------------------------------------------------- scanning


class ProcessScanner(Protocol):
    def processes(
        self, *, pids: Sequence[int] | None = None, root_pid: int | None = None
    ) -> list[AgyProcess]:
        """agy processes: exactly ``pids`` if given; else agy-looking processes (under ``root_pid``)."""
        ...

    def listen_ports(self, pid: int) -> set[int]: ...


class PsutilScanner:
    def processes(
        self, *, pids: Sequence[int] | None = None, root_pid: int | None = None
    ) -> list[AgyProcess]:
        if pids is not None:
            return [p for p in (self._info(pid) for pid in pids) if p is not None and self._mine(p.pid)]
        if root_pid is not None:
            try:
                root = psutil.Process(root_pid)
                scope = [root.pid, *(child.pid for child in root.children(recursive=True))]
            except psutil.Error:
                return []
        else:
            scope = psutil.pids()
        me = os.getpid()  # (a first look rules out most: .proc_names)
        pids = [pid for pid in scope if pid != me and not ruled_out(pid)]
        found = [p for p in (self._info(pid) for pid in pids) if p is not None]
        return [p for p in found if looks_like_agy(p.name, p.cmdline) and self._mine(p.pid)]

    @staticmethod
    def _mine(pid: int) -> bool:
        """Only the current user's processes are agy candidates (another user's "agy" is never asked)."""
        if is_mine(pid):
            return True
        log.info("discovery: pid %d is another user's process; not considered", pid)
        return False

    @staticmethod
    def _info(pid: int) -> AgyProcess | None:
        try:
            proc = psutil.Process(pid)
            with proc.oneshot():
                return AgyProcess(pid, proc.name(), tuple(proc.cmdline()))
        except (psutil.Error, OSError):
            return None

    def listen_ports(self, pid: int) -> set[int]:
        """Its loopback/wildcard TCP listeners: the kernel's (sock_diag walks listeners only) matched to its
        socket fds; psutil (every socket of the machine, from /proc/net/tcp[6]) where netlink fails."""
        listening = listeners.diag_listeners()
        if listening is not None:
            inodes = listeners.socket_inodes(pid)
            return {s.port for s in listening if s.inode in inodes}
        try:
            conns = psutil.Process(pid).net_connections(kind="tcp")
        except (psutil.Error, OSError):
            return proc_listen_ports(pid)
        return {
            c.laddr.port
            for c in conns
            if c.status == psutil.CONN_LISTEN and c.laddr and listen_ip_ok(c.laddr.ip)
        }


# --------------------------------------------------------------------------------------- probing


@dataclass(frozen=True, slots=True)
class Candidate:
    port: int
    pid: int | None = None
    csrf_token: str | None = None


@dataclass(frozen=True, slots=True)
class Binding:
    port: int
    pid: int | None
    csrf_token: str | None
    host: str = "127.0.0.1"

    @property
    def base_url(self) -> str:
        return f"https://{self.host}:{self.port}"


class Verdict(StrEnum):
    OURS = "ours"  # answers for our cascade (or: a live agy, when we have no cascade id)
    FOREIGN = "foreign"  # a live agy that does not know our cascade
    DEAD = "dead"  # no TLS connect-RPC server there (plain HTTP, refused, timeout)
    STRANGER = "stranger"  # another user's socket (or no evidence whose): nothing is sent to it


ClientFactory = Callable[[str, str | None], RpcClient]


def default_client_factory(base_url: str, csrf_token: str | None) -> RpcClient:
    return RpcClient(base_url, csrf_token=csrf_token, timeout=PROBE_TIMEOUT)


async def probe(
    candidate: Candidate,
    cascade_id: str | None,
    *,
    host: str = "127.0.0.1",
    client_factory: ClientFactory = default_client_factory,
    timeout: float = PROBE_TIMEOUT,
) -> Verdict:
    # the socket the connection reaches (the kernel is asked, blocking: off the loop)
    check, why = await asyncio.to_thread(check_listener, candidate.port, candidate.pid, host)
    if check is not PeerCheck.MINE:  # not even a Heartbeat: it carries the user's token
        (log.warning if check is PeerCheck.OTHER else log.debug)("not probing: %s", why)
        return Verdict.STRANGER if check is PeerCheck.OTHER else Verdict.DEAD
    async with client_factory(f"https://{host}:{candidate.port}", candidate.csrf_token) as client:
        try:
            await client.call("Heartbeat", {}, timeout=timeout)
        except RpcError as exc:
            log.debug("port %d: no Heartbeat (%s)", candidate.port, exc)
            return Verdict.DEAD
        if cascade_id is None:
            return Verdict.OURS
        return await _ownership(client, cascade_id, timeout)


def owner_of(answer: dict[str, object], cascade_id: str) -> bool:
    """A ``GetConversationMetadata`` answer proves this agy hosts ``cascade_id`` only when it echoes the
    id as ``metadata.rootConversationId`` (any other 2xx -- empty metadata, another root -- does not:
    a sub-agent's own id is not bound by discovery, its root is)."""
    metadata = answer.get("metadata")
    return isinstance(metadata, dict) and metadata.get("rootConversationId") == cascade_id


async def _ownership(client: RpcClient, cascade_id: str, timeout: float) -> Verdict:
    try:
        answer = await client.call("GetConversationMetadata", {"conversationId": cascade_id}, timeout=timeout)
    except RpcError as exc:
        log.debug("%s does not know %s (%s)", client.base_url, cascade_id, exc)
        return Verdict.FOREIGN
    if not owner_of(answer, cascade_id):
        log.debug("%s answers for %s but does not own it: %s", client.base_url, cascade_id, answer)
        return Verdict.FOREIGN
    return Verdict.OURS


async def verify_endpoint(
    base_url: str,
    cascade_id: str | None,
    csrf_token: str | None = None,
    *,
    client_factory: ClientFactory = default_client_factory,
    timeout: float = PROBE_TIMEOUT,
) -> None:
    """Check a given ``base_url`` as discovery checks a scanned port: a live agy (``Heartbeat``) that
    owns ``cascade_id`` (when given), served by a socket of the current user. Raises NoAgyFound
    naming what failed."""
    url = check_loopback(base_url)
    port = url.port
    check, why = (
        await asyncio.to_thread(check_listener, port, None, url.host)
        if port is not None
        else (PeerCheck.MINE, "")
    )
    if check is PeerCheck.OTHER:
        raise NoAgyFound(f"refusing {base_url}: {why}", others=(port,) if port is not None else ())
    if check is PeerCheck.NONE:
        raise NoAgyFound(f"no agy answers at {base_url} ({why})")
    async with client_factory(base_url, csrf_token) as client:
        try:
            await client.call("Heartbeat", {}, timeout=timeout)
        except RpcError as exc:
            raise NoAgyFound(f"no agy answers at {base_url} ({type(exc).__name__}: {exc})") from exc
        if cascade_id is not None and await _ownership(client, cascade_id, timeout) is not Verdict.OURS:
            raise NoAgyFound(f"the agy at {base_url} does not host conversation {cascade_id}")


def candidates(scanner: ProcessScanner, procs: Iterable[AgyProcess]) -> list[Candidate]:
    seen: dict[int, Candidate] = {}
    for proc in procs:
        token = csrf_token_from_cmdline(proc.cmdline)
        for port in sorted(scanner.listen_ports(proc.pid)):
            seen.setdefault(port, Candidate(port, proc.pid, token))
    return list(seen.values())


class Resolver:
    """Binds the one port that serves ``cascade_id``; ``re_resolve()`` again after the port died.

    ``port`` (the user's ``--port``) skips the scan but is still verified. ``pids`` scans exactly
    those processes; ``pane_pid`` scans agy-looking processes under a tmux pane's process.
    """

    def __init__(
        self,
        cascade_id: str | None,
        *,
        port: int | None = None,
        pids: Sequence[int] | None = None,
        pane_pid: int | None = None,
        csrf_token: str | None = None,
        scanner: ProcessScanner | None = None,
        client_factory: ClientFactory = default_client_factory,
        host: str = "127.0.0.1",
        probe_timeout: float = PROBE_TIMEOUT,
    ) -> None:
        if not is_loopback_host(host):
            raise ValueError(f"refusing non-loopback host {host!r}")
        self.cascade_id = cascade_id
        self._port = port
        self._pids = pids
        self._pane_pid = pane_pid
        self._csrf = csrf_token
        self._scanner = scanner or PsutilScanner()
        self._factory = client_factory
        self._host = host
        self._timeout = probe_timeout
        self.binding: Binding | None = None

    async def resolve(self) -> Binding:
        if self.binding is None:
            self.binding = await self._scan()
        return self.binding

    async def re_resolve(self, *, deadline: float = 0.0, retry_every: float = 0.25) -> Binding:
        """Forget the binding and scan again, retrying for up to ``deadline`` seconds (agy restarting).

        A ``--port`` named the agy at the start; a restarted agy listens on a new port (agy picks one
        each start), so when that port no longer serves the conversation, every agy of this user is
        scanned for the one that hosts it (the conversation is the anchor: without a ``cascade_id``
        the given port alone is tried again)."""
        self.binding = None
        loop = asyncio.get_running_loop()
        end = loop.time() + deadline
        while True:
            try:
                return await self.resolve()
            except NoAgyFound as exc:
                last = exc
                if self._port is not None and self.cascade_id is not None:
                    try:
                        self.binding = await self._scan(pinned=False)
                        return self.binding
                    except NoAgyFound as wider:  # (says what the scan found: another agy, say)
                        last = wider
                if loop.time() + retry_every > end:
                    raise last from None
                await asyncio.sleep(retry_every)

    def _candidates(self, procs: list[AgyProcess] | None = None, *, pinned: bool = True) -> list[Candidate]:
        if procs is None:
            procs = self._scanner.processes(pids=self._pids, root_pid=self._pane_pid)
        if self._port is not None and pinned:
            owner = next((p for p in procs if self._port in self._scanner.listen_ports(p.pid)), None)
            token = self._csrf or (csrf_token_from_cmdline(owner.cmdline) if owner else None)
            return [Candidate(self._port, owner.pid if owner else None, token)]
        found = candidates(self._scanner, procs)
        if self._csrf:
            found = [Candidate(c.port, c.pid, c.csrf_token or self._csrf) for c in found]
        log.debug("discovery: %d process(es), candidate ports %s", len(procs), [c.port for c in found])
        return found

    def _logged(self, procs: list[AgyProcess]) -> list[Candidate]:
        """What agy's own log announces for the processes in scope (:mod:`.agy_log`)."""
        found = logged_endpoints(((p.pid, p.cmdline) for p in procs), self._csrf)
        return [Candidate(port, pid, token) for pid, port, token in found]

    async def _scan(self, *, pinned: bool = True) -> Binding:
        """The one port serving the conversation: the given ``--port`` (``pinned``), else a scan."""
        port = self._port if pinned else None
        procs: list[AgyProcess] | None = None
        if port is None:  # agy's log line first; the socket scan when it names nothing of ours
            procs = await asyncio.to_thread(self._scanner.processes, pids=self._pids, root_pid=self._pane_pid)
            logged = await asyncio.to_thread(self._logged, procs)
            if logged:
                verdicts = await asyncio.gather(
                    *(probe(c, self.cascade_id, host=self._host, client_factory=self._factory,
                            timeout=self._timeout) for c in logged)
                )  # fmt: skip
                ours = [c for c, v in zip(logged, verdicts, strict=True) if v is Verdict.OURS]
                if len(ours) == 1:
                    c = ours[0]
                    log.info("bound agy port %d (pid %s) from agy's log", c.port, c.pid)
                    return Binding(c.port, c.pid, c.csrf_token, self._host)
        found = (
            await asyncio.to_thread(self._candidates, procs, pinned=pinned)
            if port is None
            else self._candidates()
        )
        verdicts = await asyncio.gather(
            *(
                probe(
                    c, self.cascade_id, host=self._host, client_factory=self._factory, timeout=self._timeout
                )
                for c in found
            )
        )
        ours = [c for c, v in zip(found, verdicts, strict=True) if v is Verdict.OURS]
        foreign = [c.port for c, v in zip(found, verdicts, strict=True) if v is Verdict.FOREIGN]
        strangers = [c.port for c, v in zip(found, verdicts, strict=True) if v is Verdict.STRANGER]
        what = f"cascade {self.cascade_id}" if self.cascade_id else "a live agy"
        if len(ours) > 1:
            ports = [c.port for c in ours]
            raise AmbiguousAgy(f"{len(ours)} ports answer for {what}: {ports}; pass --port", ports)
        if not ours:
            raise NoAgyFound.instead(port, self.cascade_id, [c.port for c in found], foreign, strangers)
        c = ours[0]
        log.info("bound agy port %d (pid %s) for %s", c.port, c.pid, what)
        return Binding(c.port, c.pid, c.csrf_token, self._host)
