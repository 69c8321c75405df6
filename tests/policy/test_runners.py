"""Wrappers and runners (issue 46, items 1 and 2), through the public path: the rules answering gates
on the simulator, and ``agy-harness policy``.

* A prefix allow is never widened by a wrapper's own option: an option that substitutes into the
  command's words (``xargs -I``/``-i``/``--replace``, ``find -exec``'s ``{}``, ``parallel``), reads them
  from elsewhere (``xargs -a``, ``env -S``), or changes where or as what it runs (``env -C``,
  ``exec -a``, ``xargs --process-slot-var``) makes the line not understood: the human is asked. An
  option's optional value is read only attached (``watch -d npm test`` runs ``npm test``, never
  ``test``), and flock's ``-c`` only right after its FILE.
* A deny holds through every runner that executes its arguments as a command (``unshare``,
  ``strace -o F``, ``nsenter``, ``runuser``, ``script -qc``, ``ssh host``, ``setpriv``, ``systemd-run``
  ...), and an allow through one is not understood.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agy_harness.adapters.policy.files import Tier, load_policy
from agy_harness.adapters.policy.shell import TreeSitterParser
from agy_harness.adapters.policy.wrapper_options import RUNNERS, SPECS
from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.root.policy import gate_of
from agy_harness.ports.events import Notice
from agy_harness.ports.protocols import GateAnswer
from tests.fakes import RecordingSink
from tests.integration.helpers import harness_on, run_turn

from .test_policy_cli import policy

PARSER = TreeSitterParser()

#: lines that must never be read as the allowed command (each ran, or would run, something else)
WIDENED = [
    "xargs -I test -a .agy-args npm test", "xargs -a .agy-args npm test", "xargs --arg-file=f npm test",
    "xargs -i npm test {}", "xargs -itest npm test", "xargs --replace npm test", "xargs --replace=test npm test",
    "xargs -0I test npm test", "xargs --process-slot-var=PATH npm test", "find . -exec npm test {} \\;",
    "find . -execdir npm test \\;", "find . -ok npm test \\;", "parallel npm test ::: a", "env -S 'npm test'",
    "env --split-string='npm test'", "env -C /tmp npm test", "env --chdir=/ npm test", "exec -a x npm test",
    "timeout npm test", "chrt -o npm test",
    "unshare -r npm test", "strace -o F npm test", "nsenter -t 1 npm test", "runuser -u me npm test",
    "script -qc 'npm test'", "ssh host npm test", "setpriv --no-new-privs npm test", "systemd-run npm test",
    "sudo npm test", "firejail npm test", "xargs --repl=x npm test",
]  # fmt: skip

#: lines that run `npm test` (or nothing), never `test`: a wrapper's optional value is read only
#: attached, flock's -c only right after its FILE
NOT_TEST = ["watch -d npm test", "flock /tmp/l npm -c test", "xargs -l npm test", "xargs -e npm test"]

#: lines that run rm, however it is dressed
RUN_RM = [
    "unshare rm x", "unshare -r rm x", "unshare --map-root-user sh -c 'rm x'", "strace -o F rm x",
    "strace -f -o log rm -rf build", "ltrace rm x", "nsenter -t 1 -m rm x", "runuser -u bob rm x",
    "runuser -l bob -c 'rm x'", "script -c 'rm x'", "script -qc 'rm x' /dev/null", "script -q -c 'rm x'",
    "ssh host rm x", "ssh host 'ls; rm x'", "ssh -p 22 host rm -rf build", "ssh host \"ec\" \"ho; rm x\"", "ssh -o ProxyCommand='rm x' host", "ssh -oProxyCommand='rm x' host",
    "setpriv --reuid=1000 rm x", "systemd-run --user rm x", "systemd-run -p X=1 --wait rm x", "chroot / rm x",
    "flock /tmp/l rm x", "flock -w 3 /tmp/l -c 'rm x'", "ionice -c3 rm x", "chrt 1 rm x", "chrt -o 0 rm x",
    "taskset 1 rm x", "taskset -c 0 rm x", "stdbuf -oL rm x", "firejail rm x", "firejail --quiet rm x",
    "doas rm x", "sudo -u root rm x", "sudo -s 'rm x'", "su -c 'rm x'", "su -lc 'rm x'", "su bob -c 'rm x'",
    "watch rm x", "watch -x rm x", "watch -d rm x", "time rm x", "command rm x", "builtin eval 'rm x'",
    "exec rm x", "exec -a ls rm x", "eval 'rm x'", "sh -c 'rm x'", "parallel rm ::: a", "parallel ::: 'rm x'",
    "parallel 'rm {}' ::: a", "env -S 'rm x'", "env --split-string='rm -rf' build", "env - rm x",
    "env -C /tmp rm x", "xargs -I {} rm {}", "xargs -a list rm", "find . -exec rm {} +", "sg grp -c 'rm x'",
    "capsh -- -c 'rm x'", "prlimit --nofile=10 rm x", "setarch x86_64 rm x", "fakeroot rm x", "valgrind rm x",
    "timeout -k 1 5 rm x", "nice -n 1 rm x", "setsid -w rm x", "nohup rm x", "pkexec rm x", "nsenter -a rm x",
]  # fmt: skip


def rules(tmp_path: Path, examples: bool = True) -> Path:
    """An allow on `npm test` and on `test` (prefixes) that none of WIDENED may match, and a deny on
    `rm` that each of RUN_RM must match: checked by the rules' own examples (``examples``)."""
    allow = ["npm test", "xargs -0r npm test", "env - npm test", "watch -d npm test"]
    text = (
        '[[rule]]\nid = "npm-test"\ndecision = "allow"\ncommand = ["npm", "test"]\n'
        f"match = {json.dumps(allow)}\nnot_match = {json.dumps(WIDENED)}\n\n"
        '[[rule]]\nid = "test"\ndecision = "allow"\ncommand = ["test"]\n'
        f"not_match = {json.dumps(WIDENED + NOT_TEST)}\n\n"
        '[[rule]]\nid = "no-rm"\ndecision = "deny"\ncommand = ["rm"]\nmessage = "never delete files"\n'
        f"match = {json.dumps(RUN_RM)}\n"
    )
    if not examples:
        text = "\n".join(line for line in text.splitlines() if "match = " not in line)
    (tmp_path / "rules.toml").write_text(text, encoding="utf-8")
    return tmp_path / "rules.toml"


