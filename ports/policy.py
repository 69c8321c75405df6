"""The ports of rules that answer gates for the human (docs/rules.md).

* :class:`CommandParser` turns a command line into a :class:`ParsedCommand`: every simple command a
  shell would run for it (chains, pipes, substitutions, wrappers such as ``bash -c``/``env``/``xargs``
  unwrapped), each with its argv after quote removal and its redirections, and ``understood``: False
  when the line does not parse or uses a construct the parser does not follow (a here-doc, a loop, a
  variable as a command name...). A rule never allows what was not understood.
* :class:`GatePolicy` decides a gate: ``allow`` (answered once for the human), ``ask`` (the humans, as
  without rules) or ``deny`` (with the message agy is told). The decision names the rule and the rules'
  hash (what the ledger records), and the policy says why it is off when its rules could not be loaded.
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from .events import GateOpened


class Redirect(BaseModel):
    """One redirection: its operator (``>``, ``>>``, ``<``, ``2>``, ``&>``, ``>&``...) and target word
    (after quote removal; ``dynamic`` when it holds an expansion)."""

    model_config = ConfigDict(frozen=True)

    op: str
    target: str
    dynamic: bool = False


class SimpleCommand(BaseModel):
    """One simple command a shell would run.

    ``argv`` after quote removal; ``dynamic`` the indexes of words the shell expands at run time (a
    variable, a substitution, a glob, a brace: their text is not what runs); ``assignments`` the
    ``NAME=value`` words before it (``env`` ones included); ``via`` the wrappers peeled off to reach it
    (``bash -c``, ``env``, ``timeout``, ``xargs``, ``find -exec``, ``sudo``...; ``?``: tried behind a
    runner or an option not followed, for a deny to see: never allowed)."""

    model_config = ConfigDict(frozen=True)

    argv: tuple[str, ...]
    dynamic: tuple[int, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    assignments: tuple[str, ...] = ()
    via: tuple[str, ...] = ()


class ParsedCommand(BaseModel):
    """A command line as a shell reads it: every simple command (``commands``), ``understood`` False
    with the ``reason`` when the parser cannot vouch for the list being complete and exact."""

    model_config = ConfigDict(frozen=True)

    text: str
    commands: tuple[SimpleCommand, ...] = ()
    understood: bool = True
    reason: str = ""


@runtime_checkable
class CommandParser(Protocol):
    def parse(self, text: str) -> ParsedCommand:
        """Never raises: a line that cannot be read is ``understood=False`` with the reason."""
        ...


Verdict = Literal["allow", "ask", "deny"]


class Decision(BaseModel):
    """What the rules decided for one gate.

    ``rule_id`` / ``source`` (``file:line``) name the rule that decided (for an allow of a command of
    several parts, the rule of each part in ``rules``); ``message`` is what agy is told on a deny;
    ``reason`` says why, in words (``policy explain``); ``rules_hash`` names the rule files read, and
    ``file_hash`` the file of the deciding rule (its bytes' sha256, 16 hex digits)."""

    model_config = ConfigDict(frozen=True)

    verdict: Verdict = "ask"
    rule_id: str = ""
    source: str = ""
    message: str = ""
    reason: str = ""
    rules_hash: str = ""
    file_hash: str = ""
    rules: tuple[str, ...] = ()

    @property
    def decided_by_rule(self) -> bool:
        return self.verdict != "ask"

    def summary(self) -> str:
        """The line every surface shows for a gate a rule answered."""
        if self.verdict == "allow":
            return f"allowed by rule {self.rule_id} ({self.source})"
        if self.verdict == "deny":
            told = self.message or self.reason  # (no message: agy's answer carries none; the reason says)
            return f"denied by rule {self.rule_id} ({self.source}): {told}"
        return f"asked: {self.reason}" if self.reason else "asked"


@runtime_checkable
class GatePolicy(Protocol):
    def decide(self, gate: GateOpened) -> Decision: ...

    def warnings(self) -> list[str]:
        """Why the rules are off or partly off (shown as a notice when the session starts); empty when
        they are all loaded."""
        ...
