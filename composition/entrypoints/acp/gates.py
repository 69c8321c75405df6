"""agy's gates put to the ACP client, and the client's replies read back failing closed.

* A permission gate -> one ``session/request_permission`` with one allow option per entry of the
  gate's ``scopes`` (the allows agy offers for it AND the harness can honour: issue 34's API), each
  named by the core's :func:`agy_harness.core.scopes.scope_label` -- ``allow_once`` for ``once``,
  ``allow_always`` for the lasting scopes (``conversation``, ``workspace``, ``project``, ``global``)
  -- plus "Deny" (``reject_once``). Never an option for a scope the gate does not list. Only an allow
  option of a listed scope approves (with that scope); "deny", a cancelled request, an unknown option
  id or a failed request all deny. A command agy lets a human edit (``editable``) is allowed as
  proposed: ACP's options carry no edited text.
* A question gate, when the client announced form elicitation (``clientCapabilities.elicitation.form``)
  -> one ``elicitation/create`` form: per question a single-select (``oneOf``) or a multi-select
  (``array`` of ``anyOf``) field plus an optional write-in field. An answer the one parser
  (:func:`agy_harness.core.answers.parse_answer`) refuses is reported on the card and asked again.
* agy's file-edit review (a ``permission`` gate of the ``codeAction`` pseudo-interaction,
  :mod:`agy_harness.core.code_review`): the card carries agy's diff as an ACP ``diff`` block
  (:mod:`.changes`) and the options are "Accept" (``allow_once``) and "Reject" (``reject_once``);
  the choice reaches agy by ``AcknowledgeCodeActionStep`` (a reject carries no written feedback:
  ACP's options carry no text).
* issue 45's kinds (browser actions, an MCP tool, a URL, a file permission, a deploy, an MCP
  elicitation...: :mod:`agy_harness.core.kinds`) are permission gates: the title says in words what
  agy asks (:func:`agy_harness.core.kinds.describe`, with why no allow is offered where ``no_allow``),
  the body its exact subject whole, the options its allows (``allow_once``; a file permission's
  conversation grant ``allow_always``) and its deny named by :func:`~agy_harness.core.scopes.deny_label`
  ("Cancel the deploy", "Decline"). An elicitation asking for content offers no accept here (ACP's
  options carry no content): the card says where to give it.
* A gate of another kind (no evidenced answer message) is shown as a pending card that says to
  answer in agy's terminal; agy withdraws it when it moves on.
* A question gate otherwise -> one ``session/request_permission`` per question whose options are the
  question's options plus "Decline to answer". A multi-select question is answered with the one
  option picked (the title says so); a question without options (write-in only) cannot be answered
  this way and is declined, saying why on the card.

Every answer goes through :mod:`agy_harness.core.answers` before it reaches agy. A gate agy withdraws
while the client is asked cancels our request on the wire (``$/cancel_request``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from acp import helpers as h
from acp.schema import (
    AcceptElicitationResponse,
    AllowedOutcome,
    CancelElicitationResponse,
    DeclineElicitationResponse,
    ElicitationFormSessionMode,
    ElicitationMultiSelectPropertySchema,
    ElicitationSchema,
    ElicitationStringPropertySchema,
    EnumOption,
    PermissionOption,
    ToolCallUpdate,
)

from agy_harness.core import code_review
from agy_harness.core.answers import AnswerError, parse_answer
from agy_harness.core.display import flagged, path_notes
from agy_harness.core.scopes import allow_choices, deny_label, scope_label, scope_word
from agy_harness.ports.events import GateOpened, Question
from agy_harness.ports.protocols import GateAnswer

from .changes import gate_change
from .mapping import (
    UpdateMapper,
    code_span,
    command_content,
    gate_input,
    gate_title,
    text_content,
    tool_kind,
)

log = logging.getLogger("agy_harness.acp.gates")

ALLOW, DENY, DECLINE = "allow", "deny", "decline"
OPTION_PREFIX = "option:"
FORM_ATTEMPTS = 3

CancelOutgoing = Callable[[str, str], Awaitable[bool]]


SCOPE_PREFIX = "allow:"
#: an MCP server asks for content: ACP's options carry none, so the accept is given elsewhere
NO_CONTENT_HERE = (
    "This editor's options carry no content: to accept, type the content it asks for (a JSON object) "
    "on the agy board (agy-harness board) or in agy-harness attach (accept: <JSON object>), or answer "
    "in agy's terminal; Decline here."
)


def scope_option_id(scope: str) -> str:
    """``allow`` for once (the id clients and tests have known), ``allow:<scope>`` for a lasting one."""
    return ALLOW if scope == "once" else SCOPE_PREFIX + scope


def permission_options(gate: GateOpened) -> list[PermissionOption]:
    review = code_review.is_review(gate)  # agy's file-edit review: accept / reject its diff
    allows = [
        PermissionOption(
            option_id=scope_option_id(scope),
            name="Accept" if review else scope_label(gate, scope),
            kind="allow_once" if scope == "once" else "allow_always",
        )
        for scope in allow_choices(gate)
    ]
    return [
        *allows,
        # the deny in the kind's own words ("Cancel the deploy", "Decline"): never a shape that proceeds
        PermissionOption(option_id=DENY, name="Reject" if review else deny_label(gate), kind="reject_once"),
    ]


def question_options(question: Question) -> list[PermissionOption]:
    options = [
        PermissionOption(option_id=OPTION_PREFIX + o.id, name=flagged(o.text), kind="allow_once")
        for o in question.options
    ]
    return [*options, PermissionOption(option_id=DECLINE, name="Decline to answer", kind="reject_once")]


def read_permission_outcome(gate: GateOpened, outcome: Any) -> GateAnswer:
    """The client's ``RequestPermissionResponse.outcome`` for a permission gate; only "allow" allows."""
    if isinstance(outcome, AllowedOutcome):
        for scope in allow_choices(gate):  # only a scope this gate offers
            if outcome.option_id == scope_option_id(scope):
                return parse_answer(gate, scope_word(scope))
        if outcome.option_id != DENY:
            log.warning("gate %s: unknown option %r chosen; denied", gate.gate_id, outcome.option_id)
        return parse_answer(gate, "deny")
    return GateAnswer(action="cancel", allow=False)