def test_policy_test_holds_every_widened_line_back_and_every_runner_denied(tmp_path: Path) -> None:
    run = policy("test", str(rules(tmp_path)))
    assert run.returncode == 0, run.stdout + run.stderr
    assert (
        run.stdout
        == f"ok   {tmp_path / 'rules.toml'}: 3 rules, {2 * len(WIDENED) + len(NOT_TEST) + len(RUN_RM) + 4} examples hold\n"
    )


def test_explain_asks_for_the_xargs_placeholder_and_denies_through_script(tmp_path: Path) -> None:
    path = rules(tmp_path, examples=False)
    run = policy("explain", "xargs -I test -a .agy-args npm test", "--rules", str(path))
    assert run.returncode == 0 and run.stdout.startswith("decision: ask\nwhy: not understood: xargs -I ")
    run = policy("explain", "script -qc 'rm -rf build' /dev/null", "--rules", str(path))  # a TypeError before
    assert run.returncode == 0 and run.stdout.startswith("decision: deny (denied by rule no-rm ("), run.stdout
    assert "  ['rm', '-rf', 'build', '/dev/null']  (via script ?)" in run.stdout


async def test_on_the_simulator_the_placeholder_is_asked_and_the_runner_denied(
    sim: Simulator, tmp_path: Path
) -> None:
    rules(tmp_path, examples=False)
    policy_ = load_policy(tiers=[Tier(2, tmp_path)])
    sink = RecordingSink()
    async with harness_on(sim, sink, policy=policy_) as session:
        for _ in range(2):
            await sink.answers.put(GateAnswer(allow=False))
        await run_turn(session, sink, "run: xargs -I test -a .agy-args npm test")
        await run_turn(session, sink, "run: strace -o F rm -rf build")
    asked = [g.permission.command_line for g in sink.asked if g.permission]
    assert asked == ["xargs -I test -a .agy-args npm test"]  # the human, not the npm-test rule
    texts = [e.text for e in sink.events if isinstance(e, Notice)]
    assert any(t.startswith("denied by rule no-rm (") for t in texts), texts
    assert not any(line.startswith(("strace", "xargs")) for line, _ in sim.executed)


