"""After an allow: what the human approved, what agy then ran, and the lasting grants agy should keep.
Pure; the gate watch (composition/service/gate_watch.py) does the reading and the notices.

* What ran is what was approved: an allowed command (a ``permission`` on a RUN_COMMAND step, or a
  ``runCommand``) was approved as a command line -- agy's ``commandLine`` at the moment of asking, or
  the human's edit. Once the step ran, its ``runCommand.commandLine`` is compared with it: a hook can
  rewrite it after the approval (``overwrite.CommandLine``, rtk-ai/rtk#3959), and a difference is said
  with both texts.
* A lasting grant covers the same request: the same interaction, resource action and agy's suggested
  pattern (else its target); a ``conversation`` grant only in its conversation. When agy asks again
  for a request a grant covers, agy did not keep it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agy_harness.ports.events import GateOpened, PermissionRequest

from . import steps as S
from .answers import Allow, CheckedAnswer
from .display import one_line, request_hash, text_notes
from .elicitation import proposed_command


def approved_command(gate: GateOpened, answer: CheckedAnswer) -> str | None:
    """The command line ``answer`` approved on ``gate`` (None: not an allow of a command)."""
    verdict = answer.verdict
    if not isinstance(verdict, Allow) or gate.kind != "permission":
        return None
    if verdict.command is not None:
        return verdict.command
    p = gate.permission
    if gate.interaction == "runCommand":
        return proposed_command(gate) or None
    if p is not None and p.command_line:
        return p.command_line
    return None


def ran_command(raws: list[Any], trajectory_id: str, step_index: int) -> str | None:
    """The command line the step ran, once it settled (None: not settled, or no command)."""
    for raw in raws:
        step = S.parse_step(raw)
        if step is None or (step.key.trajectory_id, step.key.step_index) != (trajectory_id, step_index):
            continue
        if not step.settled:
            return None
        line = S.as_dict(step.raw.get("runCommand")).get("commandLine")
        return line if isinstance(line, str) else None
    return None


def ran_differs_text(approved: str, ran: str) -> str:
    """The notice: both texts, whole, through the one display rule; where they could be taken for one
    another (they render alike, or either holds look-alike text or a cut), each text's hash and what
    the card of a command would note (the look-alikes, by code point)."""
    shown_approved, shown_ran = one_line(approved), one_line(ran)
    text = (
        "what ran differs from what was approved (a hook may have rewritten it): "
        f"approved `{shown_approved}`, ran `{shown_ran}`"
    )
    notes = text_notes(ran)
    if shown_approved == shown_ran or notes or text_notes(approved):
        said = "; ".join(one_line(n) for n in notes)
        text += f" (approved {request_hash(approved)}, ran {request_hash(ran)}" + (f"; ran: {said})" if said else ")")
    return text


@dataclass(frozen=True, slots=True)
class Grant:
    """A lasting grant the human gave (and agy should keep)."""

    scope: str
    cascade_id: str
    interaction: str
    action: str
    pattern: str


def request_subject(interaction: str, p: PermissionRequest | None) -> tuple[str, str, str]:
    """What a grant is for: the interaction, the resource action and agy's pattern (else the target)."""
    if p is None:
        return interaction, "", ""
    return interaction, p.action, p.suggested_persist_pattern or p.target


def _subject(gate: GateOpened) -> tuple[str, str, str]:
    return request_subject(gate.interaction, gate.permission)


def grant_of(gate: GateOpened, answer: CheckedAnswer) -> Grant | None:
    verdict = answer.verdict
    if not isinstance(verdict, Allow) or verdict.scope is None:
        return None
    interaction, action, pattern = _subject(gate)
    return Grant(verdict.scope, gate.cascade_id, interaction, action, pattern)


def covering(grants: list[Grant], gate: GateOpened) -> Grant | None:
    """The grant that covers ``gate``'s request, if one does."""
    subject = _subject(gate)
    return next((grant for grant in grants if covers(grant, subject, gate.cascade_id)), None)


def covers(grant: Grant, subject: tuple[str, str, str], cascade_id: str) -> bool:
    """``grant`` covers the request ``subject`` (:func:`request_subject`) asked in ``cascade_id``."""
    if (grant.interaction, grant.action, grant.pattern) != subject or not subject[2]:
        return False
    return grant.scope != "conversation" or grant.cascade_id == cascade_id


def not_kept(grant: Grant) -> str:
    """``agy did not keep the grant (<scope>) for <what it covers>``: the words every surface, ``doctor``
    and ``record`` use."""
    what = (
        f"commands that start with '{one_line(grant.pattern)}'"
        if grant.action == "command"
        else f"'{one_line(grant.pattern)}'"
    )
    return f"agy did not keep the grant ({grant.scope}) for {what}"


def not_kept_text(grant: Grant) -> str:
    return (
        f"{not_kept(grant)}: asked again; "
        f"'{grant.scope}' is no longer offered for {grant.interaction} requests in this session"
    )