def question_schema(gate: GateOpened) -> ElicitationSchema:
    properties: dict[str, Any] = {}
    for i, q in enumerate(gate.questions, 1):
        choices = [EnumOption(const=o.id, title=flagged(o.text)) for o in q.options]  # by the rendering rule
        if choices and q.multi_select:
            properties[f"q{i}"] = ElicitationMultiSelectPropertySchema(
                type="array", title=flagged(q.question), items={"anyOf": choices}, min_items=0
            )
        elif choices:
            properties[f"q{i}"] = ElicitationStringPropertySchema(
                type="string", title=flagged(q.question), one_of=choices
            )
        properties[f"q{i}_write_in"] = ElicitationStringPropertySchema(
            type="string",
            title=f"Your own answer to: {flagged(q.question)}" if choices else flagged(q.question),
            description="instead of (or, for a multi-select, besides) the options" if choices else None,
        )
    return ElicitationSchema(type="object", title=gate_title(gate), properties=properties)


def read_form(gate: GateOpened, content: dict[str, Any]) -> GateAnswer:
    """A submitted form as a checked GateAnswer; raises AnswerError for what the one parser refuses."""
    selections: list[tuple[str, ...]] = []
    write_ins: list[str] = []
    for i, _q in enumerate(gate.questions, 1):
        picked = content.get(f"q{i}")
        if picked is None or picked == "":
            choices: tuple[str, ...] = ()
        elif isinstance(picked, str):
            choices = (picked,)
        elif isinstance(picked, list) and all(isinstance(p, str) for p in picked):
            choices = tuple(picked)
        else:
            raise AnswerError(f"question {i}: expected option ids, got {picked!r}")
        write_in = content.get(f"q{i}_write_in") or ""
        if not isinstance(write_in, str):
            raise AnswerError(f"question {i}: the write-in must be text")
        selections.append(choices)
        write_ins.append(write_in)
    return parse_answer(gate, GateAnswer(selections=tuple(selections), write_ins=tuple(write_ins)))


