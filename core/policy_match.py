"""Deciding a gate by the rules (pure): deny anywhere wins, then ask, then allow only when every part
of the command is allowed; anything not understood is asked.

How a part (one simple command of the parsed line) matches a rule's ``command`` prefix:

* allow / ask: the command's name is the prefix's first token exactly (``ls`` is not ``/tmp/x/ls``),
  the next tokens follow literally (no word the shell expands stands in the prefix), and the part
  carries no assignment (``PATH=… ls``), no redirection that writes (``> file``; ``/dev/null`` and
  ``2>&1`` are fine) and no ``sudo``/``doas``; ``exact``: nothing after the prefix, nothing expanded,
  no ``xargs`` adding arguments; a rule bound to a directory (``cwd``) allows nothing on a line that
  changes directory (``cd``, ``pushd``, ``popd``: the later parts run elsewhere);
* deny: the same tokens, and the name also matches by its last path part, in any case (``/bin/rm``
  and ``RM`` are ``rm``), whatever the assignments, redirections and wrappers: a deny is as wide as it
  can soundly be.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from agy_harness.ports.events import GateOpened, PermissionRequest
from agy_harness.ports.policy import CommandParser, Decision, ParsedCommand, SimpleCommand, Verdict

from . import code_review
from .answers import carries_reason
from .kinds import answerable_fields
from .policy_rules import Example, Rule

#: the kinds issue 45 made answerable (agy's descriptors): an allow rule must name them to allow one
_ANSWERED_SINCE = frozenset(answerable_fields()) - {"permission", "runCommand", "askQuestion"}
_PRIVILEGED = frozenset({"sudo", "doas", "su", "pkexec", "chroot", "?"})  # ("?": a wrapper not followed)
_QUIET_TARGETS = frozenset({"/dev/null"})
_MOVES = frozenset({"cd", "pushd", "popd"})  # builtins that change the directory later parts run in


def _writes(part: SimpleCommand) -> bool:
    """A redirection that writes a file, or reaches the network (bash's ``/dev/tcp``, ``/dev/udp``)."""
    for r in part.redirects:
        if r.target.startswith(("/dev/tcp/", "/dev/udp/")) or (r.dynamic and "<" in r.op):
            return True
        if ">" not in r.op and r.op not in ("<>",):
            continue
        if r.op.endswith("&") and r.target.isdigit():
            continue  # 2>&1: a descriptor copy
        if r.target in _QUIET_TARGETS and not r.dynamic:
            continue
        return True
    return False


def _base(name: str) -> str:
    """A command's name as a deny sees it: its last path part, in any case (``/bin/RM`` runs ``rm`` on
    a case-insensitive file system)."""
    return posixpath.basename(name).lower()


def part_matches(rule: Rule, part: SimpleCommand) -> bool:
    prefix = rule.command
    if prefix is None or not part.argv or len(part.argv) < len(prefix):
        return False
    dynamic = set(part.dynamic)
    name = part.argv[0]
    if 0 in dynamic:
        return False
    deny = rule.decision == "deny"
    if name != prefix[0] and not (deny and _base(name) == _base(prefix[0])):
        return False
    for i in range(1, len(prefix)):
        if i in dynamic or part.argv[i] != prefix[i]:
            return False
    if deny:
        return True
    if part.assignments or _writes(part) or _PRIVILEGED.intersection(part.via):
        return False
    if rule.exact:  # what "always" proposes: this argv, as it stands, nothing around it
        return len(part.argv) == len(prefix) and not dynamic and not part.via and not part.redirects
    return True


def _lookup(request: Any, dotted: str) -> Any:
    value = request
    for key in dotted.split("."):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


_UNREAD = "unread:"  # stands for what the bounded walk did not read: its host ("") matches no rule
_URL_KEYS = ("url", "uri", "href")


def _urls(value: Any, depth: int = 0) -> Iterable[str]:
    """The URLs in a request: values under a url/uri/href key, and any text that reads as one (it has
    ``://``); past the walk's bounds (depth, a long list) it yields a value whose host is none, so a
    rule never vouches for a URL it did not read."""
    if depth > 6:
        if isinstance(value, dict | list) and value:
            yield _UNREAD
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, str) and (str(k).lower().endswith(_URL_KEYS) or "://" in v):
                yield v
            else:
                yield from _urls(v, depth + 1)
    elif isinstance(value, list):
        if len(value) > 64:
            yield _UNREAD
        for v in value[:64]:
            yield from _urls(v, depth + 1)
    elif isinstance(value, str) and "://" in value:
        yield value


