"""``agy-harness audit``: the decision ledger -- list and filter its decisions, verify it, export it.

    agy-harness audit [--conversation ID] [--surface NAME] [--verdict V] [--since T] [--until T] [--json]
    agy-harness audit verify
    agy-harness audit export --format aat --out DIR      (trail.jsonl + keystore.json, for aat-verify)
    agy-harness audit export --format jsonl [--out FILE] (the ledger's records as they are)

Exit codes: 0 ok; 1 the ledger does not verify (each broken record named, one line each); 2 bad input.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from pathlib import Path
from typing import Any

from .cli_args import command
from .errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from .fit import say

DESCRIPTION = """\
The decision ledger: one record for every gate decision (who decided -- you on which surface, agy's own
terminal, agy's timeout, an interrupt, a rule --, what was shown, the verdict, whether agy took it, and
what then ran), hash-chained and checkpointed with this install's signing key, in the private state
directory. Without an action: list the decisions (newest last)."""

EPILOG = """\
actions:
  verify                        check the chain and the signed checkpoints; exit 1 naming each broken record
  export --format aat --out DIR the IETF Agent Audit Trail (trail.jsonl) and its keystore.json:
                                aat-verify DIR/trail.jsonl --keys DIR/keystore.json
  export --format jsonl         the ledger's own records, one JSON line each (--out FILE, default stdout)

examples:
  agy-harness audit --surface board --verdict allow --since 2026-12-04
  agy-harness audit verify
  agy-harness audit export --format aat --out audit/"""

VERDICTS = ("allow", "deny", "choose", "refuse", "timeout", "unknown")


class BadInput(Exception):
    """Bad input on the command line: exit 2, one line."""


def _when(text: str) -> dt.datetime:
    try:
        value = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a date or time (ISO 8601, e.g. 2026-12-04T14:02): {text!r}"
        ) from None
    return value if value.tzinfo is not None else value.astimezone()


def add_audit_command(sub: Any) -> None:
    p = command(
        sub, "audit", summary="the decision ledger: list, verify, export (aat | jsonl)",
        description=DESCRIPTION, epilog=EPILOG,
    )  # fmt: skip
    add = p.add_argument
    add(
        "action",
        nargs="?",
        choices=("list", "verify", "export"),
        default="list",
        help="what to do (default: list)",
    )
    add(
        "--ledger",
        type=Path,
        default=None,
        metavar="DIR",
        help="its directory (default: yours, private state)",
    )
    add(
        "--conversation",
        default=None,
        metavar="ID",
        help="only this conversation, or ids so starting (default: all)",
    )
    add(
        "--surface",
        default=None,
        metavar="NAME",
        help="only decisions made there: board, acp, ... (default: all)",
    )
    add("--verdict", default=None, choices=VERDICTS, help="only this verdict (default: all)")
    add(
        "--since",
        type=_when,
        default=None,
        metavar="TIME",
        help="only from this time, ISO 8601 (default: the first)",
    )
    add(
        "--until",
        type=_when,
        default=None,
        metavar="TIME",
        help="only until this time, ISO 8601 (default: the last)",
    )
    add("--json", action="store_true", help="list: one JSON record per line")
    add(
        "--format",
        choices=("aat", "jsonl"),
        default=None,
        help="export: the format (default: none; required)",
    )
    add(
        "--out",
        type=Path,
        default=None,
        metavar="PATH",
        help="export: a directory (aat), a file (default: stdout)",
    )
    p.set_defaults(handler=run_audit)


def run_audit(args: argparse.Namespace) -> int:
    from ..root.audit_ledger import default_dir, this_install

    directory: Path = args.ledger if args.ledger is not None else default_dir()
    try:
        try:
            if args.ledger is None:
                this_install()  # (an earlier version's ledger moved here first, once)
            if args.action == "verify":
                return _verify(directory)
            if args.action == "export":
                return _export(directory, args)
            return _list(directory, args)
        except _OutError as exc:
            raise BadInput(
                f"--out {args.out}: {_reason(exc.__cause__)}; name a file or directory of yours"
            ) from None
        except OSError as exc:  # the ledger's directory cannot be read (not one, not yours, not private)
            if args.ledger is None:  # this install's own ledger: a failure, said in one line
                print(
                    f"agy-harness audit: the decision ledger at {directory}: {_reason(exc)}", file=sys.stderr
                )
                return EXIT_FAILURE
            raise BadInput(f"--ledger {args.ledger}: {_reason(exc)}") from None
    except BadInput as exc:
        print(f"agy-harness audit: {exc}", file=sys.stderr)
        return EXIT_USAGE


class _OutError(Exception):
    """Writing the export failed (its cause: the OSError)."""


def _write_private(path: Path, text: str) -> None:
    """``text`` into ``path``, a new file made 0600 (the ledger is private: so is what it exports); a
    file that exists keeps the mode its owner gave it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def _reason(exc: BaseException | None) -> str:
    """An OSError in words (no exception name): its own message when it has one."""
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror
        return text[0].lower() + text[1:] if text[:1].isupper() and text[1:2].islower() else text
    return str(exc) or "cannot be used"


