"""Port discovery: process/port scanning units, and probing against real TLS stub servers."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Sequence
from pathlib import Path

import pytest

from agy_harness.adapters.rpc.discovery import (
    AgyProcess,
    Candidate,
    PsutilScanner,
    Resolver,
    Verdict,
    csrf_token_from_cmdline,
    looks_like_agy,
    parse_proc_net_tcp,
    probe,
    proc_listen_ports,
    read_csrf_token,
)
from agy_harness.adapters.rpc.errors import AmbiguousAgy, NoAgyFound

from .stub import Reply, Request, StubServer, const


def fake_agy(*known: str) -> StubServer:
    async def metadata(req: Request) -> Reply:
        cid = json.loads(req.body).get("conversationId")
        if cid in known:
            return Reply(200, json.dumps({"metadata": {"rootConversationId": cid}}).encode())
        return Reply(500, b'{"code":"unknown","message":"trajectory not found"}')

    return StubServer({"Heartbeat": const(200, b"{}"), "GetConversationMetadata": metadata})


class FakeScanner:
    """Scoped to given ports, as if each belonged to its own agy process."""

    def __init__(self, ports: dict[int, Sequence[int]], cmdlines: dict[int, tuple[str, ...]] | None = None):
        self.ports = ports
        self.cmdlines = cmdlines or {}
        self.calls = 0

    def processes(
        self, *, pids: Sequence[int] | None = None, root_pid: int | None = None
    ) -> list[AgyProcess]:
        self.calls += 1
        return [AgyProcess(pid, "agy", self.cmdlines.get(pid, ("agy",))) for pid in self.ports]

    def listen_ports(self, pid: int) -> set[int]:
        return set(self.ports.get(pid, ()))


# ------------------------------------------------------------------------------------------ units


@pytest.mark.parametrize(
    ("name", "cmdline", "expected"),
    [
        ("agy", ("/usr/local/bin/agy",), True),
        ("language_server_linux_x64", ("/opt/x/language_server_linux_x64", "--csrf_token", "t"), True),
        ("node", ("node", "/opt/agy/bin/language_server.js"), True),
        ("agy-harness", ("/usr/bin/python3", "/usr/bin/agy-harness", "attach"), False),
        ("python3", ("python3", "-m", "agy_harness"), False),
        ("bash", ("bash",), False),
        ("python3", ("python3", "server.py"), False),
        # the simulator stands in for agy (plain `agy-harness attach` finds `agy-harness sim`)
        ("agy-harness", ("/venv/bin/python", "/venv/bin/agy-harness", "sim"), True),
        (
            "agy-harness",
            ("/venv/bin/python", "/venv/bin/agy-harness", "-v", "sim", "--profile", "1.0.4"),
            True,
        ),
        ("python3", ("python3", "-m", "agy_harness.adapters.simulator.tui", "--port-file", "p"), True),
        ("python3", ("python3", "-m", "agy_harness.adapters.simulator"), True),
        ("python3", ("python3", "-m", "agy_harness.composition.cli", "-v", "sim"), True),
        ("python3", ("python3", "-m", "agy_harness.composition.cli", "attach"), False),
        ("python3", ("python3", "-m", "agy_harness.composition.entrypoints.cli", "sim"), True),
        ("agy-harness", ("/venv/bin/python", "/venv/bin/agy-harness", "demo"), False),
        ("agy-harness", ("/venv/bin/python", "/venv/bin/agy-harness", "replay", "sim"), False),
    ],
)
def test_looks_like_agy(name: str, cmdline: tuple[str, ...], expected: bool) -> None:
    assert looks_like_agy(name, cmdline) is expected


def test_csrf_token_from_cmdline() -> None:
    assert csrf_token_from_cmdline(["ls", "--csrf_token", "abc", "--x"]) == "abc"
    assert csrf_token_from_cmdline(["ls", "--csrf_token=xyz"]) == "xyz"
    assert csrf_token_from_cmdline(["ls", "--csrf_token"]) is None
    assert csrf_token_from_cmdline([]) is None


def test_read_csrf_token_of_a_real_process() -> None:
    assert read_csrf_token(os.getpid()) is None
    assert read_csrf_token(2**22 + 12345) is None  # no such pid


PROC_TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 222 1 0
   2: 0A00000A:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 333 1 0
   3: 0100007F:1F91 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 444 1 0
   4: 0201007F:1F92 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 555 1 0
   5: garbage
"""
PROC_TCP6 = """\
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1F93 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 666 1 0
   1: 0000000000000000FFFF00000100007F:1F94 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 777 1 0
   2: B80D0120000000000000000001000000:1F95 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 888 1 0
"""


def test_parse_proc_net_tcp() -> None:
    # loopback and wildcard LISTEN sockets only: not 10.0.0.10, not an ESTABLISHED one
    assert parse_proc_net_tcp(PROC_TCP, v6=False) == {111: 8080, 222: 22, 555: 8082}
    assert parse_proc_net_tcp(PROC_TCP6, v6=True) == {666: 8083, 777: 8084}


def test_proc_fallback_finds_our_own_listener() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert port in proc_listen_ports(os.getpid())
    assert port not in proc_listen_ports(os.getpid())


