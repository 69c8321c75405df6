"""The rule model: what a rules file holds, read from its parsed TOML (pure; the files and their tiers
are :mod:`agy_harness.adapters.policy.files`).

A rules file is ``[[rule]]`` tables::

    [[rule]]
    id = "list"                 # unique in its file
    decision = "allow"          # allow | ask | deny
    command = ["ls"]            # a token prefix every part of the parsed command must match
    exact = false               # true: the argv must be exactly `command` (what "always" proposes)
    message = "…"               # deny: what agy is told
    kind = ["permission"]       # gate kinds (GateOpened.kind); interaction = [...] agy's field name
    tool = ["run_command"]      # agy's tool name
    cwd = ["/home/me/project"]  # the command's directory is one of these or under one ("." and
                                # relative ones: the session's workspace; "~/": the home directory)
    url_host = ["docs.python.org"]   # the request's URL host (exactly)
    request = { "resource.action" = "write" }   # raw request fields (dotted path = value)
    match = ["ls -la"]          # examples the rule must match, checked at load
    not_match = ["ls; rm -rf ~"]

A rule with ``command`` matches only gates that carry a command line; an allow without it never
matches one (a command is allowed only as parsed); a deny or an ask without it may (``tool``, ``cwd``). An example is a command line, or a table with the
gate's fields (``kind``, ``interaction``, ``tool_name``, ``command_line``, ``cwd``, ``request``).
"""

from __future__ import annotations

import posixpath
import typing
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agy_harness.ports.errors import RulesInvalid
from agy_harness.ports.events import GateKind

TIERS = ("built-in", "project", "user", "admin")  # lowest first
KNOWN_KINDS = frozenset(typing.get_args(GateKind))

Example = str | dict[str, Any]


RuleError = RulesInvalid  # a rules file that cannot be used: the message says where