def gate_matches(rule: Rule, gate: GateOpened) -> bool:
    """The rule's gate-level conditions (everything but ``command``)."""
    permission = gate.permission or PermissionRequest()
    if rule.kind and gate.kind not in rule.kind:
        return False
    if rule.interaction and gate.interaction not in rule.interaction:
        return False
    if rule.decision == "allow" and not rule.interaction and gate.interaction in _ANSWERED_SINCE:
        return False  # a kind answered since issue 45 (a browser action, a deploy...) is allowed only by
        # a rule naming it: a rule written for agy's permissions never approves more than it could see
    if rule.tool and gate.tool_name not in rule.tool:
        return False
    if rule.command is not None and not permission.command_line:
        return False  # a rule on a command needs one
    if (
        rule.command is None
        and rule.decision == "allow"
        and (permission.command_line or permission.action == "command")
    ):
        return False  # a command is allowed only as parsed (a deny or an ask may be wider); a command
        # named only by agy's resource (action "command") has no line to parse: never allowed so
    if rule.decision == "allow" and gate.interaction == code_review.FIELD:
        return False  # agy's file-edit review: no rule saw its diff; only a human accepts it (deny/ask may)
    if rule.cwd:
        cwd = posixpath.normpath(permission.cwd) if permission.cwd.startswith("/") else ""
        inside = [d for d in rule.cwd if cwd == d or (not rule.exact and cwd.startswith(d.rstrip("/") + "/"))]
        if not cwd or not inside:
            return False  # (an exact rule: that directory only)
    if rule.url_host:
        hosts = {(urlsplit(u).hostname or "") for u in _urls(gate.request)}
        if len(hosts) != 1 or next(iter(hosts)) not in rule.url_host:
            return False  # none, or several URLs: the rule cannot vouch for all of them
    return all(_lookup(gate.request, k) == v for k, v in rule.request.items())


@dataclass
class RuleSet:
    """The rules of every tier (highest tier first), ``rules_hash`` naming the files read, or ``off``:
    why no rule applies (a file failed: everything is asked)."""

    rules: tuple[Rule, ...] = ()
    rules_hash: str = ""
    off: str = ""
    files: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # loaded, with a part ignored (an untrusted project file's allows)
    _by_name: dict[str, list[Rule]] = field(default_factory=dict, repr=False)
    _other: list[Rule] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self.rules = tuple(sorted(self.rules, key=lambda r: -r.tier))  # stable: file order within a tier
        for rule in self.rules:
            if rule.command is None:
                self._other.append(rule)
            else:
                self._by_name.setdefault(_base(rule.command[0]), []).append(rule)

    def command_rules(self, part: SimpleCommand) -> list[Rule]:
        if not part.argv:
            return []
        return self._by_name.get(_base(part.argv[0]), [])


def _decision(
    verdict: Verdict,
    rules: Sequence[Rule],
    ruleset: RuleSet,
    reason: str = "",
    gate: GateOpened | None = None,
) -> Decision:
    first = rules[0] if rules else None
    unique = list({(r.source, r.id): r for r in rules}.values())
    message = (
        (first.message or f"denied by rule {first.id}") if first is not None and verdict == "deny" else ""
    )
    if message and gate is not None and not carries_reason(gate):
        # agy's answer to this request carries no reason (runCommand): a plain denial reaches agy, and
        # the surfaces say the message was not told (a reason there would be refused, the gate left
        # waiting for agy's terminal)
        reason = f"{reason}; agy is not told {message!r}: its answer to this request carries no message"
        message = ""
    return Decision(
        verdict=verdict,
        rule_id=", ".join(r.id for r in unique),
        source=", ".join(r.source for r in unique),
        message=message,
        reason=reason,
        rules_hash=ruleset.rules_hash,
        file_hash=first.file_hash if first is not None else "",
        rules=tuple(r.label for r in unique),
    )


