"""The rule files in their tiers: rules carry their file:line; a file that fails (its TOML, a rule, an
unknown kind, an example) turns every rule off and says why; an admin directory that is not root's
is refused; a deny in any tier wins over an allow in a higher one; the hash names the files read."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from agy_harness.adapters.policy.files import RulePolicy, Tier, default_tiers, load_policy, user_dir
from agy_harness.ports.events import GateOpened, PermissionRequest

ALLOW_LS = """\
# a comment line
[[rule]]
id = "ls"
decision = "allow"
command = ["ls"]
match = ["ls -la"]
"""


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def gate(line: str, kind: str = "permission", **kw: object) -> GateOpened:
    return GateOpened(
        id="g", cascade_id="c", gate_id="g", kind=kind, trajectory_id="t", step_index=1,  # type: ignore[arg-type]
        permission=PermissionRequest(command_line=line), **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def test_a_rule_names_its_file_and_line_and_the_hash_names_the_files(tmp_path: Path) -> None:
    path = write(tmp_path / "user", "base.toml", ALLOW_LS)
    policy = load_policy(tiers=[Tier(2, tmp_path / "user")])
    decision = policy.decide(gate("ls -la"))
    assert decision.verdict == "allow" and decision.summary() == f"allowed by rule ls ({path}:2)"
    assert decision.rule_id == "ls" and len(decision.rules_hash) == 16 and policy.warnings() == []
    assert decision.file_hash == hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    path.write_text(ALLOW_LS + "\n# edited\n", encoding="utf-8")
    assert (
        load_policy(tiers=[Tier(2, tmp_path / "user")]).decide(gate("ls")).rules_hash != decision.rules_hash
    )


def off(tmp_path: Path, text: str) -> RulePolicy:
    write(tmp_path / "user", "base.toml", ALLOW_LS)
    write(tmp_path / "user", "broken.toml", text)
    policy = load_policy(tiers=[Tier(2, tmp_path / "user")])
    assert policy.decide(gate("ls -la")).verdict == "ask"  # the good file is off too: everything asked
    [warning] = policy.warnings()
    assert warning.startswith("rules are off, every gate is asked: ")
    return policy


def test_a_file_that_fails_turns_every_rule_off_and_says_why(tmp_path: Path) -> None:
    cases = {
        "this is not toml": "not TOML",
        '[[rule]]\nid = "x"\ndecision = "allow"\ncommand = ["ls"]\nmatch = ["pwd"]\n': "'pwd' should match but does not",
        '[[rule]]\nid = "x"\ndecision = "allow"\ncommand = ["ls"]\nnot_match = ["ls"]\n': "should not match but does",
        '[[rule]]\nid = "x"\ndecision = "allow"\nkind = ["plan_approval_bogus"]\n': "unknown gate kind",
        '[[rule]]\nid = "x"\ndecision = "maybe"\ncommand = ["ls"]\n': "decision",
        '[[rule]]\nid = "x"\ndecision = "allow"\ncommand = ["git status"]\n': "one token per item: the command's name 'git status' has a space",
        '[[rule]]\nid = "x"\ndecision = "allow"\n': "must say what it matches",
        '[[rule]]\nid = "x"\ndecision = "allow"\ncommand = ["ls"]\nbogus = 1\n': "bogus",
        '[[rule]]\nid = "x"\ndecision = "deny"\ncommand = ["rm"]\n[[rule]]\nid = "x"\ndecision = "deny"\ncommand = ["rm"]\n': "used twice",
        '[[rule]]\nid = "x"\ndecision = "allow"\ncommand = ["ls"]\nsource = "a:1"\n': "set by the loader",
        '[[rule]]\nid = "q"\ndecision = "allow"\nkind = ["question"]\n': "only ask",
    }  # fmt: skip
    for i, (text, why) in enumerate(cases.items()):
        [warning] = off(tmp_path / str(i), text).warnings()
        assert why in warning, (text, warning)
        assert "broken.toml" in warning


def test_a_failing_example_names_the_rule_and_its_line(tmp_path: Path) -> None:
    text = ALLOW_LS + '\n[[rule]]\nid = "pwd"\ndecision = "allow"\ncommand = ["pwd"]\nmatch = ["pwd; rm x"]\n'
    [warning] = off(tmp_path, text).warnings()
    assert (
        f"pwd ({tmp_path / 'user' / 'broken.toml'}:8): example 'pwd; rm x' should match but does not"
        in warning
    )


def test_an_admin_directory_that_others_can_write_is_refused(tmp_path: Path) -> None:
    admin = tmp_path / "admin"
    write(admin, "site.toml", ALLOW_LS)
    os.chmod(admin, 0o777)  # writable by anyone (and not root's, unless the tests run as root)
    policy = load_policy(tiers=[Tier(3, admin, root_owned=True)])
    assert policy.decide(gate("ls")).verdict == "ask"
    assert "must be root's" in policy.warnings()[0]


def test_a_deny_in_a_lower_tier_wins_over_an_allow_in_a_higher_one(tmp_path: Path) -> None:
    write(
        tmp_path / "project",
        "p.toml",
        '[[rule]]\nid = "no-ls-r"\ndecision = "deny"\ncommand = ["ls", "-R"]\n',
    )
    write(tmp_path / "user", "u.toml", ALLOW_LS)
    policy = load_policy(tiers=[Tier(1, tmp_path / "project"), Tier(2, tmp_path / "user")])
    assert policy.decide(gate("ls -la")).verdict == "allow"
    assert policy.decide(gate("ls -R /")).verdict == "deny"
    assert policy.decide(gate("ls -R /")).message == "denied by rule no-ls-r"


def test_no_rule_files_is_no_rules_not_an_error(tmp_path: Path) -> None:
    policy = load_policy(tiers=default_tiers(tmp_path, {"XDG_CONFIG_HOME": str(tmp_path / "cfg")}))
    assert policy.warnings() == [] and policy.decide(gate("ls")).verdict == "ask"
    assert user_dir({"XDG_CONFIG_HOME": "/x"}) == Path("/x/agy-harness/policy")
    assert user_dir({"HOME": "/h"}) == Path("/h/.config/agy-harness/policy")


def test_rules_on_gates_without_a_command(tmp_path: Path) -> None:
    write(tmp_path / "u", "u.toml", """\
