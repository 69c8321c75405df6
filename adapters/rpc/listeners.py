"""Who listens on a loopback port, read from the kernel: the evidence that a peer is the user's own agy.

``/proc/net/tcp`` and ``tcp6`` list every socket of the machine with the uid that owns it (readable
by any user). Discovery sends nothing -- not even a ``Heartbeat``, which carries the user's CSRF
token -- to a port unless the socket listening on it belongs to the current user: a process of
another local user that merely answers like agy (echoing any conversation id) is never bound. Where
the kernel's tables cannot be read (not Linux), the owner of the process the port was found on
stands in (:func:`process_uid`).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import psutil

_LISTEN = "0A"
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
            listener = Listener(int(port_hex, 16), int(fields[7]), int(fields[9]))
        except ValueError:
            continue
        if listen_ip_ok(ip):
            out.append(listener)
    return out


def parse_proc_net_tcp(text: str, *, v6: bool) -> dict[int, int]:
    """``{socket inode: port}`` of the LISTEN sockets bound to a loopback or wildcard address."""
    return {s.inode: s.port for s in parse_listeners(text, v6=v6)}


def _tables(proc: Path) -> list[Listener] | None:
    found: list[Listener] = []
    read = False
    for name, v6 in (("tcp", False), ("tcp6", True)):
        with contextlib.suppress(OSError):
            found += parse_listeners((proc / "net" / name).read_text(), v6=v6)
            read = True
    return found if read else None


def listener_uids(port: int, proc: Path = PROC) -> set[int] | None:
    """The uids owning a loopback/wildcard LISTEN socket on ``port`` (empty: none); None when the
    kernel's tables cannot be read here."""
    tables = _tables(proc)
    return None if tables is None else {s.uid for s in tables if s.port == port}


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
    tables = _tables(proc) or []
    inodes = socket_inodes(pid, proc)
    return {s.port for s in tables if s.inode in inodes}


def my_uid() -> int:
    return os.geteuid() if hasattr(os, "geteuid") else 0


def process_uid(pid: int) -> int | None:
    """The (effective) uid of process ``pid``; None when it cannot be read."""
    try:
        return int(psutil.Process(pid).uids().effective)
    except (psutil.Error, OSError, AttributeError):
        return None


def is_mine(pid: int) -> bool:
    """Process ``pid`` runs as the current user (real and effective uid)."""
    try:
        uids = psutil.Process(pid).uids()
    except (psutil.Error, OSError, AttributeError):
        return False
    return uids.real == my_uid() and uids.effective == my_uid()


class PeerCheck(StrEnum):
    MINE = "mine"  # the socket on the port is the current user's
    NONE = "none"  # nothing listens there (nothing is sent: another user could bind it meanwhile)
    OTHER = "other"  # another user's socket, or no evidence either way


def check_listener(port: int, pid: int | None) -> tuple[PeerCheck, str]:
    """Whose socket listens on loopback ``port``, and why, in words."""
    me = my_uid()
    uids = listener_uids(port)
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


def listener_problem(port: int) -> str | None:
    """Why not to connect to loopback ``port`` now (another user's socket listens there, or none
    does: another user could take it); None when it is the current user's or the kernel's tables
    cannot be read here (then discovery's process-owner check is what there is)."""
    uids = listener_uids(port)
    if uids is None or uids == {my_uid()}:
        return None
    if not uids:
        return f"nothing listens on loopback port {port}"
    others = ", ".join(map(str, sorted(uids - {my_uid()})))
    return f"port {port} is served by uid {others}, not by you (uid {my_uid()})"
