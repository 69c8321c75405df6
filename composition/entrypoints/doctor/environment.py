"""``agy-harness doctor``'s checks of this machine, agy or not (as ``brew doctor`` does): this
package and its Python, tmux (agy before 1.0.10, ``acp --start-agy``, ``demo --profile 1.0.4``), the
``acp`` and ``board`` extras, a Python 3.12 for omnigent's plugin, the ``agy`` command. Each check is
one line: ok or not, what was found, and what to do when it is missing. Read-only and bounded."""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Any

from agy_harness.core.display import one_line

TIMEOUT = 10.0


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str  # what was found, or what to do
    version: str | None = None

    def line(self) -> str:
        return f"  {'ok' if self.ok else '--':<3} {self.name}: {self.detail}"

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def _output(*argv: str) -> str:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT)
        return (done.stdout or done.stderr).strip()
    return ""


def _dist(name: str) -> str | None:
    try:
        return dist_version(name)
    except PackageNotFoundError:
        return None


def package() -> Check:
    python = ".".join(map(str, sys.version_info[:3]))
    mine = _dist("agy-harness") or "unknown"
    return Check("agy-harness", True, f"{mine} on Python {python} ({sys.executable})", mine)


def tmux() -> Check:
    found = shutil.which("tmux")
    if found is None:
        return Check(
            "tmux",
            False,
            "not installed; agy before 1.0.10 and acp --start-agy need it (apt install tmux / brew install tmux)",
        )
    text = _output(found, "-V")
    version = text.split()[-1] if text else None
    return Check("tmux", True, f"{text or 'tmux'} ({found})", version)


def extra(name: str, module: str, dist: str, command: str) -> Check:
    if importlib.util.find_spec(module) is None:
        return Check(
            f"{name} extra",
            False,
            f"not installed; `agy-harness {command}` needs it: pip install -e '.[{name}]' in the repository",
        )
    version = _dist(dist)
    return Check(f"{name} extra", True, f"{dist} {version or '?'} (agy-harness {command})", version)


def python312() -> Check:
    """omnigent 0.19 runs on Python >= 3.12: pyenv's 3.12, ``python3.12`` on PATH, or this Python."""
    if sys.version_info >= (3, 12):
        return Check(
            "omnigent's Python", True, f"this Python is {sys.version.split()[0]}", sys.version.split()[0]
        )
    pyenv = shutil.which("pyenv")
    if pyenv:
        versions = [v for v in _output(pyenv, "versions", "--bare").split() if v.startswith("3.12.")]
        if versions:
            newest = max(versions, key=lambda v: [int(p) if p.isdigit() else 0 for p in v.split(".")])
            return Check("omnigent's Python", True, f"Python {newest} (pyenv)", newest)
    on_path = shutil.which("python3.12")
    if on_path:
        text = _output(on_path, "--version")
        said = text.split()
        if len(said) == 2 and said[0] == "Python" and said[1].startswith("3.12"):
            return Check("omnigent's Python", True, f"{text} ({on_path})", said[1])
        return Check(  # a broken shim, pyenv's shim of a version not installed: not a Python 3.12
            "omnigent's Python",
            False,
            f"{on_path} does not run ({one_line(text[:120]) or 'it says no version'}): pyenv install 3.12, "
            "or a working python3.12 on PATH",
        )
    return Check(
        "omnigent's Python",
        False,
        "no Python 3.12 (omnigent 0.19 needs >= 3.12 for the plugin): pyenv install 3.12, or python3.12 on PATH",
    )


def agy_command() -> Check:
    found = shutil.which("agy")
    if found is None:
        return Check(
            "agy command",
            False,
            "not on PATH (Google's Antigravity CLI; `agy-harness sim` plays one without it)",
        )
    return Check("agy command", True, str(Path(found)))


def environment() -> list[Check]:
    return [
        package(),
        tmux(),
        extra("acp", "acp", "agent-client-protocol", "acp"),
        extra("board", "starlette", "starlette", "board"),
        python312(),
        agy_command(),
    ]


__all__ = ["Check", "environment"]