[[rule]]
id = "docs"
decision = "allow"
kind = ["other"]
interaction = ["readUrlContent"]
url_host = ["docs.python.org"]
match = [{ request = { url = "https://docs.python.org/3/" } }]
not_match = [{ request = { url = "https://docs.python.org.evil.com/" } }, { request = { urls = [{ url = "https://docs.python.org/" }, { url = "https://evil.com/" }] } }]
""")  # fmt: skip
    policy = load_policy(tiers=[Tier(2, tmp_path / "u")])
    assert policy.warnings() == []
    url = {"url": "https://docs.python.org/x"}
    assert policy.decide(gate("", "other", interaction="readUrlContent", request=url)).verdict == "allow"
    # a gate the harness cannot answer (agy's terminal only) is never answered by a rule
    unanswerable = gate("", "other", interaction="readUrlContent", request=url, answerable=False)
    assert policy.decide(unanswerable).verdict == "ask"
    evil = {"url": "https://docs.python.org.evil.com/"}
    assert policy.decide(gate("", "other", interaction="readUrlContent", request=evil)).verdict == "ask"
    assert policy.decide(gate("", "permission", interaction="readUrlContent")).verdict == "ask"
    # a rule without `command` never matches a gate that carries a command line
    assert policy.decide(gate("ls", "other", interaction="readUrlContent")).verdict == "ask"


def test_cwd_relative_to_the_workspace_and_the_home_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "u", "u.toml", """\
[[rule]]
id = "tests-here"
decision = "allow"
command = ["pytest"]
cwd = [".", "~/src"]
match = [{ command_line = "pytest -q", cwd = "TMP/ws/sub" }]
not_match = [{ command_line = "pytest -q", cwd = "/elsewhere" }, { command_line = "pytest -q", cwd = "TMP/ws/../other" }]
""".replace("TMP", str(tmp_path)))  # fmt: skip
    monkeypatch.setenv("HOME", "/home/me")
    policy = load_policy(tmp_path / "ws", tiers=[Tier(2, tmp_path / "u")])
    assert policy.warnings() == [], policy.warnings()
    [rule] = policy.ruleset.rules
    assert rule.cwd == (str((tmp_path / "ws").resolve()), "/home/me/src")


def test_a_deny_or_ask_without_command_covers_command_gates_and_an_allow_does_not(tmp_path: Path) -> None:
    write(tmp_path / "u", "u.toml", """\
[[rule]]
id = "ls"
decision = "allow"
command = ["ls"]

