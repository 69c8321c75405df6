"""The wrapper reader against the REAL wrappers (issue 46, item 1): lines made of real wrapper binaries
(GNU xargs, env, timeout, nice, nohup, stdbuf, find; util-linux setsid, flock, ionice, chrt, taskset,
unshare, setpriv, script; strace; GNU parallel; bash's time, command, exec, sh -c) with generated
options, around ``npm test``, ``npm publish``, ``test`` or ``rm x``, run by bash with stub executables
first on PATH that record the argv they were given.

Whenever the rules (allow ``npm test``, allow ``test``, deny ``rm``) allowed the line, everything that
ran is a command the reader listed, with the words the reader read as its start (``npm test`` plus
what xargs appends, never ``npm publish`` through an ``-I test`` placeholder, never ``npm test`` read as
``test``); and whenever ``rm`` really ran, the rules denied the line.

Stubs run nothing: they only write their argv to a log. The working directory is a fresh temporary
one; the only real files touched are the lock, log and trace files the wrappers write there."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agy_harness.adapters.policy.shell import TreeSitterParser
from agy_harness.core.policy_match import RuleSet, decide
from agy_harness.core.policy_rules import rules_from_table
from agy_harness.ports.events import GateOpened, PermissionRequest

PARSER = TreeSitterParser()
RULES = """\
[[rule]]
id = "npm-test"
decision = "allow"
command = ["npm", "test"]

[[rule]]
id = "test"
decision = "allow"
command = ["test"]

[[rule]]
id = "no-rm"
decision = "deny"
command = ["rm"]
"""
RULESET = RuleSet(rules=rules_from_table(tomllib.loads(RULES), name="real.toml", text=RULES, tier=1))
STUBS = ("npm", "rm", "test", "publish")
SEP, END = "\x1e", "\x1d"
NEEDED = ("xargs", "env", "timeout", "nice", "nohup", "stdbuf", "find", "setsid", "flock", "ionice", "chrt",
          "taskset", "setpriv", "script", "unshare", "strace", "parallel")  # fmt: skip
MISSING = [name for name in NEEDED if shutil.which(name) is None]

pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"needs the real {MISSING}")

Words = list[str]


def one_of(*choices: Words) -> st.SearchStrategy[Words]:
    return st.sampled_from(choices)


def opts(*choices: Words) -> st.SearchStrategy[Words]:
    """Some of a wrapper's options, in any order."""
    return st.lists(st.sampled_from(choices), max_size=3).map(lambda chosen: [w for c in chosen for w in c])


def _env(stub_path: str) -> st.SearchStrategy[Words]:
    options = opts(["-u", "HOME"], ["-uHOME"], ["--unset=HOME"], ["-v"], ["-C", "sub"], ["--chdir=sub"],
                   ["-S", "npm test"], ["-S", "test"], ["-Snpm publish"], ["--split-string=rm x"], ["-i"],
                   ["--ignore-environment"], ["--default-signal"], ["--ignore-signal=PIPE"], ["--"])  # fmt: skip

    def fix(parts: tuple[Words, bool, Words]) -> Words:
        chosen, dash, assign = parts
        clears = dash or any(w in ("-i", "--ignore-environment") for w in chosen)
        if "--" in chosen:
            chosen = [w for w in chosen if w != "--"] + ["--"]
        # an emptied environment finds commands on the default PATH (the real rm): the stubs come first
        return ["env", *chosen, *(["-"] if dash else []), *([stub_path] if clears else []), *assign]

    return st.tuples(options, st.booleans(), one_of([], ["FOO=1"])).map(fix)


def wrappers(stub_path: str) -> st.SearchStrategy[Words]:
    """One wrapper with its options (the command follows it). Never one that looks commands up on a
    PATH of its own (``command -p``, ``env -i`` without PATH): the stubs would not see what ran."""
    return st.one_of(
        opts(["-0"], ["-r"], ["-t"], ["-n1"], ["-n", "1"], ["-L", "1"], ["-I", "test"], ["-I", "npm"],
             ["-itest"], ["-i"], ["--replace"], ["--replace=test"], ["-a", ".agy-args"], ["--arg-file=.agy-args"],
             ["-E", "zz"], ["-e"], ["-l"], ["-P", "1"], ["-s", "4096"], ["-x"], ["--null"], ["-0r"],
             ["-rI", "test"], ["--process-slot-var=V"], ["--max-args=1"], ["--"]).map(lambda o: ["xargs", *o]),
        _env(stub_path),
        st.tuples(opts(["-s", "TERM"], ["-sTERM"], ["--signal=TERM"], ["-k", "1"], ["--foreground"],
                       ["--preserve-status"], ["-v"]), one_of(["5"], ["5s"], [])).map(
            lambda t: ["timeout", *t[0], *t[1]]),
        opts(["-n", "1"], ["-n1"], ["--adjustment=1"], ["-1"], ["-n", "test"]).map(lambda o: ["nice", *o]),
        st.just(["nohup"]),
        opts(["-oL"], ["-o", "L"], ["--output=L"], ["-i0"], ["-e", "0"]).map(lambda o: ["stdbuf", *o]),
        opts(["-w"], ["--wait"]).map(lambda o: ["setsid", *o]),
        st.tuples(opts(["-n"], ["-s"], ["-x"], ["-w", "3"], ["-o"], ["-F"], ["--verbose"]), one_of(["lk"], [])).map(
            lambda t: ["flock", *t[0], *t[1]]),
        opts(["-c3"], ["-c", "3"], ["-t"], ["-n", "4"]).map(lambda o: ["ionice", *o]),
        st.tuples(one_of(["-o"], ["-b"], ["--other"], []), one_of(["0"], [])).map(lambda t: ["chrt", *t[0], *t[1]]),
        one_of(["taskset", "1"], ["taskset", "-c", "0"], ["taskset", "0x1"]),
        one_of(["setpriv", "--no-new-privs"], ["unshare", "-r"], ["unshare"], ["strace", "-o", "trace", "-f"]),
        one_of(["time"], ["time", "-p"], ["command"], ["exec"], ["exec", "-a", "x"],
               ["builtin"]),
    )  # fmt: skip


