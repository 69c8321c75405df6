"""Shared fixtures for the whole suite."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from agy_harness.adapters.simulator import Simulator

from . import real_omnigent
from .real_omnigent import OmnigentServer, require_omnigent_venv

pytest_plugins = ["tests.ci_skips"]  # in CI a skipped test fails the run


def pytest_configure(config: pytest.Config) -> None:
    """The one-time venv builds (tests/real_omnigent.py) report on the terminal, past output capture."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if terminal is None or capture is None:
        return

    def to_terminal(message: str) -> None:
        with capture.global_and_fixture_disabled():
            terminal.write_line(f"agy-harness tests: {message}")

    real_omnigent.report = to_terminal


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    """A running agy simulator (profile 1.0.10, fast pacing, gates never time out); stopped after."""
    async with Simulator(profile="1.0.10", gate_timeout=None) as running:
        yield running


@pytest.fixture(scope="session")
def omnigent_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The REAL omnigent 0.19.1 server on 127.0.0.1 (sqlite in a temp dir), its base URL; stopped after.

    One server for the whole run; each test creates its own sessions (`tests.real_omnigent.create_session`).
    Skipped when the omnigent venv cannot be built (in CI a skip fails the run: tests/ci_skips.py).
    """
    venv = require_omnigent_venv()
    with OmnigentServer(tmp_path_factory.mktemp("omnigent-server"), venv=venv) as server:
        yield server.url