class Rule(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1, max_length=200)
    decision: Literal["allow", "ask", "deny"]
    message: str = Field(default="", max_length=2000)
    command: tuple[str, ...] | None = None
    exact: bool = False
    kind: tuple[str, ...] = ()
    interaction: tuple[str, ...] = ()
    tool: tuple[str, ...] = ()
    cwd: tuple[str, ...] = ()
    url_host: tuple[str, ...] = ()
    request: dict[str, str | int | bool] = Field(default_factory=dict)
    match: tuple[Example, ...] = ()
    not_match: tuple[Example, ...] = ()
    #: where it was read (set by the loader, never by the file): ``file:line``, its tier's rank, and
    #: the hash of its file's bytes (what a ledger records with the rule's id)
    source: str = ""
    tier: int = 0
    file_hash: str = ""

    @field_validator("command")
    @classmethod
    def _tokens(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is None:
            return None
        if not value or not value[0]:
            raise ValueError("command needs at least the command's name")
        if any(c.isspace() for c in value[0]):  # ["git status"] for ["git", "status"]
            raise ValueError(f"one token per item: the command's name {value[0]!r} has a space")
        return value

    @field_validator("kind")
    @classmethod
    def _kinds(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [k for k in value if k not in KNOWN_KINDS]
        if unknown:
            raise ValueError(f"unknown gate kind {unknown[0]!r} (known: {', '.join(sorted(KNOWN_KINDS))})")
        return value

    @field_validator("cwd")
    @classmethod
    def _dirs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for d in value:
            if not d.startswith("/"):
                raise ValueError(f"cwd must be absolute (or start with ~/): {d!r}")
        return tuple(posixpath.normpath(d) for d in value)

    @model_validator(mode="after")
    def _says_what(self) -> Rule:
        if self.command is None and not (self.kind or self.interaction or self.tool):
            raise ValueError("a rule must say what it matches: command, kind, interaction or tool")
        if "question" in self.kind and self.decision != "ask":
            raise ValueError("a question is answered by a human: a rule can only ask it")
        if self.exact and self.command is None:
            raise ValueError("exact needs command")
        return self

    @property
    def label(self) -> str:
        return f"{self.id} ({self.source})" if self.source else self.id


def _in_words(error: Any) -> str:
    """One of pydantic's errors as the rule file's author reads it (a key, what it must be), never
    pydantic's own phrasing ("Field required", "Extra inputs are not permitted", "Value error, ")."""
    key = ".".join(str(p) for p in error["loc"])
    kind, msg = error["type"], str(error["msg"])
    if kind == "missing":
        return f"`{key}` is missing (every rule has it)"
    if kind == "extra_forbidden":
        return f"unknown key `{key}`"
    if kind == "value_error":
        said = msg.removeprefix("Value error, ")
        return f"`{key}`: {said}" if key else said
    said = msg.replace("Input should be", "must be", 1)
    if kind in ("tuple_type", "list_type"):
        said = 'must be a list, e.g. ["git", "status"]' if key == "command" else "must be a list"
    return f"`{key}` {said}" if key else said


def rule_lines(text: str) -> list[int]:
    """The line of each ``[[rule]]`` header in ``text``, in order (TOML keeps no positions)."""
    return [n for n, line in enumerate(text.splitlines(), 1) if line.strip().startswith("[[rule]]")]


def _directory(d: Any, home: str, workspace: str) -> Any:
    """``~/x`` under ``home``, a relative ``x`` (``.`` too) under the session's ``workspace``; an
    absolute one as it is (each normalised when the rule is read)."""
    if not isinstance(d, str) or d.startswith("/"):
        return d
    if d.startswith("~/") and home:
        return home.rstrip("/") + d[1:]
    if not d.startswith("~") and workspace.startswith("/"):
        return posixpath.join(workspace, d)
    return d  # refused by the rule's check: it cannot be placed


def rules_from_table(
    table: dict[str, Any],
    *,
    name: str,
    text: str,
    tier: int,
    home: str = "",
    workspace: str = "",
    file_hash: str = "",
) -> tuple[Rule, ...]:
    """The rules of one parsed file (``name`` for messages, ``text`` for the lines, ``home`` expands a
    leading ``~/`` in ``cwd``); raises :class:`RuleError` naming the file, line and rule."""
    extra = set(table) - {"rule"}
    if extra:
        raise RuleError(f"{name}: unknown top-level key {sorted(extra)[0]!r} (only [[rule]] tables)")
    raw = table.get("rule", [])
    if not isinstance(raw, list):
        raise RuleError(f"{name}: `rule` must be [[rule]] tables")
    lines = rule_lines(text)
    rules: list[Rule] = []
    seen: set[str] = set()
    for n, item in enumerate(raw):
        where = f"{name}:{lines[n]}" if n < len(lines) else f"{name}: rule {n + 1}"
        if not isinstance(item, dict):
            raise RuleError(f"{where}: a rule must be a table")
        if {"source", "tier", "file_hash"} & set(item):
            raise RuleError(
                f"{where}: `source`, `tier` and `file_hash` are set by the loader, not in the file"
            )
        item = dict(item)
        if isinstance(item.get("cwd"), list):
            item["cwd"] = [_directory(d, home, workspace) for d in item["cwd"]]
        for key in ("command", "kind", "interaction", "tool", "cwd", "url_host", "match", "not_match"):
            if isinstance(item.get(key), str) and key != "command":
                item[key] = [item[key]]
        try:
            rule = Rule.model_validate({**item, "source": where, "tier": tier, "file_hash": file_hash})
        except ValidationError as exc:
            rid = item.get("id")
            named = f"rule {rid!r}" if isinstance(rid, str) else f"rule {n + 1}"
            raise RuleError(f"{where}: {named}: {_in_words(exc.errors()[0])}") from None
        if rule.id in seen:
            raise RuleError(f"{where}: rule id {rule.id!r} is used twice in this file")
        seen.add(rule.id)
        rules.append(rule)
    return tuple(rules)