class GateAsker:
    """Puts one session's gates to the client (see the module doc)."""

    def __init__(
        self,
        conn: Any,
        session_id: str,
        mapper: UpdateMapper,
        *,
        cancel_outgoing: CancelOutgoing,
        forms: bool,
        read_text: Any = None,
    ) -> None:
        self.conn = conn
        self.session_id = session_id
        self.mapper = mapper
        self.cancel_outgoing = cancel_outgoing
        self.forms = forms
        self.read_text = read_text  # the client's fs/read_text_file, when it offers it
        self.asking: set[str] = set()  # the step keys of the gates the client is being asked now

    def refuse_asked(self) -> None:
        """``session/cancel``: the gates being asked are about to be denied by agy-harness's interrupt;
        their cards go from pending to agy's outcome, never through "in_progress"."""
        self.mapper.refused.update(self.asking)

    async def ask(self, gate: GateOpened) -> GateAnswer:
        self.asking.add(gate.step_key)
        try:
            return await self._ask(gate)
        finally:
            self.asking.discard(gate.step_key)

    async def _ask(self, gate: GateOpened) -> GateAnswer:
        change, locations = (
            await gate_change(gate, self.read_text) if gate.kind == "permission" else ([], None)
        )
        card = self.mapper.gate_card(gate, extra=change, locations=locations)
        if card is not None:
            await self.conn.session_update(self.session_id, card)
        try:
            if gate.kind == "permission":
                answer = await self._permission(gate, change, locations)
            elif self.forms:
                answer = await self._form(gate)
            else:
                answer = await self._choices(gate)
        except asyncio.CancelledError:  # agy withdrew the gate (or the session is closing)
            await asyncio.shield(self.cancel_outgoing(self.session_id, gate.step_key))
            raise
        except Exception as exc:  # the client failed the request: fail closed
            log.warning("gate %s: the client's reply failed (%s); denied", gate.gate_id, exc)
            await self._note(gate, f"no answer from the client ({exc}); refused")
            self.mapper.refused.add(gate.step_key)
            return GateAnswer(action="cancel", allow=False)
        if answer.action == "accept" and (gate.kind == "question" or answer.allow):
            await self.conn.session_update(
                self.session_id, h.update_tool_call(gate.step_key, status="in_progress")
            )
        else:  # refused: the card goes from pending straight to agy's outcome ("failed")
            self.mapper.refused.add(gate.step_key)
        return answer

    def _tool_call(
        self, gate: GateOpened, title: str | None = None, change: Any = (), locations: Any = None
    ) -> ToolCallUpdate:
        p = gate.permission
        content: list[Any] = []
        if p is not None and p.command_line:  # the exact command, as agy would run it
            content += command_content(p.command_line)
        if p is not None and p.cwd:  # where it runs, its look-alikes flagged (core.display.path_notes)
            content += text_content(f"in {code_span(p.cwd)}")
            content += [c for note in path_notes(p.cwd) for c in text_content(code_span(note, visible=True))]
        elif p is not None and p.target:  # a path or a URL: its look-alikes flagged, as a cwd's
            if gate.interaction not in ("", "permission"):  # issue 45's kinds: the exact subject, whole
                content += command_content(p.target)
            content += [
                c for note in path_notes(p.target) for c in text_content(code_span(note, visible=True))
            ]
        if p is not None and p.description:  # (an MCP tool's arguments, the fields asked for: whole)
            content += text_content(p.description)
        if gate.interaction == "elicitation" and gate.no_allow:
            content += text_content(NO_CONTENT_HERE)
        content += change
        return ToolCallUpdate(
            tool_call_id=gate.step_key,
            title=title or gate_title(gate),
            kind=tool_kind(gate.tool_name) if gate.kind == "permission" else "other",
            status="pending",
            raw_input=gate_input(gate),
            content=content or None,
            locations=locations,
        )

    async def _note(self, gate: GateOpened, text: str) -> None:
        await self.conn.session_update(
            self.session_id, h.update_tool_call(gate.step_key, content=text_content(text))
        )

    async def _permission(self, gate: GateOpened, change: Any = (), locations: Any = None) -> GateAnswer:
        response = await self.conn.request_permission(
            session_id=self.session_id,
            tool_call=self._tool_call(gate, change=change, locations=locations),
            options=permission_options(gate),
        )
        return read_permission_outcome(gate, response.outcome)

    async def _choices(self, gate: GateOpened) -> GateAnswer:
        picks: list[list[str]] = []
        for q in gate.questions:
            if not q.options:
                await self._note(
                    gate, f"{q.question!r} wants a written answer, which this client cannot give; declined"
                )
                return GateAnswer(action="decline")
            title = flagged(q.question) + (
                " (pick one; this client cannot select several)" if q.multi_select else ""
            )
            response = await self.conn.request_permission(
                session_id=self.session_id,
                tool_call=self._tool_call(gate, title),
                options=question_options(q),
            )
            outcome = response.outcome
            if not isinstance(outcome, AllowedOutcome):
                return GateAnswer(action="cancel")
            if not outcome.option_id.startswith(OPTION_PREFIX):
                return GateAnswer(action="decline")
            option_id = outcome.option_id.removeprefix(OPTION_PREFIX)
            if option_id not in {o.id for o in q.options}:
                log.warning("gate %s: unknown option %r chosen; declined", gate.gate_id, outcome.option_id)
                return GateAnswer(action="decline")
            picks.append([option_id])
        return parse_answer(gate, picks)

    async def _form(self, gate: GateOpened) -> GateAnswer:
        mode = ElicitationFormSessionMode(
            session_id=self.session_id, tool_call_id=gate.step_key, requested_schema=question_schema(gate)
        )
        for _attempt in range(FORM_ATTEMPTS):
            response = await self.conn.create_elicitation(message=gate_title(gate), mode=mode)
            if isinstance(response, DeclineElicitationResponse):
                return GateAnswer(action="decline")
            if isinstance(response, CancelElicitationResponse) or not isinstance(
                response, AcceptElicitationResponse
            ):
                return GateAnswer(action="cancel")
            try:
                return read_form(gate, response.content or {})
            except AnswerError as exc:
                log.info("gate %s: refused answer (%s); asking again", gate.gate_id, exc)
                await self._note(gate, f"That answer was refused: {exc}")
        await self._note(gate, f"no usable answer after {FORM_ATTEMPTS} tries; declined")
        return GateAnswer(action="decline")
