"""The REAL omnigent 0.19.1 for the tests: a cached Python 3.12 venv and a server started from it.

omnigent needs Python >= 3.12 and this project runs on 3.11, so the server runs from its own venv:

* ``omnigent_venv() -> Path`` finds or builds ``~/.cache/agy-harness/omnigent-0.19.1-py3.12`` with
  ``omnigent==0.19.1`` and ``omnigent-client==0.19.1`` (``$AGY_HARNESS_CACHE`` overrides the cache root).
  Python 3.12 is found by asking pyenv (``pyenv versions --bare`` / ``pyenv prefix``), else
  ``python3.12`` on the PATH, else this interpreter if it is >= 3.12; never a hard-coded path. Two test
  processes may build at once: a file lock serialises them and the venv is built in a temporary
  directory and renamed into place, so nobody ever sees a half-built venv. The server is run with
  ``<venv>/bin/python -m omnigent`` (no console-script shebang), which survives the rename.
* ``OmnigentServer(data_dir)`` starts ``omnigent server --host 127.0.0.1 --port P --database-uri
  sqlite:///...`` with its state confined to ``data_dir`` (``OMNIGENT_DATA_DIR``, ``OMNIGENT_CONFIG_HOME``,
  telemetry and update checks off), waits for ``GET /health``, and stops it (``stop()`` or the context manager).
* ``create_session(base_url)`` creates an antigravity-native session the way ``omnigent agy`` does
  (omnigent's own agent bundle and labels) and returns its id.
* ``require_omnigent_venv()``: the venv, or a pytest skip locally / a pytest FAIL when ``CI=true``.

``python -m tests.real_omnigent`` builds the venv and prints its path (``.ci/run`` does this before the
tests). The fixtures using this live in ``tests/conftest.py`` (``omnigent_server``).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

OMNIGENT_VERSION = "0.19.1"
PACKAGES = (f"omnigent=={OMNIGENT_VERSION}", f"omnigent-client=={OMNIGENT_VERSION}")
VENV_NAME = f"omnigent-{OMNIGENT_VERSION}-py3.12"
READY_TIMEOUT = 180.0  # seconds for `omnigent server` to answer /health (2 shared cores, cold imports)


def _to_stderr(message: str) -> None:
    print(f"agy-harness tests: {message}", file=sys.stderr, flush=True)


#: Where the one-time builds say what they do (``tests/conftest.py`` points it at pytest's terminal,
#: past output capture): a first run is never minutes of silence.
report = _to_stderr


class OmnigentUnavailable(RuntimeError):
    """The real omnigent cannot run here (no Python 3.12, no network for pip, ...)."""


def cache_root() -> Path:
    return Path(os.environ.get("AGY_HARNESS_CACHE") or Path.home() / ".cache" / "agy-harness")


def _python_version(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    major, minor = out.stdout.split()
    return int(major), int(minor)


def find_python312() -> str:
    """A Python 3.12 interpreter: pyenv's newest 3.12.x, else ``python3.12`` on the PATH, else this one."""
    candidates: list[str] = []
    pyenv = shutil.which("pyenv")
    if pyenv:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            listed = subprocess.run(
                [pyenv, "versions", "--bare"], capture_output=True, text=True, timeout=30
            ).stdout.split()
            versions = [v for v in listed if v.startswith("3.12.") and v.replace(".", "").isdigit()]
            for version in sorted(versions, key=lambda v: [int(p) for p in v.split(".")], reverse=True):
                prefix = subprocess.run(
                    [pyenv, "prefix", version], capture_output=True, text=True, timeout=30
                ).stdout.strip()
                if prefix:
                    candidates.append(str(Path(prefix) / "bin" / "python3.12"))
    on_path = shutil.which("python3.12")
    if on_path:
        candidates.append(on_path)
    if sys.version_info >= (3, 12):
        candidates.append(sys.executable)
    for python in candidates:
        if _python_version(python) == (3, 12):
            return python
    raise OmnigentUnavailable("no Python 3.12 found (pyenv versions, python3.12 on PATH)")


#: written into the venv once a full check (:func:`_venv_ok`) passed: later checks read it instead of
#: importing omnigent's server (~2.5 CPU-seconds in every test process that used omnigent, measured)
VERIFIED = ".agy-harness-verified"


