"""omnigent's own registry and spec loader see the installed plugin as omnigent would."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TAKEN = {
    "antigravity",
    "antigravity-native",
    "agy",
    "agy-native",
    "native-agy",
    "native-antigravity",
    "google-antigravity",
}


def run_in(python: Path, code: str, cwd: Path) -> Any:
    out = subprocess.run(
        [str(python), "-P", "-c", code], capture_output=True, text=True, cwd=cwd, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_plugin_state_has_it_without_load_errors(plugin_python: Path, tmp_path: Path) -> None:
    state = run_in(
        plugin_python,
        """
import json
from omnigent.harness_plugins import (plugin_state, valid_harnesses, harness_modules, model_env_keys,
    spawn_env_builders, load_object, COMMUNITY_MODULE_PREFIX)
s = plugin_state()
[c] = [c for c in s.contributions if c.name == "agy-harness"]
print(json.dumps({
    "errors": s.load_errors, "valid": sorted(c.valid_harnesses), "modules": c.harness_modules,
    "native": [sorted(c.native_harnesses), list(c.native_agents)], "aliases": c.aliases,
    "model_env": model_env_keys().get("agy-harness"), "builder": spawn_env_builders().get("agy-harness"),
    "accepted": "agy-harness" in valid_harnesses(), "module": harness_modules().get("agy-harness"),
    "prefix": COMMUNITY_MODULE_PREFIX,
    "app": callable(getattr(__import__(harness_modules()["agy-harness"], fromlist=["x"]), "create_app")),
    "builder_ok": callable(load_object(spawn_env_builders()["agy-harness"])),
}))
""",
        tmp_path,
    )
    assert state["errors"] == {}
    assert state["valid"] == ["agy-harness"] and state["accepted"]
    assert state["native"] == [[], []] and state["aliases"] == {}
    assert not TAKEN & set(state["valid"])
    assert state["module"].startswith(state["prefix"]) and state["builder"].startswith(state["prefix"])
    assert state["model_env"] == "HARNESS_AGY_HARNESS_MODEL"
    assert state["app"] and state["builder_ok"]


def readme_spec() -> str:
    text = (ROOT / "docs" / "omnigent.md").read_text()
    section = text.split("## omnigent harness plugin", 1)[1]
    match = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert match, "docs/omnigent.md's plugin section shows an agent spec"
    return match.group(1)


def test_readme_agent_spec_reaches_the_harness_environment(plugin_python: Path, tmp_path: Path) -> None:
    """The README's spec, loaded by omnigent, through omnigent's spawn-env path (with and without a
    per-session ``/model`` override) gives the variables the plugin reads."""
    spec_dir = tmp_path / "agent"
    spec_dir.mkdir()
    (spec_dir / "config.yaml").write_text(readme_spec())
    env = run_in(
        plugin_python,
        f"""
import json
from pathlib import Path
from omnigent.spec import load
from omnigent.runner.app import _build_spawn_env_from_spec
spec = load(Path({str(spec_dir)!r}))
print(json.dumps({{"harness": spec.executor.config.get("harness"),
    "plain": _build_spawn_env_from_spec(spec, "agy-harness"),
    "override": _build_spawn_env_from_spec(spec, "agy-harness", model_override="MODEL_PLACEHOLDER_M50")}}))
""",
        tmp_path,
    )
    assert env["harness"] == "agy-harness"
    plain = env["plain"]
    assert plain["HARNESS_AGY_HARNESS_MODEL"] == "Gemini 3 Flash"
    assert plain["HARNESS_AGY_HARNESS_PORT"].isdigit()
    assert env["override"]["HARNESS_AGY_HARNESS_MODEL"] == "MODEL_PLACEHOLDER_M50"


def test_the_capabilities_it_supports_are_declared_to_omnigent(plugin_python: Path, tmp_path: Path) -> None:
    """omnigent's registry lists what the plugin does (its ``/v1/harnesses`` catalog reads this), and
    the plugin's executor module loads from the layout this omnigent has."""
    got = run_in(
        plugin_python,
        """
import json
from omnigent.harness_plugins import plugin_state, harness_capabilities
from omnigent.community.harness.agy_harness import compat
assert plugin_state().load_errors == {}
print(json.dumps({"caps": harness_capabilities()["agy-harness"].as_dict(), "layout": compat.LAYOUT}))
""",
        tmp_path,
    )
    caps = got["caps"]
    assert caps["interrupt"] is caps["streaming"] is caps["steering"] is caps["live_queue"] is True
    assert caps["elicitation"] == "sse-permission" and caps["auth"] == "own-auth"
    assert caps["subagents"] is False and caps["images"] is False
    assert got["layout"] == "omnigent.inner"  # omnigent 0.19.1
