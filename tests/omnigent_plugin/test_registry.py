"""omnigent's own registry and spec loader see the installed plugin as omnigent would."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

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


REGISTRY = """
from omnigent.harness_plugins import (plugin_state, valid_harnesses, harness_modules, model_env_keys,
    spawn_env_builders, load_object, COMMUNITY_MODULE_PREFIX)
s = plugin_state()
[c] = [c for c in s.contributions if c.name == "agy-harness"]
result = {
    "errors": s.load_errors, "valid": sorted(c.valid_harnesses), "modules": c.harness_modules,
    "native": [sorted(c.native_harnesses), list(c.native_agents)], "aliases": c.aliases,
    "model_env": model_env_keys().get("agy-harness"), "builder": spawn_env_builders().get("agy-harness"),
    "accepted": "agy-harness" in valid_harnesses(), "module": harness_modules().get("agy-harness"),
    "prefix": COMMUNITY_MODULE_PREFIX,
    "app": callable(getattr(__import__(harness_modules()["agy-harness"], fromlist=["x"]), "create_app")),
    "builder_ok": callable(load_object(spawn_env_builders()["agy-harness"])),
}
"""

SPAWN_ENV = """
from pathlib import Path
from omnigent.spec import load
from omnigent.runner.app import _build_spawn_env_from_spec
spec = load(Path(SPEC_DIR))
result = {"harness": spec.executor.config.get("harness"),
    "plain": _build_spawn_env_from_spec(spec, "agy-harness"),
    "override": _build_spawn_env_from_spec(spec, "agy-harness", model_override="MODEL_PLACEHOLDER_M50")}
"""

CAPABILITIES = """
from omnigent.harness_plugins import plugin_state, harness_capabilities
from omnigent.community.harness.agy_harness import compat
assert plugin_state().load_errors == {}
result = {"caps": harness_capabilities()["agy-harness"].as_dict(), "layout": compat.LAYOUT}
"""


@pytest.fixture(scope="module")
def omnigent_sees(plugin_python: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What omnigent's registry, spec loader and spawn-env path say of the installed plugin, asked in
    one Python of omnigent's environment for the module's three tests (a Python importing omnigent's
    registry and runner is ~1-2 CPU-seconds; each test's its own was three); each question apart
    (``registry``, ``spawn_env``, ``capabilities``: its ``result``, or the traceback it raised)."""
    where = tmp_path_factory.mktemp("omnigent-sees")
    spec_dir = where / "agent"
    spec_dir.mkdir()
    (spec_dir / "config.yaml").write_text(readme_spec())
    questions = {"registry": REGISTRY, "spawn_env": SPAWN_ENV, "capabilities": CAPABILITIES}
    code = f"""
import json, traceback
answers = {{}}
for name, source in {questions!r}.items():
    scope = {{"SPEC_DIR": {str(spec_dir)!r}}}
    try:
        exec(source, scope)
        answers[name] = {{"result": scope["result"]}}
    except BaseException:
        answers[name] = {{"raised": traceback.format_exc()}}
print(json.dumps(answers))
"""
    answers: dict[str, Any] = run_in(plugin_python, code, where)
    return answers


def answer(seen: dict[str, Any], question: str) -> Any:
    got = seen[question]
    assert "raised" not in got, got["raised"]
    return got["result"]


def test_plugin_state_has_it_without_load_errors(omnigent_sees: dict[str, Any]) -> None:
    state = answer(omnigent_sees, "registry")
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


def test_readme_agent_spec_reaches_the_harness_environment(omnigent_sees: dict[str, Any]) -> None:
    """The README's spec, loaded by omnigent, through omnigent's spawn-env path (with and without a
    per-session ``/model`` override) gives the variables the plugin reads."""
    env = answer(omnigent_sees, "spawn_env")
    assert env["harness"] == "agy-harness"
    plain = env["plain"]
    assert plain["HARNESS_AGY_HARNESS_MODEL"] == "Gemini 3 Flash"
    assert plain["HARNESS_AGY_HARNESS_PORT"].isdigit()
    assert env["override"]["HARNESS_AGY_HARNESS_MODEL"] == "MODEL_PLACEHOLDER_M50"


def test_the_capabilities_it_supports_are_declared_to_omnigent(omnigent_sees: dict[str, Any]) -> None:
    """omnigent's registry lists what the plugin does (its ``/v1/harnesses`` catalog reads this), and
    the plugin's executor module loads from the layout this omnigent has."""
    got = answer(omnigent_sees, "capabilities")
    caps = got["caps"]
    assert caps["interrupt"] is caps["streaming"] is caps["steering"] is caps["live_queue"] is True
    assert caps["elicitation"] == "sse-permission" and caps["auth"] == "own-auth"
    assert caps["subagents"] is False and caps["images"] is False
    assert got["layout"] == "omnigent.inner"  # omnigent 0.19.1
