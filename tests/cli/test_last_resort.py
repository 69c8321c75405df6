"""A stop signal always ends the CLI, even when the clean stop it starts never completes."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

# A process that swallows the clean stop (cli.Stopped is a KeyboardInterrupt) forever.
STUCK = textwrap.dedent(
    """
    import pathlib, sys, time
    from agy_harness.composition.entrypoints import cli, last_resort
    last_resort.GRACE = float(sys.argv[2])
    marker = pathlib.Path(sys.argv[1])
    last_resort.register(lambda: marker.write_text("cleaned"))
    cli._stop_on_signals()
    ready = False
    while True:
        try:  # the signal can land anywhere after "ready" is written, even inside print itself
            if not ready:
                ready = True
                print("ready", flush=True)
            time.sleep(10)
        except KeyboardInterrupt:
            print("stop swallowed", flush=True)
    """
)


def _stuck(tmp_path: Path, grace: float) -> tuple[subprocess.Popen[str], Path]:
    marker = tmp_path / "cleanup"
    proc = subprocess.Popen(
        [sys.executable, "-c", STUCK, str(marker), str(grace)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc, marker


def test_sigterm_ends_a_process_whose_clean_stop_hangs(tmp_path: Path) -> None:
    proc, marker = _stuck(tmp_path, grace=0.5)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    assert marker.read_text() == "cleaned"  # the registered clean-up ran before the hard exit


def test_a_second_signal_ends_it_at_once(tmp_path: Path) -> None:
    proc, marker = _stuck(tmp_path, grace=3600)  # the watchdog alone would wait an hour
    try:
        proc.send_signal(signal.SIGHUP)
        assert proc.stdout is not None
        # The second signal only once the first was handled: two sent while the process is not yet
        # scheduled (a loaded machine) merge into one pending signal, and it then waits an hour.
        assert proc.stdout.readline().strip() == "stop swallowed"  # one signal did not end it
        proc.send_signal(signal.SIGHUP)
        assert proc.wait(timeout=60) == 128 + signal.SIGHUP
        assert marker.read_text() == "cleaned"
    finally:
        if proc.poll() is None:  # never left behind for an hour when the test fails
            proc.kill()
            proc.wait()