def decide(ruleset: RuleSet, gate: GateOpened, parsed: ParsedCommand | None) -> Decision:
    """The decision for ``gate``; ``parsed``: its command line as the parser read it (None: none)."""
    if ruleset.off:
        return Decision(reason=f"the rules are off: {ruleset.off}", rules_hash=ruleset.rules_hash)
    if not gate.answerable or gate.kind == "question":
        return _decision("ask", [], ruleset, "rules answer permissions only")
    has_command = bool(gate.permission and gate.permission.command_line)
    if not has_command:
        matching = [r for r in ruleset._other if gate_matches(r, gate)]
        order: tuple[Verdict, ...] = ("deny", "ask", "allow")
        for verdict in order:
            chosen = [r for r in matching if r.decision == verdict]
            if chosen:
                return _decision(verdict, chosen[:1], ruleset, f"rule {chosen[0].label}", gate)
        return _decision("ask", [], ruleset, "no rule matches this request")
    if parsed is None:
        return _decision("ask", [], ruleset, "the command line was not read")
    wide = [r for r in ruleset._other if r.decision != "allow" and gate_matches(r, gate)]  # no `command`
    denied = next((r for r in wide if r.decision == "deny"), None)
    if denied is not None:
        return _decision("deny", [denied], ruleset, f"rule {denied.label}", gate)
    parts = parsed.commands
    candidates = [[r for r in ruleset.command_rules(p) if gate_matches(r, gate)] for p in parts]
    for part, rules in zip(parts, candidates, strict=True):
        for rule in rules:
            if rule.decision == "deny" and part_matches(rule, part):
                why = f"{' '.join(part.argv)!r} matches {rule.label}"
                return _decision("deny", [rule], ruleset, why, gate)
    if not parsed.understood:
        return _decision("ask", [], ruleset, f"not understood: {parsed.reason}")
    if not parts:
        return _decision("ask", [], ruleset, "there is no command")
    if wide:  # an ask rule on the gate (its tool, its directory...)
        return _decision("ask", wide[:1], ruleset, f"rule {wide[0].label}")
    allowed: list[Rule] = []
    # a part that changes directory: the gate's cwd is no longer where the later parts run, so a rule
    # bound to a directory (`cwd`) cannot vouch for them
    moves = any(p.argv and _base(p.argv[0]) in _MOVES for p in parts)
    for part, rules in zip(parts, candidates, strict=True):
        asked = next((r for r in rules if r.decision == "ask" and part_matches(r, part)), None)
        if asked is not None:
            return _decision("ask", [asked], ruleset, f"{' '.join(part.argv)!r} matches {asked.label}")
        allow = next(
            (r for r in rules if r.decision == "allow" and part_matches(r, part) and not (moves and r.cwd)),
            None,
        )
        if allow is None:
            bound = next((r for r in rules if r.decision == "allow" and part_matches(r, part)), None)
            if bound is not None:  # (only a directory-bound rule on a line that moves)
                why = f"the line changes directory: {bound.label}, bound to a directory, cannot vouch for it"
                return _decision("ask", [], ruleset, why)
            return _decision("ask", [], ruleset, f"no rule allows {' '.join(part.argv) or 'an assignment'!r}")
        allowed.append(allow)
    return _decision("allow", allowed, ruleset, "every part is allowed")


def rule_matches(rule: Rule, gate: GateOpened, parsed: ParsedCommand | None) -> bool:
    """Whether ``rule`` alone matches the request (its examples' meaning): an allow matches when every
    part matches it (and the line was understood); a deny or ask when any part does."""
    if not gate_matches(rule, gate):
        return False
    if rule.command is None:
        return True
    if parsed is None:
        return False
    hits = [part_matches(rule, p) for p in parsed.commands]
    if rule.decision == "allow":
        return parsed.understood and bool(hits) and all(hits)
    return any(hits)


def example_gate(example: Example, rule: Rule) -> GateOpened:
    """The gate an example stands for: a command line (a permission to run it), or a table of the
    gate's fields."""
    fields: dict[str, Any] = {"command_line": example} if isinstance(example, str) else dict(example)
    kind = fields.get("kind") or (rule.kind[0] if rule.kind else "permission")
    return GateOpened(
        id="example",
        cascade_id="example",
        gate_id="example",
        trajectory_id="example",
        step_index=0,
        kind=kind,
        interaction=str(fields.get("interaction") or (rule.interaction[0] if rule.interaction else kind)),
        tool_name=str(fields.get("tool_name") or (rule.tool[0] if rule.tool else "")),
        permission=PermissionRequest(
            command_line=str(fields.get("command_line", "")), cwd=str(fields.get("cwd", ""))
        ),
        request=dict(fields.get("request") or {}),
    )


def example_failures(rules: Sequence[Rule], parser: CommandParser) -> list[str]:
    """Every example that does not do what its rule says (empty: all hold)."""
    failures: list[str] = []
    for rule in rules:
        for wanted, examples in ((True, rule.match), (False, rule.not_match)):
            for example in examples:
                try:
                    gate = example_gate(example, rule)
                except ValueError as exc:
                    failures.append(f"{rule.label}: example {example!r} is not a gate: {exc}")
                    continue
                line = gate.permission.command_line if gate.permission else ""
                parsed = parser.parse(line) if line else None
                if rule_matches(rule, gate, parsed) != wanted:
                    verb = "should match but does not" if wanted else "should not match but does"
                    failures.append(f"{rule.label}: example {example!r} {verb}")
    return failures
