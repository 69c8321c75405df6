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
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .cli_args import command
from .errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, BadInput

DESCRIPTION = """\
Rules that answer gates for you (README, "Rules that answer for you"): check rule files and their
examples, explain what the rules decide for a command or a gate, propose the narrowest rule."""

EPILOG = """\
examples:
  agy-harness policy test ~/.config/agy-harness/policy/base.toml
  agy-harness policy explain "git status && rm -rf build"
  agy-harness policy propose "pytest -q tests/core" --cwd "$PWD\""""


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
        print(
            f"agy-harness: not a command line or a gate's JSON: {str(exc).splitlines()[0]}", file=sys.stderr
        )
        return EXIT_USAGE
    policy = policy_of([Path(f) for f in args.rules] or None, _workspace(args))
    if args.rules and policy.ruleset.off:  # the rules asked for cannot be read: no decision by them
        raise BadInput(f"--rules: {policy.ruleset.off}")
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

    if not args.command.strip():  # bad input: there is nothing to propose a rule for
        raise BadInput(
            f"policy propose {args.command!r}: an empty command; give the command line to allow, "
            'e.g. agy-harness policy propose "pytest -q tests"'
        )
    try:
        print(propose_rule(gate_of(args.command, args.cwd or "")), end="")
    except RuleError as exc:
        print(f"agy-harness: no rule proposed: {exc}", file=sys.stderr)
        return EXIT_FAILURE
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
    try:
        digest = trust(Path(args.file))
    except RuleError as exc:
        print(f"agy-harness: not trusted: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    print(f"trusted {args.file} (sha256 {digest}): its allow rules answer from the next session, "
          "until the file changes")  # fmt: skip
    return EXIT_OK


def add_policy_command(sub: Any) -> None:
    p = command(sub, "policy", summary="rules that answer gates: test, explain, propose",
                description=DESCRIPTION, epilog=EPILOG)  # fmt: skip
    # prog given: argparse would otherwise lay out a usage line (with rich) to find it, on every start
    actions = p.add_subparsers(dest="policy_action", metavar="ACTION", required=True, prog=p.prog)
    t = actions.add_parser(
        "test", help="check rule files' examples; without FILE also run the rules over recorded gates"
    )
    t.add_argument("files", nargs="*", metavar="FILE", help="rule files (TOML); none: the session's tiers")
    t.add_argument("--recorded", nargs="+", metavar="FILE", help="recorded steps (what replay reads)")
    t.add_argument("--workspace", help="the project whose .agy-harness/policy is read (default: here)")
    t.set_defaults(handler=_test)
    e = actions.add_parser("explain", help="which rules match a command line or a gate (JSON), and why")
    e.add_argument("text", metavar="GATE", help="a command line, or a gate_opened event as JSON")
    e.add_argument("--cwd", help="the command's directory")
    e.add_argument("--rules", nargs="+", default=[], metavar="FILE", help="these files instead of the tiers")
    e.add_argument("--workspace", help="the project whose .agy-harness/policy is read (default: here)")
    e.set_defaults(handler=_explain)
    tr = actions.add_parser(
        "trust", help="trust a project rules file's exact content (its allow rules then answer)"
    )
    tr.add_argument("file", metavar="FILE", help="a project rules file (.agy-harness/policy/*.toml)")
    tr.set_defaults(handler=_trust)
    r = actions.add_parser(
        "propose", help="the narrowest rule allowing exactly this command (printed, not saved)"
    )
    r.add_argument("command", metavar="COMMAND")
    r.add_argument("--cwd", help="the directory it ran in (the rule is pinned to it)")
    r.set_defaults(handler=_propose)
