"""A first test run builds the real omnigent's venv (~700 MB): it says so as it goes (#23 item 9)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests import real_omnigent

ROOT = Path(__file__).resolve().parents[1]


def test_building_the_omnigent_venv_reports_each_step_and_the_size(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The build in an empty cache (``pip install pip``, already satisfied, stands in for the 700 MB download)."""
    monkeypatch.setenv("AGY_HARNESS_CACHE", str(tmp_path))
    monkeypatch.setattr(real_omnigent, "PACKAGES", ("pip",))  # already there: nothing to fetch
    monkeypatch.setattr(real_omnigent, "find_python312", lambda: sys.executable)
    said: list[str] = []
    monkeypatch.setattr(real_omnigent, "report", said.append)
    real_omnigent._omnigent_venv.cache_clear()
    try:
        with pytest.raises(real_omnigent.OmnigentUnavailable, match="does not import omnigent"):
            real_omnigent._omnigent_venv()
    finally:
        real_omnigent._omnigent_venv.cache_clear()
    assert said[0].startswith("building the real omnigent 0.19.1") and "700 MB" in said[0]
    assert "once, then cached" in said[0] and str(tmp_path) in said[0]
    assert said[1:3] == ["  [1/2] creating the venv", "  [2/2] pip install pip"]
    assert said[3].startswith("  built in ")


def test_the_readme_warns_about_the_first_run() -> None:
    readme = (ROOT / "README.md").read_text()
    setup = readme[readme.index("## Set-up") : readme.index("## Commands")]
    assert "700 MB" in setup and "~/.cache/agy-harness" in setup
