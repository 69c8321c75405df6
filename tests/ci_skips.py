"""In CI (``CI=true``) a skipped test fails the run.

A skip here nearly always means a real component could not run: the omnigent server or runner, tmux,
the ACP SDK's client, ruff. Green without them would prove nothing, so every skip is collected and,
in CI, the session's exit status becomes "tests failed" with the list. Only skips that are right on
any machine are allowed (``ALLOWED``). Locally skips stay skips. Loaded by ``tests/conftest.py``.

In parallel (pytest-xdist) the workers' reports reach the controller's hooks (a module skipped in
several workers once), so the controller judges the run; a worker's own end-of-session verdict would
be lost with its output, and is not made.
"""

from __future__ import annotations

import os

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

#: reasons a skip is right even in CI (nothing real is missing)
ALLOWED = ("process discovery is tested on Linux",)

_skipped: list[tuple[str, str]] = []


def _reason(report: pytest.CollectReport | pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped.append((report.nodeid, _reason(report)))


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.skipped:
        _skipped.append((report.nodeid, _reason(report)))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not IN_CI or hasattr(session.config, "workerinput"):  # (an xdist worker: the controller judges)
        return
    refused = [(node, why) for node, why in _skipped if not any(ok in why for ok in ALLOWED)]
    if not refused:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = [f"CI=true: {len(refused)} skipped test(s) fail the run (a real component did not run):"]
    lines += [f"  {node}: {why}" for node, why in refused]
    if reporter is not None:
        reporter.write_line("\n".join(lines), red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
