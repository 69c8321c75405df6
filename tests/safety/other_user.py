"""A second local user, for the attacks another user of the machine can make.

The machine (and CI) runs as root, so tests create a system user with ``useradd`` and run the
attacker's commands as that uid. Not root: skipped (in CI a skip fails the run, and CI is root).
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

NAME = "agyh-intruder"


@dataclass(frozen=True)
class OtherUser:
    uid: int
    gid: int

    def popen(self, args: Sequence[str], **kw: Any) -> subprocess.Popen[Any]:
        env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", **kw.pop("env", {})}
        return subprocess.Popen(
            list(args), user=self.uid, group=self.gid, extra_groups=[], env=env, cwd="/", **kw
        )

    def run(self, args: Sequence[str]) -> None:
        proc = self.popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0, f"{args} as uid {self.uid}: {out}"


def other_user() -> OtherUser:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("needs root to create a second local user (CI runs as root)")
    try:
        entry = pwd.getpwnam(NAME)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", NAME],
            check=False,
            capture_output=True,
        )  # fmt: skip  (exit 9: made meanwhile by a parallel run)
        entry = pwd.getpwnam(NAME)
    return OtherUser(entry.pw_uid, entry.pw_gid)


@contextlib.contextmanager
def shared_dir() -> Iterator[Path]:
    """A directory every user may write to, sticky, like ``/tmp`` (removed after)."""
    path = Path(tempfile.mkdtemp(prefix="agyh-shared-", dir="/tmp"))
    os.chmod(path, 0o1777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _others_may_run(path: Path) -> bool:
    real = path.resolve()
    return all(os.stat(p).st_mode & 0o001 for p in (real, *real.parents))


def python_for_others() -> str:
    """A Python interpreter the other user can run (the test's own may live under /root, 0700)."""
    for candidate in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        path = Path(candidate)
        if path.exists() and _others_may_run(path):
            return str(path)
    raise AssertionError("no Python interpreter another user may run (tried /usr/bin/python3)")


def hostile_files(here: Path) -> Path:
    """Put the hostile agy (``hostile_agy.py``) and its TLS certificate in ``here``, readable by the
    other user: the script's path."""
    import trustme

    ca = trustme.CA()
    leaf = ca.issue_cert("127.0.0.1")
    leaf.cert_chain_pems[0].write_to_path(str(here / "cert.pem"))
    leaf.private_key_pem.write_to_path(str(here / "key.pem"))
    script = here / "hostile_agy.py"
    script.write_text((Path(__file__).parent / "hostile_agy.py").read_text())
    for path in (script, here / "cert.pem", here / "key.pem"):
        os.chmod(path, 0o644)
    return script


@contextlib.contextmanager
def run_hostile(here: Path, *args: str) -> Iterator[int]:
    """The hostile agy, run by another local user in ``here`` (its argv[0] is ``agy``): its port."""
    intruder = other_user()
    script = hostile_files(here)
    proc = intruder.popen(
        ["agy", str(script), str(here), *args],
        executable=python_for_others(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline()
        assert line.strip(), proc.stderr.read()
        yield int(line)
    finally:
        proc.kill()
        proc.wait(10)


def hostile_argv(here: Path, *args: str) -> list[str]:
    """A command line that runs the hostile agy as the other user (``setpriv``), for a shell or a
    tmux pane to start: its port then shows in ``here/agy.log`` (:func:`logged_port`)."""
    intruder = other_user()
    script = hostile_files(here)
    return [
        "env", "-i", "PATH=/usr/bin:/bin", "HOME=/nonexistent",
        "setpriv", f"--reuid={intruder.uid}", f"--regid={intruder.gid}", "--clear-groups",
        "bash", "-c", 'cd / && exec -a agy "$0" "$@"', python_for_others(), str(script), str(here), *args,
    ]  # fmt: skip


def logged_port(here: Path) -> int | None:
    """The port the hostile agy announced in ``here/agy.log`` (None: not listening yet)."""
    with contextlib.suppress(OSError):
        for line in (here / "agy.log").read_text().splitlines():
            if "listening on random port at" in line:
                return int(line.split(" at ")[1].split()[0])
    return None


def received(got: Path) -> list[dict[str, str]]:
    """What the hostile agy was sent (``got.jsonl``): method, csrf header, body."""
    return [json.loads(line) for line in got.read_text().splitlines()] if got.exists() else []
