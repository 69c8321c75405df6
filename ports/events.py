"""Domain events: what the harness tells its consumers about one agy conversation.

Every event is a frozen pydantic model with a deterministic ``id`` derived from the identity of the
agy step it came from (``<trajectoryId>/<stepIndex>`` or ``<trajectoryId>/x:<executionId>`` for a
USER_INPUT, which has no stepIndex), plus a suffix naming what the event is. Feeding the same step
twice, from the poll or from the stream projection, gives the same ids, so a consumer can dedupe.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    cascade_id: str
    step_key: str = ""


class UserMessage(_Event):
    type: Literal["user_message"] = "user_message"
    text: str


class AssistantMessage(_Event):
    """A committed assistant reply. ``is_error`` marks the visible text of a failed planner step."""

    type: Literal["assistant_message"] = "assistant_message"
    text: str
    message_id: str
    is_error: bool = False


class ToolCall(_Event):
    type: Literal["tool_call"] = "tool_call"
    call_id: str
    name: str
    arguments: dict[str, Any]


class ToolResult(_Event):
    type: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    output: str
    is_error: bool = False


class TextDelta(_Event):
    """A piece of assistant text while it is generated. ``index`` is monotonic per message."""

    type: Literal["text_delta"] = "text_delta"
    delta: str
    message_id: str
    index: int
    final: bool = False


class ReasoningDelta(_Event):
    type: Literal["reasoning_delta"] = "reasoning_delta"
    delta: str
    message_id: str
    index: int
    started: bool = False


RunStatus = Literal["running", "idle", "failed"]


class StatusChanged(_Event):
    type: Literal["status"] = "status"
    status: RunStatus
    reason: str = ""


class Usage(_Event):
    """Cumulative token totals for the conversation (SET semantics: the latest value wins)."""

    type: Literal["usage"] = "usage"
    cumulative_input_tokens: int
    cumulative_output_tokens: int
    cumulative_cache_read_input_tokens: int
    model: str = ""


class ModelChanged(_Event):
    type: Literal["model_change"] = "model_change"
    model: str


class QuestionOption(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    text: str


class Question(BaseModel):
    model_config = ConfigDict(frozen=True)

    question: str
    options: tuple[QuestionOption, ...] = ()
    multi_select: bool = False


class PermissionRequest(BaseModel):
    model_config = ConfigDict(frozen=True)

    action: str = ""
    target: str = ""
    description: str = ""
    command_line: str = ""
    cwd: str = ""
    #: agy's "allow always" offer: ``PERSIST_SUGGESTION_TYPE_SUGGESTED`` and the pattern its own menu
    #: would remember (e.g. the command word); empty when agy offers none
    persist_suggestion_type: str = ""
    suggested_persist_pattern: str = ""
    #: the command's step asks to run it outside agy's sandbox (``runCommand.sandboxOverride``): the
    #: card says so; the answer's own ``sandboxOverride`` is sent only when the human chose it
    sandbox_override: bool = False


GateKind = Literal["question", "permission", "other"]


class GateOpened(_Event):
    """agy is waiting for a human: a question (ask_question), a permission (e.g. run_command), or
    ``other``: something else agy waits for (a file-write review, a plan approval...).

    ``interaction`` is the ``requestedInteraction`` field agy set (``askQuestion``, ``permission``,
    or the other kind's name) and ``request`` its raw value. ``answerable`` is False where no public
    or recorded source shows the answer's payload: then the harness announces it with a notice
    ("answer in agy's terminal") and withdraws the gate when agy moves on.

    ``digest`` names exactly what the human is asked and what agy will act on
    (:mod:`agy_harness.core.binding`): an answer reaches only a WAITING step with the same digest, and
    a request that changes under its card is a new gate (new ``gate_id``, the old one withdrawn).
    """

    type: Literal["gate_opened"] = "gate_opened"
    gate_id: str
    kind: GateKind
    trajectory_id: str
    step_index: int
    tool_name: str = ""
    questions: tuple[Question, ...] = ()
    permission: PermissionRequest | None = None
    interaction: str = ""
    request: dict[str, Any] = Field(default_factory=dict)
    answerable: bool = True
    digest: str = ""
    #: the allow choices this gate offers AND the harness can honour, in display order (``once``,
    #: ``conversation``, ``workspace``, ``project``, ``global``: agy's PermissionScope); ``()`` for
    #: questions and for gates nothing here can answer. One allow button per entry, labelled by
    #: :func:`agy_harness.core.scopes.scope_label`; never a button for a scope not listed.
    scopes: tuple[str, ...] = ()
    #: the human may edit the command before allowing it (agy's run_command ``proposedCommandLine`` /
    #: ``submittedCommandLine``): ``GateAnswer.edited_command``
    editable: bool = False
    #: agy's turn the step belongs to (its ``metadata.executionId``, which the turn's USER_INPUT
    #: carries too); "" when agy names none
    turn: str = ""
    #: the one-time allow's button label for this kind ("Deploy", "Accept"; "" : "Allow once") and the
    #: deny's ("Cancel the deploy", "Decline"; "" : "Deny"): :func:`agy_harness.core.scopes.scope_label`
    #: and :func:`agy_harness.core.scopes.deny_label` read them
    allow_label: str = ""
    deny_label: str = ""
    #: why no allow is offered for this request here ("" : allows per ``scopes``), e.g. agy does not
    #: say what it would open, or an MCP server asks for content no button can give; a deny still is
    #: (every answerable kind's deny is evidenced). The card says it; the parser refuses an allow.
    no_allow: str = ""


class Decider(BaseModel):
    """Who answered a withdrawn gate, where and how, as the harness knows it (the decision ledger's
    record): ``kind`` human / rule / auto (a front end's automatic policy) / agy-terminal / timeout / interrupt; ``surface`` where (board, acp,
    omnigent, attach, api, agy); ``user`` the local user; ``at`` when (UTC, ISO 8601); ``verdict``
    (allow, deny, answer, ...; "" when agy's own terminal answered: agy records it, the ledger reads it)
    and ``scope`` (once, conversation, always); ``rule_id`` a rule's or an automatic policy's name."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str = "human"
    surface: str = ""
    user: str = ""
    at: str = ""
    verdict: str = ""
    scope: str = ""
    rule_id: str = ""


#: the reason of a gate's withdrawal when the harness set it aside: agy refused an answer to it while
#: still showing it WAITING (bogus or malformed, or a kind whose answer this agy does not take: the
#: descriptors are the IDE's build); its card leaves every surface, and the notice of the refusal says
#: so once and sends the human to agy's terminal. The decision ledger's delivery record says
#: ``agy: refused``.
GATE_SET_ASIDE = "bogus: agy takes no answer for it"
#: the notice text's head when agy refused an answer (every surface shows notices)
AGY_REFUSED = "agy refused the answer"


class GateWithdrawn(_Event):
    """The gate's step left WAITING (answered elsewhere, timed out, cancelled). ``decided_by``: who
    answered it, when this harness knows (see :class:`Decider`; None for a replayed or cancelled gate)."""

    type: Literal["gate_withdrawn"] = "gate_withdrawn"
    gate_id: str
    reason: str = ""
    decided_by: Decider | None = None


class Rotation(_Event):
    """The conversation moved to a new cascade (agy's ``/clear``)."""

    type: Literal["rotation"] = "rotation"
    old_cascade_id: str
    new_cascade_id: str


class SubagentStarted(_Event):
    """agy spawned a sub-agent: its own cascade, mirrored as its own event stream (events whose
    ``cascade_id`` is ``child_cascade_id``), linked to the parent's tool call that started it, with
    the role and type that call gives it (:mod:`agy_harness.core.subagents`)."""

    type: Literal["subagent"] = "subagent"
    child_cascade_id: str
    parent_call_id: str = ""
    role: str = ""  # what the parent's step names the child (agy's sub-agent role), else ""
    agent_type: str = ""  # and its type (e.g. "research"), else ""


class Notice(_Event):
    """Something the harness itself wants a human to see (a delivery error, a demotion)."""

    type: Literal["notice"] = "notice"
    level: Literal["info", "warning", "error"] = "info"
    text: str


Event = Annotated[
    UserMessage
    | AssistantMessage
    | ToolCall
    | ToolResult
    | TextDelta
    | ReasoningDelta
    | StatusChanged
    | Usage
    | ModelChanged
    | GateOpened
    | GateWithdrawn
    | Rotation
    | SubagentStarted
    | Notice,
    Field(discriminator="type"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)

#: Events that stand for committed conversation state. Deltas and gate edges are live-only.
COMMITTED_TYPES = frozenset(
    {"user_message", "assistant_message", "tool_call", "tool_result", "status", "usage", "model_change"}
)


def event_to_json(event: Event) -> dict[str, Any]:
    """The stable JSON form of an event (field names documented in docs/events.md)."""
    return event.model_dump(mode="json")


E = TypeVar("E", bound=BaseModel)

_new = object.__new__
_FIELD_COUNTS: dict[type[BaseModel], int] = {}  # fields per model class (a few dozen classes)


def _slot_setter(name: str) -> Any:
    """The setter of BaseModel's slot ``name``, bound once (cheaper than ``object.__setattr__``,
    which looks the name up on every call); ``object.__setattr__`` where the slot is not found."""
    slot = BaseModel.__dict__.get(name)
    if slot is not None and hasattr(slot, "__set__"):
        return slot.__set__
    return lambda obj, value: object.__setattr__(obj, name, value)


_set_dict = _slot_setter("__dict__")
_set_fields_set = _slot_setter("__pydantic_fields_set__")
_set_extra = _slot_setter("__pydantic_extra__")
_set_private = _slot_setter("__pydantic_private__")


def built(cls: type[E], values: dict[str, Any], fields_set: set[str]) -> E:
    """``cls(**{k: values[k] for k in fields_set})`` without validating again what the core already
    made of the field types (exact ``str``/``int``/``bool``, tuples of models, fresh dicts of JSON
    values): the same model at about half the cost of pydantic's validating constructor.

    ``values`` holds every field of ``cls`` in declaration order (defaults included; it becomes the
    model's ``__dict__``, so the caller does not keep it); ``fields_set`` names the ones the caller
    set (``model_fields_set``; shared, never mutated: pydantic copies it before any change). A
    ``values`` that does not hold exactly the model's fields goes through the validating constructor
    (so a field added to a model later is never left out). The core's tests re-validate, strictly,
    every event it makes."""
    count = _FIELD_COUNTS.get(cls)
    if count is None:  # (a class attribute of a model reads slowly: its metaclass is in the way)
        count = _FIELD_COUNTS[cls] = len(cls.__pydantic_fields__)
    if len(values) != count:
        return cls(**{k: values[k] for k in fields_set if k in values})
    event: E = _new(cls)
    _set_dict(event, values)
    _set_fields_set(event, fields_set)
    _set_extra(event, None)
    _set_private(event, None)
    return event
