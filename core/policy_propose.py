""" "Always" that never widens: the narrowest rule for one approved request (pure).

The proposal is an ``exact`` allow of the command's argv as the shell reads it, in the gate's
directory, for its kind and tool, with the request as its first ``match`` example: it matches that
request and its exact equivalents (the same argv however it is quoted or spaced, in the same
directory), nothing else. A request that cannot be pinned down that way (several commands, a wrapper,
an assignment, a redirection, a word expanded when it runs, a line not understood) gets no proposal,
and the reason. It is proposed, never saved: the human edits and confirms it.
"""

from __future__ import annotations

import hashlib
import json
import re

from agy_harness.ports.events import GateOpened
from agy_harness.ports.policy import ParsedCommand

from .policy_rules import RuleError


def _toml(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a TOML basic string (JSON's escapes are TOML's)


def _list(values: tuple[str, ...] | list[str]) -> str:
    return "[" + ", ".join(_toml(v) for v in values) + "]"


def propose(gate: GateOpened, parsed: ParsedCommand | None) -> str:
    """The TOML text of the narrowest rule allowing ``gate`` again; raises RuleError (why not)."""
    line = gate.permission.command_line if gate.permission else ""
    if not line or parsed is None:
        raise RuleError("only a command is proposed as a rule (this request has no command line)")
    if not parsed.understood:
        raise RuleError(f"the command is not understood ({parsed.reason}): it stays asked")
    if len(parsed.commands) != 1:
        raise RuleError("the line runs several commands: approve them one by one")
    part = parsed.commands[0]
    if part.via or part.assignments or part.redirects or part.dynamic or not part.argv:
        raise RuleError(
            "the command has a wrapper, an assignment, a redirection or a word expanded when it runs: "
            "no exact rule can pin it down"
        )
    slug = re.sub(r"[^a-z0-9]+", "-", " ".join(part.argv[:3]).lower()).strip("-")[:40] or "command"
    digest = hashlib.sha256("\0".join(part.argv).encode("utf-8", "surrogatepass")).hexdigest()[:8]
    lines = [
        "[[rule]]",
        f"id = {_toml(f'always-{slug}-{digest}')}",
        'decision = "allow"',
        f"command = {_list(part.argv)}",
        "exact = true",
        f"kind = {_list([gate.kind])}",
    ]
    if gate.tool_name:
        lines.append(f"tool = {_list([gate.tool_name])}")
    cwd = gate.permission.cwd if gate.permission else ""
    if cwd.startswith("/"):
        lines.append(f"cwd = {_list([cwd])}")
    example = (
        f"{{ command_line = {_toml(line)}, cwd = {_toml(cwd)} }}" if cwd.startswith("/") else _toml(line)
    )
    lines.append(f"match = [{example}]")
    return "\n".join(lines) + "\n"
