"""The project tier lives where agy can write (``<workspace>/.agy-harness/policy``): its deny and ask
rules always hold, but its allow rules answer only once the user trusted that exact file content
(``agy-harness policy trust FILE``); an untrusted or edited file's allows are ignored and the session's
warning notice names the file and the command that trusts it."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from agy_harness.adapters.policy.files import load_policy, trust_file
from agy_harness.adapters.simulator import Simulator
from agy_harness.ports.events import GateOpened, Notice, PermissionRequest
from agy_harness.ports.protocols import GateAnswer
from tests.fakes import RecordingSink
from tests.integration.helpers import harness_on, run_turn

from .test_bridge_rules import RULES
from .test_policy_cli import policy as policy_cli


def gate(line: str) -> GateOpened:
    return GateOpened(
        id="g", cascade_id="c", gate_id="g", kind="permission", trajectory_id="t", step_index=1,
        permission=PermissionRequest(command_line=line),
    )  # fmt: skip


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    rules = tmp_path / "ws" / ".agy-harness" / "policy" / "rules.toml"
    rules.parent.mkdir(parents=True)
    rules.write_text(RULES, encoding="utf-8")
    return rules


def warnings(sink: RecordingSink) -> list[str]:
    return [e.text for e in sink.events if isinstance(e, Notice) and e.level == "warning"]


async def test_an_untrusted_project_allow_does_not_answer_and_the_session_says_so(
    sim: Simulator, project: Path
) -> None:
    workspace = project.parents[2]
    sink = RecordingSink()
    async with harness_on(sim, sink, policy=load_policy(workspace)) as session:
        await sink.answers.put(GateAnswer(allow=True))
        await run_turn(session, sink, "run: git status")
    assert [g.permission.command_line for g in sink.asked if g.permission] == ["git status"]  # the human
    [warning] = warnings(sink)
    assert f"{project}: its 1 allow rule ignored" in warning
    assert f"agy-harness policy trust {project}" in warning
    assert load_policy(workspace).decide(gate("rm -rf build")).verdict == "deny"  # a deny holds untrusted


async def test_after_trust_it_answers_and_after_an_edit_it_is_untrusted_again(
    sim: Simulator, project: Path, tmp_path: Path
) -> None:
    workspace = project.parents[2]
    run = policy_cli("trust", str(project), home=tmp_path / "config")
    assert run.returncode == 0 and run.stdout.startswith(f"trusted {project} (sha256 "), run.stderr
    store = trust_file({"XDG_CONFIG_HOME": str(tmp_path / "config")})
    assert stat.S_IMODE(store.stat().st_mode) == 0o600 and stat.S_IMODE(store.parent.stat().st_mode) == 0o700
    assert list(json.loads(store.read_text()).keys()) == [str(project.resolve())]
    sink = RecordingSink()
    async with harness_on(sim, sink, policy=load_policy(workspace)) as session:
        await run_turn(session, sink, "run: git status")
    assert sink.asked == [] and warnings(sink) == []  # the trusted allow answered
    assert load_policy(workspace).decide(gate("rm -rf build")).verdict == "deny"
    project.write_text(RULES.replace('command = ["git", "status"]', 'command = ["git"]'), encoding="utf-8")
    edited = load_policy(workspace)
    assert edited.decide(gate("git status")).verdict == "ask"  # agy widened it: untrusted again
    assert edited.decide(gate("rm -rf build")).verdict == "deny"
    [warning] = edited.warnings()
    assert f"agy-harness policy trust {project}" in warning


def test_a_file_that_does_not_load_is_not_trusted(project: Path, tmp_path: Path) -> None:
    project.write_text(RULES.replace('match = ["git status"]', 'match = ["git log"]'), encoding="utf-8")
    run = policy_cli("trust", str(project), home=tmp_path / "config")
    assert run.returncode == 2 and run.stderr.startswith("agy-harness policy: not trusted: ")
    assert not trust_file({"XDG_CONFIG_HOME": str(tmp_path / "config")}).exists()


def test_a_trust_store_another_user_can_write_trusts_nothing(project: Path) -> None:
    """The trusted-rules file says which project allows answer for the user: one another local user
    can write (world-writable) is not read, so no project allow answers."""
    from agy_harness.adapters.policy.files import trust

    workspace = project.parents[2]
    trust(project)
    assert load_policy(workspace).decide(gate("git status")).verdict == "allow"
    trust_file().chmod(0o606)
    assert load_policy(workspace).decide(gate("git status")).verdict == "ask"


@pytest.mark.parametrize("link", ["file", "directory"])
async def test_trust_is_never_borrowed_through_a_link(
    sim: Simulator, project: Path, tmp_path: Path, link: str
) -> None:
    """Project A's file is trusted; project B's rules file (or its whole .agy-harness directory) is a
    symbolic link to A's: B's allows do not answer (they asked before: the link resolved to A's
    trusted path), the session says why, and `policy trust` refuses the link."""
    assert policy_cli("trust", str(project), home=tmp_path / "config").returncode == 0
    other = tmp_path / "other"
    if link == "file":
        (other / ".agy-harness" / "policy").mkdir(parents=True)
        (other / ".agy-harness" / "policy" / "rules.toml").symlink_to(project)
    else:
        other.mkdir()
        (other / ".agy-harness").symlink_to(project.parents[1])
    borrowed = other / ".agy-harness" / "policy" / "rules.toml"
    sink = RecordingSink()
    async with harness_on(sim, sink, policy=load_policy(other)) as session:
        await sink.answers.put(GateAnswer(allow=True))
        await run_turn(session, sink, "run: git status")
    assert [g.permission.command_line for g in sink.asked if g.permission] == ["git status"]  # the human
    [warning] = warnings(sink)
    assert f"{borrowed}: its 1 allow rule ignored (" in warning and "is a symbolic link" in warning
    assert load_policy(other).decide(gate("rm -rf build")).verdict == "deny"  # its denies still hold
    run = policy_cli("trust", str(borrowed), home=tmp_path / "config")
    assert run.returncode == 2 and "is a symbolic link (trust is never borrowed through a link)" in run.stderr
    assert load_policy(project.parents[2]).decide(gate("git status")).verdict == "allow"  # A's own: trusted


def test_a_file_in_no_project_rules_directory_is_not_trusted(tmp_path: Path) -> None:
    """Trust is recorded under a project tier's own path: a file elsewhere would be trusted for no
    tier (and the store would claim it)."""
    loose = tmp_path / "rules.toml"
    loose.write_text(RULES, encoding="utf-8")
    run = policy_cli("trust", str(loose), home=tmp_path / "config")
    assert run.returncode == 2  # bad input: one line, exit 2 (every policy action alike)
    [line] = run.stderr.splitlines()  # one line, naming the file and where project rules live
    assert f"{loose}: not a project rules file (a .toml file in a project's .agy-harness/policy/)" in line
    assert not trust_file({"XDG_CONFIG_HOME": str(tmp_path / "config")}).exists()