[[rule]]
id = "not-in-etc"
decision = "deny"
kind = ["permission"]
cwd = ["/etc"]
message = "not in /etc"

[[rule]]
id = "ask-tool"
decision = "ask"
tool = ["run_in_background"]

[[rule]]
id = "every-permission"
decision = "allow"
kind = ["permission"]
""")  # fmt: skip
    policy = load_policy(tiers=[Tier(2, tmp_path / "u")])
    assert policy.warnings() == []
    in_etc = gate("ls").model_copy(update={"permission": PermissionRequest(command_line="ls", cwd="/etc/x")})
    assert policy.decide(in_etc).verdict == "deny" and policy.decide(in_etc).message == "not in /etc"
    assert policy.decide(gate("ls", tool_name="run_in_background")).verdict == "ask"
    assert policy.decide(gate("ls", tool_name="run_command")).verdict == "allow"
    assert policy.decide(gate("pwd")).verdict == "ask"  # "every-permission" never allows a command
    assert policy.decide(gate("", interaction="fileWrite")).verdict == "allow"  # a permission without one


def test_a_url_host_rule_cannot_vouch_for_urls_it_did_not_read(tmp_path: Path) -> None:
    """The host check reads a bounded part of the request: a URL past that bound (deep, or late in a
    long list), or under a key it does not name, is never vouched for: the gate is asked."""
    write(tmp_path / "u", "u.toml", """\
[[rule]]
id = "docs"
decision = "allow"
kind = ["other"]
interaction = ["readUrlContent"]
url_host = ["docs.python.org"]
""")  # fmt: skip
    policy = load_policy(tiers=[Tier(2, tmp_path / "u")])

    def verdict(request: dict[str, object]) -> str:
        return policy.decide(gate("", "other", interaction="readUrlContent", request=request)).verdict

    good = {"url": "https://docs.python.org/3/"}
    assert verdict(good) == "allow"
    deep: dict[str, object] = {"url": "https://evil.com/"}
    for _ in range(8):
        deep = {"next": deep}
    assert verdict({**good, "more": deep}) == "ask"
    late = [{"url": "https://docs.python.org/"}] * 64 + [{"url": "https://evil.com/"}]
    assert verdict({**good, "items": late}) == "ask"
    assert verdict({**good, "targetUrl": "https://evil.com/"}) == "ask"


@pytest.mark.parametrize("loose", ["file", "directory"])
def test_a_user_rules_file_another_user_can_write_is_refused(tmp_path: Path, loose: str) -> None:
    """The user tier's allows answer for the user: a rules file (or its directory) that another local
    user can write (group or world writable: a planted XDG_CONFIG_HOME, a shared directory) is not
    read; the rules are off and say why (everything is asked)."""
    path = write(tmp_path / "u", "u.toml", ALLOW_LS)
    os.chmod(tmp_path / "u", 0o700)
    os.chmod(path, 0o600)
    assert load_policy(tiers=[Tier(2, tmp_path / "u")]).decide(gate("ls")).verdict == "allow"
    os.chmod(path if loose == "file" else tmp_path / "u", 0o606 if loose == "file" else 0o707)  # world-writable
    policy = load_policy(tiers=[Tier(2, tmp_path / "u")])
    assert policy.decide(gate("ls")).verdict == "ask"
    [warning] = policy.warnings()
    assert "writable by others" in warning and str(tmp_path / "u") in warning


def test_an_allow_without_command_never_allows_a_command_named_only_by_its_resource(tmp_path: Path) -> None:
    """agy's permission names a command by its resource (``action: command``, ``target``) as well as
    by the step's command line: where only the resource carries it, an allow without ``command``
    (a tool, a kind) must not approve it unparsed."""
    write(tmp_path / "u", "u.toml", """\
[[rule]]
id = "run-tool"
decision = "allow"
tool = ["run_command"]
""")  # fmt: skip
    policy = load_policy(tiers=[Tier(2, tmp_path / "u")])
    command = GateOpened(
        id="g", cascade_id="c", gate_id="g", kind="permission", trajectory_id="t", step_index=1,
        tool_name="run_command", permission=PermissionRequest(action="command", target="rm -rf ~"),
    )  # fmt: skip
    assert policy.decide(command).verdict == "ask"
    other = command.model_copy(update={"permission": PermissionRequest(action="read", target="/etc/hosts")})
    assert policy.decide(other).verdict == "allow"  # (a non-command request: the tool rule holds)