TARGETS = one_of(["npm", "test"], ["npm", "test", "a"], ["npm", "publish"], ["rm", "x"], ["test"], ["npm"])


def lines(stub_path: str) -> st.SearchStrategy[str]:
    def join(parts: tuple[list[Words], Words, str]) -> str:
        chain, target, form = parts
        words = [w for wrapper in chain for w in wrapper] + target
        line = shlex.join(words)
        if form == "find":
            return f"find . -maxdepth 0 -exec {line} {{}} \\;"
        if form == "find+":
            return f"find . -maxdepth 0 -execdir {line} +"
        if form == "parallel":
            return f"parallel --will-cite {line} ::: b"
        if form == "script":
            return f"script -qc {shlex.quote(line)} /dev/null </dev/null"  # (with input, it waits 2 s)
        if form == "sh":
            return f"sh -c {shlex.quote(line)}"
        if form == "flock-c":
            return f"flock lk -c {shlex.quote(line)}"
        return line

    forms = st.sampled_from(["plain"] * 10 + ["find", "find+", "parallel", "script", "sh", "flock-c"])
    return st.tuples(st.lists(wrappers(stub_path), min_size=1, max_size=2), TARGETS, forms).map(join)


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("real-stubs")
    log = root / "log"
    bin_ = root / "bin"
    bin_.mkdir()
    for name in STUBS:
        stub = bin_ / name
        stub.write_text(
            f'#!/bin/sh\nrec=$(printf "%s{SEP}" "${{0##*/}}" "$@")\nprintf "%s{END}" "$rec" >> {shlex.quote(str(log))}\n'
        )
        stub.chmod(0o755)
    return bin_, log


def gate(line: str) -> GateOpened:
    return GateOpened(
        id="g", cascade_id="c", gate_id="g", kind="permission", trajectory_id="t", step_index=1,
        tool_name="run_command", interaction="permission", permission=PermissionRequest(command_line=line),
    )  # fmt: skip


def ran(line: str, bin_: Path, log: Path, where: Path) -> list[tuple[str, ...]] | None:
    log.write_text("")
    (where / "sub").mkdir(exist_ok=True)
    (where / ".agy-args").write_text("publish\nrm\n")
    path = f"{bin_}:/usr/local/bin:/usr/bin:/bin"
    env = {"PATH": path, "HOME": str(where), "LC_ALL": "C", "TMPDIR": str(where / "tmp")}
    (where / "tmp").mkdir(exist_ok=True)
    try:
        subprocess.run(
            ["bash", "--norc", "-c", line],
            cwd=where,
            env=env,
            input=b"publish x\n",
            capture_output=True,
            timeout=20,
        )
    except subprocess.TimeoutExpired:
        return None
    return [tuple(rec.split(SEP)[:-1]) for rec in log.read_text().split(END) if rec]


def check(line: str, bin_: Path, log: Path, where: Path) -> None:
    parsed = PARSER.parse(line)
    verdict = decide(RULESET, gate(line), parsed).verdict
    executed = ran(line, bin_, log, where)
    if executed is None:
        return
    own = str(where / "tmp") + "/"  # GNU parallel removes its own temporary files with rm (on PATH)
    if any(argv[0] == "rm" and not all(a.startswith(own) for a in argv[1:]) for argv in executed):
        assert verdict == "deny", f"{line!r}: rm ran ({executed}) and the rules said {verdict}"
    if verdict == "allow":
        read = [p.argv for p in parsed.commands]
        for argv in executed:
            assert argv[:2] == ("npm", "test") or argv[0] == "test", f"{line!r} allowed, and {argv} ran"
            assert any(argv[: len(p)] == p for p in read), (
                f"{line!r} allowed: {argv} ran, the reader read {read}"
            )


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
@given(data=st.data())
def test_an_allowed_line_runs_only_what_the_rules_read_and_rm_is_always_denied(
    data: st.DataObject, stubs: tuple[Path, Path], tmp_path: Path
) -> None:
    bin_, log = stubs
    line = data.draw(lines(f"PATH={bin_}:/usr/bin:/bin"), label="line")
    where = tmp_path / "run"
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir()
    check(line, bin_, log, where)


@pytest.mark.parametrize(
    "line",
    [
        "xargs -I test -a .agy-args npm test",  # the attack: npm publish, npm rm
        "xargs -I test npm test", "xargs --replace npm test {}", "xargs -itest npm test", "env - PATH={stubs} rm x", "find . -maxdepth 0 -exec rm {} \\;", "parallel --will-cite rm ::: x",
        "script -qc 'rm x' /dev/null", "unshare -r rm x", "strace -o F rm x", "setpriv --no-new-privs rm x",
        "flock lk npm -c test", "timeout npm test", "chrt -o npm test",
    ],
)  # fmt: skip
def test_the_reported_shapes_on_the_real_binaries(
    line: str, stubs: tuple[Path, Path], tmp_path: Path
) -> None:
    check(line.replace("{stubs}", str(stubs[0])), *stubs, tmp_path)
