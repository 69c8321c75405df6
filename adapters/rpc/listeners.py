"""Who listens on a loopback port, read from the kernel: the evidence that a peer is the user's own agy.

``/proc/net/tcp`` and ``tcp6`` list every socket of the machine with the uid that owns it (readable
by any user). Discovery sends nothing -- not even a ``Heartbeat``, which carries the user's CSRF
token -- to a port unless the socket listening on it belongs to the current user: a process of
another local user that merely answers like agy (echoing any conversation id) is never bound. Where
the kernel's tables cannot be read (not Linux), the owner of the process the port was found on
stands in (:func:`process_uid`).

Only the socket a connection will reach counts (issue #35 case 6: another user listening on the same
port number at ``127.0.0.2`` or ``[::1]`` made the harness refuse the user's own agy on
``127.0.0.1``): the listener bound to the exact address dialled, else a wildcard one (``0.0.0.0``,
``::``), as the kernel picks (:func:`reached`). And once connected, the connection's other end is
checked too (:func:`peer_problem`): the kernel's entry for the socket that accepted it must be the user's.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import struct
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

_LISTEN = "0A"
#: what is read of one ``/proc/net/tcp[6]`` table (about 55,000 sockets); a longer table is not read
#: whole, and nothing it would have said is taken as known (:class:`TablesTooLarge`)
PROC_READ = 8 << 20
_WILDCARD = {ipaddress.ip_address("0.0.0.0"), ipaddress.ip_address("::")}
PROC = Path("/proc")


def is_loopback_host(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped.is_loopback
    return addr.is_loopback


def listen_ip_ok(ip: str) -> bool:
    """A listener reachable on loopback: bound to a loopback or a wildcard address."""
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        return False
    return addr in _WILDCARD or is_loopback_host(ip)


@dataclass(frozen=True, slots=True)
class Listener:
    port: int
    uid: int
    inode: int
    ip: str = ""  # the address it is bound to ("" where unknown: counts as reached)


def _normal(ip: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        addr = ipaddress.ip_address(ip.strip("[]"))
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


def _targets(host: str) -> set[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The addresses a connection to ``host`` may reach (``localhost``: both loopbacks)."""
    if host.strip("[]").lower() == "localhost":
        return {ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")}
    addr = _normal(host)
    return {addr} if addr is not None else set()


def reached(listeners: list[Listener], port: int, host: str | None) -> list[Listener]:
    """The listeners on ``port`` a connection to ``host`` reaches: one bound to the exact address
    (per address dialled), else the wildcard ones; every one on the port when ``host`` is None or
    not an address (the old, stricter rule)."""
    on_port = [s for s in listeners if s.port == port]
    targets = _targets(host) if host is not None else set()
    if not targets:
        return on_port
    out: list[Listener] = []
    for target in targets:
        exact = [s for s in on_port if not s.ip or _normal(s.ip) == target]
        out += exact or [s for s in on_port if _normal(s.ip) in _WILDCARD]
    return out


def parse_listeners(text: str, *, v6: bool) -> list[Listener]:
    """The LISTEN sockets of a ``/proc/net/tcp[6]`` table bound to a loopback or wildcard address."""
    out: list[Listener] = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10 or fields[3] != _LISTEN:
            continue
        addr_hex, _, port_hex = fields[1].partition(":")
        try:
            raw = bytes.fromhex(addr_hex)
            if v6:  # four host-order (little-endian) 32-bit words
                raw = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
                ip = str(ipaddress.IPv6Address(raw))
            else:
                ip = str(ipaddress.IPv4Address(raw[::-1]))
            listener = Listener(int(port_hex, 16), int(fields[7]), int(fields[9]), ip)
        except ValueError:
            continue
        if listen_ip_ok(ip):
            out.append(listener)
    return out


def parse_proc_net_tcp(text: str, *, v6: bool) -> dict[int, int]:
    """``{socket inode: port}`` of the LISTEN sockets bound to a loopback or wildcard address."""
    return {s.inode: s.port for s in parse_listeners(text, v6=v6)}


def _tables(proc: Path) -> list[Listener] | None:
    if proc == PROC:
        found = diag_listeners()
        if found is not None:
            return found
    return _proc_tables(proc)


class TablesTooLarge(Exception):
    """A ``/proc/net/tcp[6]`` table over :data:`PROC_READ` bytes: not read, so who listens cannot be
    told (every check that meets it refuses)."""


def _read_table(path: Path) -> str:
    """A ``/proc/net`` table, at most :data:`PROC_READ` bytes (OSError: cannot be read; TablesTooLarge)."""
    with path.open("rb") as f:
        data = f.read(PROC_READ + 1)
    if len(data) > PROC_READ:
        raise TablesTooLarge(f"{path} is over {PROC_READ} bytes: not read")
    return data.decode("ascii", "replace")


def _proc_tables(proc: Path) -> list[Listener] | None:
    found: list[Listener] = []
    read = False
    for name, v6 in (("tcp", False), ("tcp6", True)):
        try:
            text = _read_table(proc / "net" / name)
        except OSError:
            continue
        found += parse_listeners(text, v6=v6)
        read = True
    return found if read else None


# the kernel's sock_diag netlink interface (linux/sock_diag.h, linux/inet_diag.h; what ss(8) uses)
_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_DUMP_REQUEST = 0x301  # NLM_F_REQUEST | NLM_F_DUMP
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_TCP_LISTEN = 10
_NO_COOKIE = struct.pack("=II", 0xFFFFFFFF, 0xFFFFFFFF)


def diag_listeners() -> list[Listener] | None:
    """The loopback/wildcard LISTEN TCP sockets, from the kernel's sock_diag netlink interface: the
    kernel walks only its listening sockets (about 0.1 ms), where ``/proc/net/tcp[6]`` lists every
    socket of the machine (10 ms of the loop per read with a thousand open: each new connection to
    agy reads them, 300 sessions at once stalled the loop for seconds). None where netlink cannot
    be used here (then the /proc tables are read)."""
    found: list[Listener] = []
    try:
        for family in (socket.AF_INET, socket.AF_INET6):
            found += _diag_dump(family)
    except (OSError, struct.error, ValueError):
        return None
    return found


def _diag_dump(family: int) -> list[Listener]:
    sockid = struct.pack("!HH16s16sI", 0, 0, bytes(16), bytes(16), 0) + _NO_COOKIE
    request = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 1 << _TCP_LISTEN) + sockid
    header = struct.pack("=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY, _NLM_F_DUMP_REQUEST, 1, 0)
    out: list[Listener] = []
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as sock:
        sock.settimeout(2.0)
        sock.sendto(header + request, (0, 0))
        while True:
            data = sock.recv(1 << 16)
            offset = 0
            while offset + 16 <= len(data):
                length, kind = struct.unpack_from("=IH", data, offset)
                if kind == _NLMSG_DONE:
                    return out
                if kind == _NLMSG_ERROR or length < 16:
                    raise OSError("sock_diag refused the request")
                body = offset + 16  # inet_diag_msg: family, state, timer, retrans, sockid (48), ...
                msg_family, state = struct.unpack_from("=BB", data, body)
                (port,) = struct.unpack_from("!H", data, body + 4)
                address = data[body + 8 : body + 24]
                uid, inode = struct.unpack_from("=II", data, body + 64)
                ip = ipaddress.ip_address(address[:4] if msg_family == socket.AF_INET else address)
                if state == _TCP_LISTEN and listen_ip_ok(str(ip)):
                    out.append(Listener(port, uid, inode, str(ip)))
                offset += (length + 3) & ~3


def listener_uids(port: int, proc: Path = PROC, host: str | None = None) -> set[int] | None:
    """The uids owning the loopback/wildcard LISTEN socket(s) on ``port`` that a connection to
    ``host`` reaches (:func:`reached`; any on the port when ``host`` is None); empty: none; None
    when the kernel's tables cannot be read here. Raises TablesTooLarge when they are too large to
    read (nothing can be told: the callers refuse)."""
    tables = _tables(proc)
    return None if tables is None else {s.uid for s in reached(tables, port, host)}


def socket_inodes(pid: int, proc: Path = PROC) -> set[int]:
    inodes: set[int] = set()
    with contextlib.suppress(OSError):
        for fd in (proc / str(pid) / "fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(int(target[8:-1]))
    return inodes


def proc_listen_ports(pid: int, proc: Path = PROC) -> set[int]:
    try:
        tables = _tables(proc) or []
    except TablesTooLarge:  # no port of it can be told to listen: none found
        return set()
    inodes = socket_inodes(pid, proc)
    return {s.port for s in tables if s.inode in inodes}


def my_uid() -> int:
    return os.geteuid() if hasattr(os, "geteuid") else 0


def process_uid(pid: int) -> int | None:
    """The (effective) uid of process ``pid``; None when it cannot be read."""
    import psutil  # (here: the simulator writes agy's log lines through this module, needing none)

    try:
        return int(psutil.Process(pid).uids().effective)
    except (psutil.Error, OSError, AttributeError):
        return None


def is_mine(pid: int) -> bool:
    """Process ``pid`` runs as the current user (real and effective uid)."""
    import psutil

    try:
        uids = psutil.Process(pid).uids()
    except (psutil.Error, OSError, AttributeError):
        return False
    return uids.real == my_uid() and uids.effective == my_uid()


class PeerCheck(StrEnum):
    MINE = "mine"  # the socket on the port is the current user's
    NONE = "none"  # nothing listens there (nothing is sent: another user could bind it meanwhile)
    OTHER = "other"  # another user's socket, or no evidence either way


def check_listener(port: int, pid: int | None, host: str | None = None) -> tuple[PeerCheck, str]:
    """Whose socket listens on loopback ``port`` (the one a connection to ``host`` reaches), and why,
    in words."""
    me = my_uid()
    try:
        uids = listener_uids(port, host=host)
    except TablesTooLarge as exc:
        return PeerCheck.OTHER, f"port {port}: cannot tell which user serves it ({exc})"
    if uids is None:  # no kernel tables: the scanned process's owner is the evidence
        owner = process_uid(pid) if pid is not None else None
        if owner == me:
            return PeerCheck.MINE, ""
        if owner is None:
            return PeerCheck.OTHER, f"port {port}: cannot tell which user serves it"
        return PeerCheck.OTHER, f"port {port} is served by uid {owner}, not by you (uid {me})"
    if not uids:
        return PeerCheck.NONE, f"nothing listens on loopback port {port}"
    if uids != {me}:
        others = ", ".join(map(str, sorted(uids - {me})))
        return PeerCheck.OTHER, f"port {port} is served by uid {others}, not by you (uid {me})"
    return PeerCheck.MINE, ""


def listener_problem(port: int, host: str | None = None) -> str | None:
    """Why not to connect to loopback ``port`` on ``host`` now (another user's socket listens where
    the connection goes, or none does: another user could take it); None when it is the current
    user's or the kernel's tables cannot be read here (then discovery's process-owner check is what
    there is). Blocking (the kernel is asked): called off the event loop."""
    try:
        uids = listener_uids(port, host=host)
    except TablesTooLarge as exc:
        return f"cannot tell who listens on loopback port {port} ({exc})"
    if uids is None or uids == {my_uid()}:
        return None
    if not uids:
        return f"nothing listens on loopback port {port}"
    others = ", ".join(map(str, sorted(uids - {my_uid()})))
    return f"port {port} is served by uid {others}, not by you (uid {my_uid()})"


# -- the connection's other end, once connected ------------------------------------------------


def _diag_one(family: int, local: tuple[str, int], remote: tuple[str, int]) -> int | None:
    """The uid of the TCP socket whose own end is ``local`` and whose peer is ``remote`` (one exact
    sock_diag lookup); None when the kernel has no such socket or cannot be asked."""
    src = ipaddress.ip_address(local[0]).packed.ljust(16, b"\0")
    dst = ipaddress.ip_address(remote[0]).packed.ljust(16, b"\0")
    sockid = struct.pack("!HH16s16sI", local[1], remote[1], src, dst, 0) + _NO_COOKIE
    request = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + sockid
    header = struct.pack("=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY, 1, 1, 0)  # NLM_F_REQUEST
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as sock:
            sock.settimeout(2.0)
            sock.sendto(header + request, (0, 0))
            data = sock.recv(1 << 16)
        length, kind = struct.unpack_from("=IH", data, 0)
        if kind != _SOCK_DIAG_BY_FAMILY or length < 16 + 72:
            return None
        (uid,) = struct.unpack_from("=I", data, 16 + 64)
        return int(uid)
    except (OSError, struct.error, ValueError):
        return None


def _proc_one(local: tuple[str, int], remote: tuple[str, int], proc: Path = PROC) -> int | None:
    """:func:`_diag_one` read from ``/proc/net/tcp[6]`` (slower: every socket of the machine)."""
    want_local, want_remote = (_normal(local[0]), local[1]), (_normal(remote[0]), remote[1])
    for name, v6 in (("tcp", False), ("tcp6", True)):
        try:
            text = _read_table(proc / "net" / name)
        except OSError:
            continue
        except TablesTooLarge:
            return None  # cannot be told (the caller refuses)
        for line in text.splitlines()[1:]:
            fields = line.split()
            if len(fields) < 10:
                continue
            try:
                ends = [_end(fields[1], v6), _end(fields[2], v6)]
            except ValueError:
                continue
            if ends == [want_local, want_remote]:
                return int(fields[7])
    return None


def _end(text: str, v6: bool) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address | None, int]:
    addr_hex, _, port_hex = text.partition(":")
    raw = bytes.fromhex(addr_hex)
    if v6:
        raw = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
        return _normal(str(ipaddress.IPv6Address(raw))), int(port_hex, 16)
    return _normal(str(ipaddress.IPv4Address(raw[::-1]))), int(port_hex, 16)


def connection_owner(ours: tuple[str, int], theirs: tuple[str, int], proc: Path = PROC) -> int | None:
    """The uid owning the socket at the other end of our connection (``ours`` -> ``theirs``): the
    socket the peer accepted it on, which is its listener's owner. None when it cannot be read."""
    family = socket.AF_INET6 if ":" in theirs[0] else socket.AF_INET
    if proc == PROC:
        uid = _diag_one(family, theirs, ours)
        if uid is not None:
            return uid
    return _proc_one(theirs, ours, proc)


def peer_problem(sockname: object, peername: object) -> str | None:
    """Why not to use a connection just made (its other end is another user's socket); None when it
    is the user's, or when the kernel's tables cannot be read here (as :func:`listener_problem`).
    Blocking (the kernel is asked): called off the event loop."""
    if not (isinstance(sockname, tuple) and isinstance(peername, tuple)):
        return None  # not a TCP connection (nothing to check)
    ours, theirs = (str(sockname[0]), int(sockname[1])), (str(peername[0]), int(peername[1]))
    owner = connection_owner(ours, theirs)
    if owner is None:
        try:
            tables = _tables(PROC)
        except TablesTooLarge:
            tables = []  # there are tables, too large to read: refused below
        if tables is None:
            return None  # no kernel tables here: the listener check was what there is
        return f"cannot tell whose socket accepted the connection to {theirs[0]} port {theirs[1]}"
    if owner != my_uid():
        return f"the connection to port {theirs[1]} was accepted by uid {owner}, not by you (uid {my_uid()})"
    return None
