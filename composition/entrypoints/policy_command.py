"""``agy-harness policy``: check rule files, explain a decision, propose the narrowest rule.

* ``policy test [FILE...]``: each file's rules and examples (exit 1 when one fails); without FILE, the
  session's tiers, then the rules run over recorded gates (``--recorded``: files ``replay`` reads; by
  default the simulator's recorded shapes), each gate's decision printed.
* ``policy explain TEXT``: TEXT is a command line or a gate's JSON; the decision, why, the commands the
  line runs as the shell reads it, and every rule that matches.
* ``policy trust FILE``: trust a project rules file's exact content (its allow rules answer from the
  next session; a changed file is untrusted again). A project file's deny and ask rules need no trust.
* ``policy propose COMMAND``: the narrowest rule allowing exactly that command (TOML, to edit and save
  yourself; never saved here).

Exit codes, the same for the same input in every action: 0 done; 1 ``policy test`` found a file that
fails (its ``FAIL`` line on stdout: that is the test's verdict); 2 bad input, one line on stderr (a
``--rules`` or ``trust`` file that cannot be read as rules, a GATE that is neither a command line nor a
gate's JSON, a command no rule can be proposed for, a file outside a project's rules directory).
``agy-harness policy`` alone lists the actions (exit 2: an action is needed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .cli_args import command
from .errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, BadInput

DESCRIPTION = """\
Rules that answer gates for you (docs/rules.md): check rule files and their
examples, explain what the rules decide for a command or a gate, propose the narrowest rule."""

EPILOG = """\
exit codes: 0 done, 1 `policy test` found a file that fails, 2 bad input

examples:
  agy-harness policy test ~/.config/agy-harness/policy/base.toml
  agy-harness policy explain --rules my.toml "git status && rm -rf build"
  agy-harness policy trust .agy-harness/policy/project.toml
  agy-harness policy propose "pytest -q tests/core" --cwd "$PWD\""""

ACTIONS = {
    "test": (
        "check rule files' examples; without FILE also run the rules over recorded gates",
        """\
Check rule files: each file's rules load and their examples hold (a FAIL line names the rule, its
line and what failed; exit 1). Without FILE, the session's tiers are read and their rules run over
recorded gates (--recorded, else the simulator's recorded shapes), each gate's decision printed.""",
        """\
examples:
  agy-harness policy test ~/.config/agy-harness/policy/base.toml
  agy-harness policy test --workspace ~/proj --recorded session.jsonl""",
    ),
    "explain": (
        "which rules match a command line or a gate (JSON), and why",
        """\
What the rules decide for GATE (a command line, or a gate_opened event as JSON) and why: the
commands the line runs as the shell reads them, and every rule that matches. The rules are the
session's tiers (the project's: --workspace), or only the files given with --rules.""",
        """\
examples:
  agy-harness policy explain "git status && rm -rf build"
  agy-harness policy explain --rules my.toml --rules team.toml make""",
    ),
    "trust": (
        "trust a project rules file's exact content (its allow rules then answer)",
        """\
Trust a project rules file (a .toml file in a project's .agy-harness/policy/ directory) as it is
now: its allow rules answer from the next session, until the file changes. The file must load; a
file anywhere else is refused (the session never reads it: your own rules go in
~/.config/agy-harness/policy/, which needs no trust).""",
        """\
examples:
  agy-harness policy trust .agy-harness/policy/project.toml""",
    ),
    "propose": (
        "the narrowest rule allowing exactly this command (printed, not saved)",
        """\
The narrowest rule that allows exactly COMMAND (in --cwd, when given), as TOML: checked (it loads
and its example holds), printed for you to edit and save; never saved here.""",
        """\
examples:
  agy-harness policy propose "pytest -q tests/core" --cwd "$PWD\"""",
    ),
}


def _shapes() -> list[str]:
    from agy_harness.adapters.simulator import steps

    return sorted(str(p) for p in (Path(steps.__file__).parent / "shapes").glob("*.json"))


def _workspace(args: argparse.Namespace) -> Path | None:
    """``--workspace``: a directory (else bad input: its rules would silently be none)."""
    if not args.workspace:
        return None
    if not Path(args.workspace).is_dir():
        raise BadInput(f"--workspace {args.workspace}: no such directory; name the project's directory")
    return Path(args.workspace)


def _test(args: argparse.Namespace) -> int:
    from agy_harness.composition.root.policy import RuleError, check_file, policy_of

    from .replay import ReplayInputError, UnreadableInput, replay

    workspace = _workspace(args)
    recorded = []
    for path in args.recorded or ():  # read before anything is printed: bad input says one line
        try:
            recorded.extend(replay([path]))
        except (ReplayInputError, UnreadableInput) as exc:
            raise BadInput(f"--recorded {path}: {str(exc).removeprefix(f'cannot read {path}: ')}") from None
    failed = False
    for path in args.files:
        try:
            rules = check_file(Path(path))
        except RuleError as exc:
            print(f"FAIL {exc}", file=sys.stdout)
            failed = True
            continue
        examples = sum(len(r.match) + len(r.not_match) for r in rules)
        print(f"ok   {path}: {len(rules)} rules, {examples} examples hold")
    if args.files:
        return EXIT_FAILURE if failed else EXIT_OK
    policy = policy_of(None, workspace)
    if policy.ruleset.off:
        print(f"FAIL the rules are off: {policy.ruleset.off}")
        return EXIT_FAILURE
    print(f"ok   {len(policy.ruleset.rules)} rules from {len(policy.ruleset.files)} files, examples hold")
    from agy_harness.ports.events import GateOpened

    events = recorded if args.recorded else [e for path in _shapes() for e in replay([path])]
    gates = [e for e in events if isinstance(e, GateOpened)]
    for gate in gates:
        line = gate.permission.command_line if gate.permission else gate.interaction
        d = policy.decide(gate)
        print(f"{d.verdict:5} {line!r}: {d.summary() if d.verdict != 'ask' else d.reason}")
    print(f"{len(gates)} recorded gates")
    return EXIT_OK