def test_the_kernels_listening_sockets_read_by_netlink_are_the_proc_tables() -> None:
    """Each new connection to agy asks the kernel who listens on its port: through sock_diag (the
    kernel walks its listening sockets only), the same sockets, owners and inodes as the /proc
    tables (which list every socket of the machine: 10 ms a read with a thousand open)."""
    from agy_harness.adapters.rpc import listeners as L

    with socket.socket() as v4, socket.socket(socket.AF_INET6) as v6, socket.socket() as bound:
        v4.bind(("127.0.0.1", 0))
        v4.listen()
        v6.bind(("::1", 0))
        v6.listen()
        bound.bind(("127.0.0.1", 0))  # bound, not listening: no listener
        ours = {v4.getsockname()[1], v6.getsockname()[1], bound.getsockname()[1]}
        found = L.diag_listeners()
        assert found is not None  # Linux: netlink answers (CI runs here)
        by_netlink = {x for x in found if x.port in ours}
        by_proc = {x for x in L._proc_tables(L.PROC) or [] if x.port in ours}
        assert by_netlink == by_proc
        assert {x.port for x in by_netlink} == ours - {bound.getsockname()[1]}
        assert {x.uid for x in by_netlink} == {os.getuid()}
        port = v4.getsockname()[1]
        assert L.listener_uids(port) == {os.getuid()}
    assert L.listener_uids(port) == set()  # closed: nobody listens there


def test_psutil_scanner_scoped_to_explicit_pid() -> None:
    scanner = PsutilScanner()
    (me,) = scanner.processes(pids=[os.getpid()])
    assert me.pid == os.getpid()
    with socket.socket() as s, socket.socket() as remote:
        s.bind(("127.0.0.1", 0))
        s.listen()
        remote.bind(("127.0.0.1", 0))  # bound, not listening: not a candidate
        assert scanner.listen_ports(os.getpid()) >= {s.getsockname()[1]}
        assert remote.getsockname()[1] not in scanner.listen_ports(os.getpid())


def test_psutil_scanner_never_lists_itself() -> None:
    assert os.getpid() not in {p.pid for p in PsutilScanner().processes()}
    assert PsutilScanner().processes(root_pid=2**22 + 12345) == []


# ------------------------------------------------------------------------------ probing & binding


async def test_probe_verdicts() -> None:
    ours, plain = fake_agy("c1"), StubServer(tls=False)
    async with ours.running(), plain.running():
        assert await probe(Candidate(ours.port), "c1") is Verdict.OURS
        assert await probe(Candidate(ours.port), "other") is Verdict.FOREIGN
        assert await probe(Candidate(ours.port), None) is Verdict.OURS
        assert await probe(Candidate(plain.port), "c1") is Verdict.DEAD
    assert plain.requests == []  # the plain listener never saw a request: TLS failed first


async def test_binds_only_our_agy_among_foreign_and_plain() -> None:
    ours, foreign, plain = fake_agy("c1"), fake_agy("c2"), StubServer(tls=False)
    async with ours.running(), foreign.running(), plain.running():
        scanner = FakeScanner(
            {10: [foreign.port, plain.port], 11: [ours.port]}, {11: ("agy", "--csrf_token", "s")}
        )
        binding = await Resolver("c1", scanner=scanner).resolve()
        assert (binding.port, binding.pid, binding.csrf_token) == (ours.port, 11, "s")
        assert binding.base_url == f"https://127.0.0.1:{ours.port}"
        assert ours.requests[-1].headers["x-codeium-csrf-token"] == "s"
        with pytest.raises(NoAgyFound, match="does not host conversation c3"):
            await Resolver("c3", scanner=scanner).resolve()


async def test_ambiguity_is_refused() -> None:
    a, b = fake_agy("c1"), fake_agy("c1")
    async with a.running(), b.running():
        with pytest.raises(AmbiguousAgy) as info:
            await Resolver("c1", scanner=FakeScanner({1: [a.port], 2: [b.port]})).resolve()
    assert sorted(info.value.ports) == sorted([a.port, b.port])


async def test_port_override_skips_scan_but_verifies() -> None:
    ours, foreign = fake_agy("c1"), fake_agy("c2")
    async with ours.running(), foreign.running():
        scanner = FakeScanner({})
        assert (await Resolver("c1", port=ours.port, scanner=scanner).resolve()).port == ours.port
        with pytest.raises(NoAgyFound):
            await Resolver("c1", port=foreign.port, scanner=scanner).resolve()


async def test_resolve_caches_and_re_resolve_follows_a_restart() -> None:
    first, second = fake_agy("c1"), fake_agy("c1")
    async with first.running():
        scanner = FakeScanner({1: [first.port]})
        resolver = Resolver("c1", scanner=scanner)
        assert (await resolver.resolve()).port == first.port
        assert (await resolver.resolve()).port == first.port
        assert scanner.calls == 1
    async with second.running():
        scanner.ports = {2: [first.port, second.port]}  # the old port is dead now
        binding = await resolver.re_resolve()
    assert (binding.port, binding.pid) == (second.port, 2)


async def test_re_resolve_gives_up_after_its_deadline() -> None:
    resolver = Resolver("c1", scanner=FakeScanner({}))
    with pytest.raises(NoAgyFound):
        await resolver.re_resolve(deadline=0.3, retry_every=0.1)


def test_resolver_refuses_non_loopback_host(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        Resolver("c1", host="192.168.1.2")
