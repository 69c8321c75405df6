"""The wheel installs the layers under ``agy_harness`` (every sub-package and data file) and the omnigent
plugin under omnigent's community namespace, nothing else."""

from __future__ import annotations

import tomllib
import zipfile
from pathlib import Path

from tests.omnigent_plugin.venv import build_wheel

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"core", "ports", "adapters", "composition"}


PLUGIN = "omnigent.community.harness.agy_harness"
PLUGIN_DIR = "composition/entrypoints/omnigent_plugin"


def test_every_sub_package_is_listed() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    assert setuptools["package-dir"][PLUGIN] == PLUGIN_DIR
    found = set()
    for layer in LAYERS:
        for init in (ROOT / layer).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT)
            if rel.as_posix() == PLUGIN_DIR or rel.as_posix().startswith(PLUGIN_DIR + "/"):
                # the omnigent plugin installs under omnigent's namespace, not under agy_harness
                found.add(".".join((PLUGIN, *rel.relative_to(PLUGIN_DIR).parts)))
            else:
                found.add(".".join(("agy_harness", *rel.parts)))
    assert found == listed


def test_built_wheel_has_agy_harness_and_no_top_level_layers(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"agy_harness", "omnigent"}
    assert "agy_harness/core/reconciler.py" in names
    assert "agy_harness/adapters/simulator/shapes/user_input.json" in names
    assert not any(n.startswith(("core/", "ports/")) for n in names)
    # the omnigent plugin: only its own package under omnigent's namespace, which omnigent owns (no
    # __init__.py at omnigent/, omnigent/community/, omnigent/community/harness/), and not twice
    plugin = "omnigent/community/harness/agy_harness/"
    assert {n for n in names if n.startswith("omnigent/")} == {
        plugin + p.name for p in (ROOT / PLUGIN_DIR).glob("*.py")
    }
    assert f"{plugin}app.py" in names and f"{plugin}plugin.py" in names
    for owned in ("omnigent/", "omnigent/community/", "omnigent/community/harness/"):
        assert owned + "__init__.py" not in names
    assert not any(n.startswith("agy_harness/composition/entrypoints/omnigent_plugin") for n in names)
    # registered under omnigent's community group, with a module path omnigent accepts
    [dist_info] = {n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")}
    entry_points = zipfile.ZipFile(wheel).read(f"{dist_info}/entry_points.txt").decode()
    assert (
        "[omnigent.community.harness]\nagy-harness = omnigent.community.harness.agy_harness.plugin:get_contribution"
        in entry_points
    )
    metadata = zipfile.ZipFile(wheel).read(f"{dist_info}/METADATA").decode()
    assert "Provides-Extra: omnigent" in metadata
    assert 'Requires-Dist: omnigent==0.19.1; python_version >= "3.12" and extra == "omnigent"' in metadata