def _explain(args: argparse.Namespace) -> int:
    from agy_harness.composition.root.policy import explain, gate_of, policy_of

    try:
        gate = gate_of(args.text, args.cwd or "")
    except ValueError as exc:
        raise BadInput(f"GATE: not a command line or a gate's JSON: {str(exc).splitlines()[0]}") from None
    policy = policy_of([Path(f) for f in args.rules] or None, _workspace(args))
    if args.rules and policy.ruleset.off:  # the rules asked for cannot be read: no decision by them
        raise BadInput(f"--rules {policy.ruleset.off}")
    out = explain(policy, gate)
    d = out.decision
    print(f"decision: {d.verdict}" + (f" ({d.summary()})" if d.verdict != "ask" else ""))
    print(f"why: {d.reason}")
    if out.parsed is not None:
        state = "understood" if out.parsed.understood else f"NOT understood: {out.parsed.reason}"
        print(f"the line, as the shell reads it ({state}):")
        for part in out.parsed.commands:
            via = f"  (via {' '.join(part.via)})" if part.via else ""
            print(f"  {list(part.argv)}{via}")
    print("rules that match:" if out.matched else "no rule matches")
    for rule in out.matched:
        print(f"  {rule.decision:5} {rule.label}")
    return EXIT_OK


def _propose(args: argparse.Namespace) -> int:
    from agy_harness.composition.root.policy import RuleError, gate_of, propose_rule

    if not args.proposed.strip():  # bad input: there is nothing to propose a rule for
        raise BadInput(
            f"policy propose {args.proposed!r}: an empty command; give the command line to allow, "
            'e.g. agy-harness policy propose "pytest -q tests"'
        )
    try:
        print(propose_rule(gate_of(args.proposed, args.cwd or "")), end="")
    except RuleError as exc:
        raise BadInput(f"no rule proposed: {exc}") from None
    return EXIT_OK


def _trust(args: argparse.Namespace) -> int:
    from agy_harness.composition.root.policy import RuleError, trust

    path = Path(args.file)
    if not path.is_file():  # bad input: nothing there to trust
        what = "a directory" if path.is_dir() else "no such file"
        raise BadInput(
            f"policy trust {args.file}: {what}; name the project's rules file "
            "(.agy-harness/policy/FILE.toml in the project)"
        )
    here = path.resolve()
    if here.suffix != ".toml" or here.parent.name != "policy" or here.parent.parent.name != ".agy-harness":
        raise BadInput(
            f"policy trust {args.file}: not a project rules file (a .toml file in a project's "
            ".agy-harness/policy/), so no session reads it; move it there, or put your own rules "
            "in ~/.config/agy-harness/policy/ (no trust needed)"
        )
    try:
        digest = trust(path)
    except RuleError as exc:
        raise BadInput(f"not trusted: {exc}") from None
    print(f"trusted {args.file} (sha256 {digest}): its allow rules answer from the next session, "
          "until the file changes")  # fmt: skip
    return EXIT_OK


def _no_action(parser: argparse.ArgumentParser) -> int:
    """``agy-harness policy`` alone: its actions, each with its line, and the examples (exit 2)."""
    parser.print_help(sys.stderr)
    print("\nagy-harness policy: name an action: test, explain, trust or propose", file=sys.stderr)
    return EXIT_USAGE


def add_policy_command(sub: Any) -> None:
    p = command(sub, "policy", summary="rules that answer gates: test, explain, propose",
                description=DESCRIPTION, epilog=EPILOG)  # fmt: skip
    # prog given: argparse would otherwise lay out a usage line (with rich) to find it, on every start
    actions = p.add_subparsers(dest="policy_action", metavar="ACTION", prog=p.prog)
    p.set_defaults(handler=lambda _args: _no_action(p))

    def action(name: str) -> argparse.ArgumentParser:
        summary, description, epilog = ACTIONS[name]
        return command(actions, name, summary=summary, description=description, epilog=epilog)

    t = action("test")
    t.add_argument("files", nargs="*", metavar="FILE", help="rule files (TOML); none: the session's tiers")
    t.add_argument("--recorded", nargs="+", metavar="FILE", help="recorded steps (what replay reads)")
    t.add_argument("--workspace", help="the project whose .agy-harness/policy is read (default: here)")
    t.set_defaults(handler=_test)
    e = action("explain")
    e.add_argument("text", metavar="GATE", help="a command line, or a gate_opened event as JSON")
    e.add_argument("--cwd", help="the command's directory")
    e.add_argument(
        "--rules",
        action="append",
        default=[],
        metavar="FILE",
        help="decide by this rules file instead of the session's tiers (repeat it for several)",
    )
    e.add_argument("--workspace", help="the project whose .agy-harness/policy is read (default: here)")
    e.set_defaults(handler=_explain)
    tr = action("trust")
    tr.add_argument("file", metavar="FILE", help="a project rules file (.agy-harness/policy/*.toml)")
    tr.set_defaults(handler=_trust)
    r = action("propose")
    r.add_argument("proposed", metavar="COMMAND", help="the command line to allow")  # (dest: not `command`)
    r.add_argument("--cwd", help="the directory it ran in (the rule is pinned to it)")
    r.set_defaults(handler=_propose)