def _load(directory: Path) -> tuple[list[dict[str, Any]], Any]:
    from ..root.audit_ledger import load

    return load(directory)


def _missing(directory: Path) -> bool:
    """No ledger there: said in one line (a verify or export of nothing is no success)."""
    from ..root.audit_ledger import found

    if found(directory):
        return False
    if directory.exists() and not directory.is_dir():  # a usage error (exit 2), not a missing ledger
        raise BadInput(f"--ledger {directory} is not a directory")
    where = "no such directory" if not directory.exists() else "no ledger.jsonl or checkpoints.jsonl in it"
    print(f"agy-harness audit: there is no decision ledger at {directory} ({where})", file=sys.stderr)
    return True


def _verify(directory: Path) -> int:
    if _missing(directory):
        return EXIT_FAILURE
    _records, report = _load(directory)
    for note in report.notes:
        print(f"note: {note}")
    if not report.ok:
        for problem in report.problems:
            print(f"BROKEN: {problem}")
        print(
            f"the decision ledger at {directory} does NOT verify ({len(report.problems)} problems)",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    if not report.records and not report.checkpoints:
        print(f"the decision ledger at {directory} is empty: no records yet, nothing to verify")
        return EXIT_OK
    say(
        f"the decision ledger at {directory} verifies: {report.records} records, chained and signed; "
        f"signed checkpoints through record {report.signed_seq}",
        sys.stdout,
    )
    return EXIT_OK


def _body(rec: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A record's body and its ``decided_by`` (empty where the record holds no object)."""
    found = rec.get("body")
    body: dict[str, Any] = found if isinstance(found, dict) else {}
    decider = body.get("decided_by")
    return body, decider if isinstance(decider, dict) else {}


def _matches(rec: dict[str, Any], args: argparse.Namespace) -> bool:
    body, by = _body(rec)
    if args.conversation and not str(body.get("conversation", "")).startswith(args.conversation):
        return False
    if args.surface and by.get("surface") != args.surface:
        return False
    if args.verdict and body.get("verdict") != args.verdict:
        return False
    if args.since or args.until:
        try:
            when = dt.datetime.fromisoformat(str(rec.get("time")).replace("Z", "+00:00"))
        except ValueError:
            return False
        when = when if when.tzinfo is not None else when.astimezone()
        if (args.since and when < args.since) or (args.until and when > args.until):
            return False
    return True


def _follow_ups(records: list[dict[str, Any]]) -> tuple[dict[int, dict[str, Any]], dict[int, bool]]:
    """By decision sequence: its ``outcome`` record's body (what then ran), and whether agy took it
    (its ``delivery`` record; none for a decision made without the harness)."""
    outcomes: dict[int, dict[str, Any]] = {}
    taken: dict[int, bool] = {}
    for rec in records:
        body = rec.get("body")
        if not isinstance(body, dict) or not isinstance(body.get("decision"), int):
            continue
        if rec.get("type") == "outcome":
            outcomes[body["decision"]] = body
        elif rec.get("type") == "delivery":
            taken[body["decision"]] = body.get("taken") is True
    return outcomes, taken


def _list(directory: Path, args: argparse.Namespace) -> int:
    from agy_harness.core.display import one_line

    if args.format or args.out:
        raise BadInput("--format and --out go with `audit export`")
    from agy_harness.core.decision_record import ran_note

    records, report = _load(directory)
    shown = [r for r in records if r.get("type") == "decision" and _matches(r, args)]
    outcomes, taken = _follow_ups(records)
    for rec in shown:
        if args.json:
            print(json.dumps(rec, ensure_ascii=False))
            continue
        body, by = _body(rec)
        kind = str(by.get("kind", "?"))
        who = kind
        if kind == "human":
            who = f"{by.get('user') or 'someone'} on {by.get('surface') or '?'}"
        elif kind == "rule":
            who = f"rule {by.get('rule_id')}"
        elif kind == "auto":
            who = f"the automatic policy {by.get('rule_id') or '?'} on {by.get('surface') or '?'} (no human)"
        line = (
            f"#{rec.get('seq')} {rec.get('time')} {body.get('verdict', '?'):7} by {who} "
            f"[{str(body.get('conversation', ''))[:8]}] {body.get('shown', '')}"
        )
        found = rec.get("seq")
        seq = found if isinstance(found, int) else -1
        if taken.get(seq) is False:  # (as the board's history says it)
            line += "; not taken: agy did not take this answer"
        ran = ran_note(str(body.get("verdict", "")), outcomes.get(seq))
        if ran:
            line += f"; {ran}"
        say(
            one_line(line), sys.stdout
        )  # the display rule (a ledger's text never drives the terminal), fitted
    if not shown:
        print("no decisions recorded" + (" that match" if records else " yet"), file=sys.stderr)
    if not report.ok:
        print("warning: the ledger does not verify (agy-harness audit verify says where)", file=sys.stderr)
    return EXIT_OK


def _export(directory: Path, args: argparse.Namespace) -> int:
    if args.format is None:
        raise BadInput("export needs --format aat or --format jsonl")
    if args.format == "aat" and args.out is None:
        raise BadInput("export --format aat needs --out DIR (it writes trail.jsonl and keystore.json)")
    if args.out is not None and not args.out.parent.is_dir():  # a usage error first (exit 2), as before
        raise BadInput(f"--out {args.out}: no such file or directory; name a file or directory of yours")
    if args.format == "aat" and args.out is not None and args.out.exists() and not args.out.is_dir():
        raise BadInput(f"--out {args.out} is not a directory")
    if _missing(directory):
        return EXIT_FAILURE
    records, report = _load(directory)
    if not report.ok:
        print(
            f"agy-harness audit: not exported: the ledger does not verify: {report.problems[0]}",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    if args.format == "jsonl":
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        if args.out is None:
            sys.stdout.write(text)
        else:
            try:
                _write_private(args.out, text)
            except OSError as exc:
                raise _OutError from exc
        return EXIT_OK
    assert args.out is not None  # (checked above)
    return _export_aat(directory, args.out, records)


def _export_aat(directory: Path, out: Path, records: list[dict[str, Any]]) -> int:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    from ..root.audit_ledger import aat_trail

    try:
        version = dist_version("agy-harness")
    except PackageNotFoundError:  # a source tree that is not installed
        version = "unknown"
    trail, keys = aat_trail(directory, records, version)
    try:
        out.mkdir(mode=0o700, parents=True, exist_ok=True)
        _write_private(out / "trail.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in trail))
        _write_private(out / "keystore.json", json.dumps(keys, indent=2) + "\n")
    except OSError as exc:
        raise _OutError from exc
    print(f"{out / 'trail.jsonl'}: {len(trail)} AAT records; keys: {out / 'keystore.json'}")
    return EXIT_OK
