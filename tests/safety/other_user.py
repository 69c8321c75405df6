"""A second local user, for the attacks another user of the machine can make.

The machine (and CI) runs as root, so tests create a system user with ``useradd`` and run the
attacker's commands as that uid. Not root: skipped (in CI a skip fails the run, and CI is root).
"""

from __future__ import annotations

import contextlib
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