@pytest.mark.parametrize(
    "line",
    [
        "sudo " * 3000 + "rm x",
        "sudo " + " ".join(f"'a{i} b'" for i in range(3000)) + " 'rm x'",
        "ssh host " + " ".join(f"w{i}" for i in range(10000)) + " 'rm x'",
        'ssh -o "X=\'" host "echo \'" "\' ; rm x"',  # a quote opened among ssh's own words
        "sudo sh -c " * 8 + "'rm x'",
        "ssh h " + "'sudo " * 6 + "rm x" + "'" * 6,
        "unshare -r " + "-- " * 100 + "rm x",
    ],
    ids=["3000 sudo", "3000 scripts", "10000 words", "quote", "nested sh -c", "nested quotes", "100 --"],
)
def test_a_deny_holds_behind_long_and_nested_runners(tmp_path: Path, line: str) -> None:
    """What a runner may run is read within bounds (a window of words from each start, scripts read
    once each, a budget of characters): a hostile line is still denied, and never allowed."""
    rules(tmp_path, examples=False)
    assert load_policy(tiers=[Tier(2, tmp_path)]).decide(gate_of(line)).verdict == "deny"


WRAPPER_NAMES = sorted(
    {*SPECS, *RUNNERS, "bash", "sh", "eval", "trap", "find", "xargs", "env", "flock", "watch"}
)
TOKENS = ["-c", "-qc", "--", "-", "-i", "-S", "rm x", "-I", "{}", "test", "npm", "-a", "x=1", "--command=rm x",
          "-exec", ";", "+", "$X", "-n", "5", "-0r", "--replace", "-e", "-d", "-x", "'", "options", "script"]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    words=st.tuples(
        st.sampled_from(WRAPPER_NAMES), st.lists(st.sampled_from(TOKENS + WRAPPER_NAMES), max_size=7)
    ).map(lambda t: [t[0], *t[1]])
)
def test_the_reader_never_fails_on_a_wrapper_and_sees_rm_behind_it(words: list[str]) -> None:
    """Whatever options a wrapper or runner is given, the reader reads it (``script -c`` raised a
    TypeError: the line was 'not read', and a deny on rm behind it did not hold); behind a runner, a
    word holding a script is read as one, wherever it stands."""
    parsed = PARSER.parse(shlex.join(words))
    assert "could not be read" not in parsed.reason
    if words[0] in RUNNERS and {"rm x", "--command=rm x"} & set(words[1:]):  # wherever it stands
        assert any(p.argv and p.argv[0] == "rm" for p in parsed.commands), (words, parsed.commands)


def test_a_rule_bound_to_a_directory_allows_nothing_on_a_line_that_changes_directory(tmp_path: Path) -> None:
    """`cd /elsewhere && npm test` (cd allowed by a rule) runs npm test elsewhere: a rule allowing it in
    the gate's directory only cannot vouch for it (it did before); `env -C` likewise (not understood)."""
    (tmp_path / "r.toml").write_text(
        '[[rule]]\nid = "cd"\ndecision = "allow"\ncommand = ["cd"]\n\n'
        '[[rule]]\nid = "npm-test-here"\ndecision = "allow"\ncommand = ["npm", "test"]\ncwd = ["/p"]\n',
        encoding="utf-8",
    )
    rules_ = ("--rules", str(tmp_path / "r.toml"), "--cwd", "/p")
    for line in (
        "cd /elsewhere && npm test",
        "pushd /x; npm test",
        "(cd /x; npm test)",
        "env -C /x npm test",
    ):
        run = policy("explain", line, *rules_)
        assert run.returncode == 0 and run.stdout.startswith("decision: ask\n"), (line, run.stdout)
    run = policy("explain", "cd /elsewhere && npm test", *rules_)
    assert "why: the line changes directory: npm-test-here (" in run.stdout
    assert policy("explain", "npm test", *rules_).stdout.startswith(
        "decision: allow (allowed by rule npm-test-here"
    )


def test_a_character_that_crashed_the_grammar_is_read_and_the_cli_answers(tmp_path: Path) -> None:
    """tree-sitter-bash 0.25.1 crashed the whole process (a segmentation fault, found by
    tests/contracts/test_policy.py) on a brace then a character of the high planes: a hostile line
    killed the reader. Read many times in one process (the crash came about one read in a few
    hundred, one line read again and again), and through `policy explain`: an answer, and a deny behind such a line holds."""
    lines = ["g2\U0002fa9f{\U000dc020RI", "{\U000d0000RI"]
    code = (
        "import sys\nfrom agy_harness.adapters.policy.shell import TreeSitterParser\n"
        "p = TreeSitterParser()\nfor line in sys.argv[1:]:\n    for _ in range(10000): p.parse(line)\n"
    )
    run = subprocess.run([sys.executable, "-c", code, *lines], capture_output=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    run = policy("explain", "rm {\U0010fffd", "--rules", str(rules(tmp_path, examples=False)))
    assert run.returncode == 0 and run.stdout.startswith("decision: deny (denied by rule no-rm ("), run.stdout
