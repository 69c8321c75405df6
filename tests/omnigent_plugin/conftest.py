from __future__ import annotations

from pathlib import Path

import pytest

from .venv import plugin_environment


@pytest.fixture(scope="session")
def plugin_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Python of omnigent's environment with this checkout's agy-harness (and its plugin) installed."""
    return plugin_environment(tmp_path_factory.mktemp("agy-plugin"))