def _installed(venv: Path) -> bool:
    """Both packages' install records (``*.dist-info``) at the pinned version are in the venv."""
    names = (f"omnigent-{OMNIGENT_VERSION}.dist-info", f"omnigent_client-{OMNIGENT_VERSION}.dist-info")
    return all(any(venv.glob(f"lib/python3.*/site-packages/{name}/METADATA")) for name in names)


def _venv_ok(venv: Path) -> bool:
    """The venv imports omnigent's server and client at the pinned version: checked by importing them
    once, then (the stamp :data:`VERIFIED` written) by the stamp and the install records alone."""
    python = venv / "bin" / "python"
    if not python.exists():
        return False
    stamp = venv / VERIFIED
    with contextlib.suppress(OSError):
        if stamp.read_text() == f"{OMNIGENT_VERSION} {OMNIGENT_VERSION}\n" and _installed(venv):
            return True
    check = (
        "import importlib.metadata as m, omnigent.server.app, omnigent_client; "
        "print(m.version('omnigent'), m.version('omnigent-client'))"
    )
    try:
        out = subprocess.run([str(python), "-c", check], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return False
    if out.returncode != 0 or out.stdout.split() != [OMNIGENT_VERSION, OMNIGENT_VERSION]:
        return False
    with contextlib.suppress(OSError):
        stamp.write_text(f"{OMNIGENT_VERSION} {OMNIGENT_VERSION}\n")
    return True


_failure: OmnigentUnavailable | None = None


def omnigent_venv() -> Path:
    """The cached venv with the real omnigent (built on first use); raises OmnigentUnavailable.

    A failure is remembered for this process, so a missing Python 3.12 costs one attempt, not one per test.
    """
    global _failure
    if _failure is not None:
        raise _failure
    try:
        return _omnigent_venv()
    except OmnigentUnavailable as exc:
        _failure = exc
        raise


@lru_cache(maxsize=1)
def _omnigent_venv() -> Path:
    root = cache_root()
    venv = root / VENV_NAME
    if _venv_ok(venv):
        return venv
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{VENV_NAME}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it right now
        if _venv_ok(venv):
            return venv
        python = find_python312()
        build = Path(tempfile.mkdtemp(prefix=f".{VENV_NAME}.build-", dir=root))
        try:
            steps = (
                [python, "-m", "venv", str(build)],
                [
                    str(build / "bin" / "python"),
                    "-m",
                    "pip",
                    "install",
                    "-q",
                    "--disable-pip-version-check",
                    *PACKAGES,
                ],
            )
            started = time.monotonic()
            report(
                f"building the real omnigent {OMNIGENT_VERSION} (Python 3.12 venv, about 700 MB) at {venv}; "
                "once, then cached (a few minutes)"
            )
            for n, step in enumerate(steps, 1):
                report(
                    f"  [{n}/{len(steps)}] {'creating the venv' if n == 1 else 'pip install ' + ' '.join(PACKAGES)}"
                )
                out = subprocess.run(step, capture_output=True, text=True, timeout=1800)
                if out.returncode != 0:
                    raise OmnigentUnavailable(f"{' '.join(step[:4])}... failed: {out.stderr[-2000:]}")
            report(f"  built in {time.monotonic() - started:.0f} s")
            if not _venv_ok(build):
                raise OmnigentUnavailable("the freshly built omnigent venv does not import omnigent")
            if venv.exists():  # a broken leftover: move it aside, then drop it
                stale = root / f".{VENV_NAME}.stale-{os.getpid()}"
                venv.rename(stale)
                shutil.rmtree(stale, ignore_errors=True)
            build.rename(venv)
        finally:
            if build.exists():
                shutil.rmtree(build, ignore_errors=True)
    return venv


def require_omnigent_venv() -> Path:
    """The venv; a test without it is skipped (in CI a skip fails the run: tests/ci_skips.py)."""
    import pytest

    try:
        return omnigent_venv()
    except OmnigentUnavailable as exc:
        pytest.skip(f"the real omnigent {OMNIGENT_VERSION} is unavailable: {exc}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_env(data_dir: Path) -> dict[str, str]:
    """Environment confining the server's state to data_dir, telemetry off, single-user loopback."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMNIGENT_")}
    env.update(
        OMNIGENT_DATA_DIR=str(data_dir / "data"),
        OMNIGENT_CONFIG_HOME=str(data_dir / "config"),
        OMNIGENT_DISABLE_TELEMETRY="1",
        DO_NOT_TRACK="1",
        # no update check: on a terminal (the chat in tmux) an `omnigent` command reads and writes the
        # user's own ~/.omnigent/.update_check.json and, every 4 hours, spawns a detached Python asking
        # the package index (omnigent/update_check.py): state outside data_dir, the network unasked
        OMNIGENT_NO_UPDATE_CHECK="1",
        PYTHONUNBUFFERED="1",
    )
    return env


@dataclass
class OmnigentServer:
    """One `omnigent server` process on 127.0.0.1 with a sqlite database under data_dir."""

    data_dir: Path
    venv: Path | None = None
    port: int = 0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "server.log"

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def start(self) -> str:
        venv = self.venv or omnigent_venv()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        for attempt in range(3):  # a free port can be taken between probing and binding
            self.port = _free_port()
            with open(self.log_path, "ab") as log:
                self.process = subprocess.Popen(
                    [
                        str(venv / "bin" / "python"),
                        "-m",
                        "omnigent",
                        "server",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(self.port),
                        "--database-uri",
                        f"sqlite:///{self.data_dir / 'omnigent.db'}",
                        "--no-open",
                    ],
                    cwd=self.data_dir,
                    env=server_env(self.data_dir),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            if self._wait_ready():
                return self.url
            self.stop()
            if attempt == 2 or "address already in use" not in self.log_tail().lower():
                break
        raise RuntimeError(f"omnigent server did not become ready; log:\n{self.log_tail()}")

    def _wait_ready(self) -> bool:
        import httpx  # lazily: `python -m tests.real_omnigent` (CI's venv build) needs only the stdlib

        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                return False
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/health", timeout=2.0).status_code == 200:
                    return True
            time.sleep(0.1)
        return False

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, 9)
            process.wait(timeout=10)

    def __enter__(self) -> OmnigentServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


_BUNDLE_SCRIPT = """
import base64, json, sys, tempfile
from pathlib import Path
from omnigent.cli import _bundle
from omnigent.harnesses.antigravity_native import main as m
with tempfile.TemporaryDirectory() as d:
    bundle = _bundle(m._materialize_antigravity_agent_spec(Path(d)))
labels = dict(m._SESSION_LABELS)
print(json.dumps({"bundle": base64.b64encode(bundle).decode(), "labels": labels,
                  "bridge_label": m.ANTIGRAVITY_NATIVE_BRIDGE_ID_LABEL_KEY}))
"""


@lru_cache(maxsize=1)
def antigravity_bundle() -> tuple[bytes, dict[str, str], str]:
    """omnigent's own antigravity-native agent bundle, session labels and bridge-id label key."""
    out = subprocess.run(
        [str(omnigent_venv() / "bin" / "python"), "-c", _BUNDLE_SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tempfile.gettempdir(),
        env=server_env(Path(tempfile.gettempdir()) / "agy-harness-omnigent-bundle"),
    )
    if out.returncode != 0:
        raise RuntimeError(f"building omnigent's antigravity bundle failed: {out.stderr[-2000:]}")
    payload = json.loads(out.stdout.strip().splitlines()[-1])
    return base64.b64decode(payload["bundle"]), dict(payload["labels"]), str(payload["bridge_label"])


def create_session(base_url: str, *, title: str | None = None, extra: dict[str, Any] | None = None) -> str:
    """Create an antigravity-native session (as `omnigent agy` does) and return its id."""
    import httpx

    bundle, labels, bridge_label = antigravity_bundle()
    metadata: dict[str, Any] = {"labels": {**labels, bridge_label: f"agy-harness-test-{time.time_ns()}"}}
    if title:
        metadata["title"] = title
    metadata.update(extra or {})
    resp = httpx.post(
        f"{base_url}/v1/sessions",
        data={"metadata": json.dumps(metadata)},
        files={"bundle": ("antigravity-native-ui.tar.gz", bundle, "application/gzip")},
        timeout=120.0,
    )
    resp.raise_for_status()
    session_id = resp.json().get("session_id")
    if not isinstance(session_id, str) or not session_id:
        raise RuntimeError(f"session create answered no session_id: {resp.text[:500]}")
    return session_id


if __name__ == "__main__":
    try:
        print(omnigent_venv())
    except OmnigentUnavailable as exc:
        print(f"omnigent venv: {exc}", file=sys.stderr)
        sys.exit(1)
