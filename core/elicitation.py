"""The elicitation policy: a human's answer to a gate -> agy's ``interaction`` payload, and where it
may be delivered: only to a WAITING step asking exactly what the human saw (the gate's digest), which
after agy's timeout may be agy's re-ask of it at a higher stepIndex -- never anything else.

Pure: the bridge in composition/ does the I/O (re-read steps, deliver, re-ask the human).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal, assert_never

from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import GateAnswer

from . import code_review
from . import steps as S
from .answers import Allow, CheckedAnswer, Choose, Deny, Refuse, Response, Verdict, loose_verdict
from .arguments import multi_select_flags
from .binding import request_digest, timed_out
from .gates import asked
from .kind_answers import BUILT_HERE, kind_answer
from .scopes import PERMISSION_SCOPE

log = logging.getLogger("agy_harness.core.elicitation")


def question_responses(gate: GateOpened, answer: GateAnswer) -> list[dict[str, Any]]:
    """``askQuestion.responses``: one per question, the question text verbatim, from the answer's
    verdict (a :class:`~.answers.CheckedAnswer` as it is; a loose GateAnswer is read first, see
    :func:`~.answers.loose_verdict`). A decline or cancel sends no responses."""
    return _responses(loose_verdict(gate, answer))


def _responses(verdict: Verdict) -> list[dict[str, Any]]:
    match verdict:
        case Choose(responses=responses):
            return [_response(r) for r in responses]
        case Refuse() | Allow() | Deny():
            return []
        case other:
            assert_never(other)


def _response(response: Response) -> dict[str, Any]:
    out: dict[str, Any] = {"question": response.question, "selectedOptionIds": list(response.option_ids)}
    if response.write_in:
        out["writeInResponse"] = response.write_in
    return out


def permission_allowed(answer: GateAnswer) -> bool:
    """Only an explicit allow approves: ``action`` accept with ``allow`` True. Everything else denies."""
    if isinstance(answer, CheckedAnswer):
        return isinstance(answer.verdict, Allow)
    return answer.action == "accept" and answer.allow is True


def interaction_payload(
    gate: GateOpened, answer: GateAnswer, step_index: int | None = None
) -> dict[str, Any]:
    """The ``interaction`` object of HandleCascadeUserInteraction, for ``gate`` (or its retry step),
    built from the answer's verdict alone: a :class:`~.answers.CheckedAnswer` is not checked again."""
    payload: dict[str, Any] = {
        "trajectoryId": gate.trajectory_id,
        "stepIndex": gate.step_index if step_index is None else step_index,
    }
    verdict = loose_verdict(gate, answer)
    if gate.kind == "question":
        payload["askQuestion"] = {"responses": _responses(verdict)}
        return payload
    if gate.interaction == "runCommand":
        payload["runCommand"] = _run_command(gate, verdict)
        return payload
    if gate.interaction == code_review.FIELD:  # not an interaction: the RPC adapter sends it by its RPC
        payload[code_review.FIELD] = code_review.acknowledgement(gate, verdict, payload["stepIndex"])
        return payload
    if gate.interaction in BUILT_HERE:
        payload[gate.interaction] = kind_answer(gate, verdict)
        return payload
    match verdict:
        case Allow(scope=scope) if scope is not None:  # a lasting grant: agy's PermissionScope
            payload["permission"] = {"allow": True, "scope": PERMISSION_SCOPE[scope]}
        case Allow():
            payload["permission"] = {"allow": True}  # once: what agy's CLI records (run_command_done)
        case Deny(reason=reason) if reason:  # "deny and tell agy why" (public clients' field)
            payload["permission"] = {"allow": False, "userDenyInstruction": reason}
        case Deny() | Refuse() | Choose():
            payload["permission"] = {"allow": False}
        case other:
            assert_never(other)
    return payload


def proposed_command(gate: GateOpened) -> str:
    """The command line agy proposes on ``gate``, as its card shows it (the step's proposal); the
    request's own, only where the step carries none. An allow of a request that proposes another line
    than the card shows is refused (:func:`agy_harness.core.answers.parse_answer`)."""
    shown = gate.permission.command_line if gate.permission is not None else ""
    if shown:
        return shown
    proposed = gate.request.get("proposedCommandLine")
    return proposed if isinstance(proposed, str) else ""


def _run_command(gate: GateOpened, verdict: Verdict) -> dict[str, Any]:
    """``CascadeRunCommandInteraction {confirm, proposedCommandLine, submittedCommandLine,
    sandboxOverride}`` (the IDE's command confirmation: FarrelAD/ag-attention-bridge research §14;
    jkfujinami/antigravity-client's cortex.proto): the submitted line is the edited one, else the
    proposal; ``sandboxOverride`` only where the human chose it."""
    proposed = proposed_command(gate)
    match verdict:
        case Allow(command=command, sandbox_override=sandbox):
            submitted = proposed if command is None else command
            out = {"confirm": True, "proposedCommandLine": proposed, "submittedCommandLine": submitted}
            if sandbox:
                out["sandboxOverride"] = True
            return out
        case Deny() | Refuse() | Choose():
            return {"confirm": False, "proposedCommandLine": proposed}
        case other:
            assert_never(other)


@dataclass(frozen=True, slots=True)
class Target:
    step_index: int
    moved: bool  # True when the surfaced step timed out and this is agy's re-ask of the same request


RefusalReason = Literal["closed", "elsewhere", "gone"]


@dataclass(frozen=True, slots=True)
class Refused:
    """Why an answer is not delivered (nothing is sent): the gate ``closed`` (answered, or denied in
    agy's terminal), agy now asks something ``elsewhere`` (another request, another turn, another
    directory...), or the request is ``gone``."""

    reason: RefusalReason
    detail: str


ELSEWHERE = "agy is now asking something else"


def _digest(step: S.Step) -> str:
    request = asked(step)
    return request_digest(step, *request) if request is not None else ""


def delivery_target(gate: GateOpened, raws: list[Any]) -> Target | Refused:
    """Where an answer to ``gate`` goes, judged on freshly read steps -- only ever a WAITING step
    whose request has the gate's digest (:mod:`agy_harness.core.binding`):

    * the surfaced step, while it waits and still asks exactly that;
    * else, only if the surfaced step ended by agy's timeout: agy's re-ask of the identical request
      (same digest, so the same turn) -- through a chain of re-asks that timed out too;
    * anything else is :class:`Refused`: the step was answered (or denied in agy's terminal), its
      request changed, or agy asks something else now.
    """
    mine: dict[int, S.Step] = {}
    for raw in raws:
        step = S.parse_step(raw)
        if (
            step is not None
            and step.type != "USER_INPUT"
            and step.key.trajectory_id == gate.trajectory_id
            and step.key.step_index >= gate.step_index
        ):
            mine[step.key.step_index] = step
    own = mine.get(gate.step_index)
    if own is None:
        return Refused("gone", "its step is gone")
    if own.status == "WAITING":
        if _digest(own) == gate.digest:
            return Target(gate.step_index, moved=False)
        return Refused("elsewhere", f"{ELSEWHERE}: the request changed since it was asked")
    if not timed_out(own):
        if S.interaction_response(own) is not None or own.status in ("RUNNING", "DONE"):
            return Refused("closed", "it was already answered")
        return Refused("gone", f"its step ended ({own.status.lower() or 'unknown'})")
    for index in sorted(i for i in mine if i > gate.step_index):
        step = mine[index]
        digest = _digest(step)
        if not digest:
            continue  # not a gate (a planner step between agy's timeout and its re-ask)
        if digest != gate.digest:
            break  # agy moved on to another request: no re-ask of this one can follow it
        if step.status == "WAITING":
            return Target(index, moved=True)
        if not timed_out(step):
            return Refused("closed", "agy's re-ask of it was already answered")
    waiting = any(step.status == "WAITING" for step in mine.values())
    if waiting:
        return Refused("elsewhere", f"{ELSEWHERE}: it timed out, and agy did not ask it again")
    return Refused("gone", "it timed out, and agy did not ask it again")


def step_of(gate: GateOpened, raws: list[Any]) -> S.Step | None:
    """``gate``'s step in ``raws`` (by trajectory and step index), if there."""
    for raw in raws:
        step = S.parse_step(raw)
        if step is not None and (step.key.trajectory_id, step.key.step_index) == (
            gate.trajectory_id,
            gate.step_index,
        ):
            return step
    return None


def asks_still(gate: GateOpened, step: S.Step | None) -> bool:
    """Whether ``step`` (the gate's, read from agy) is WAITING with the gate's digest: the very request shown."""
    return step is not None and step.status == "WAITING" and _digest(step) == gate.digest


def with_poll_details(gate: GateOpened, raws: list[Any]) -> GateOpened:
    """The gate with what only the poll projection carries: per-question multi-select flags from
    ``metadata.toolCall.argumentsJson``, which the stream strips. Identity is untouched."""
    if gate.kind != "question":
        return gate
    for raw in raws:
        step = S.parse_step(raw)
        if step is None or (step.key.trajectory_id, step.key.step_index) != (
            gate.trajectory_id,
            gate.step_index,
        ):
            continue
        flags = multi_select_flags(step)
        if not flags:
            return gate
        questions = tuple(
            q.model_copy(update={"multi_select": flags[i]}) if i < len(flags) else q
            for i, q in enumerate(gate.questions)
        )
        return gate.model_copy(update={"questions": questions})
    return gate


Rejection = Literal["stale", "shape", "gone"]


def classify_rejection(gate: GateOpened, step_index: int, raws: list[Any]) -> Rejection:
    """agy's ``not_registered`` refusal (:class:`~agy_harness.ports.errors.InteractionRejected`) means a
    stale step OR a payload of the wrong shape, and so does a refusal whose cause agy does not say.

    Read the step's status to tell: still WAITING means agy refused the shape (report, do not loop);
    ERROR (timed out) or a newer WAITING retry means it was stale; anything else means it is gone.
    """
    status = ""
    for raw in raws:
        step = S.parse_step(raw)
        if step and step.key.trajectory_id == gate.trajectory_id and step.key.step_index == step_index:
            status = step.status
    if status == "WAITING":
        return "shape"
    target = delivery_target(gate, raws)
    if status == "ERROR" or (isinstance(target, Target) and target.step_index != step_index):
        return "stale"
    return "gone"


def freshest_open(
    gate: GateOpened, open_gates: list[GateOpened], closed: dict[str, tuple[GateOpened, str]]
) -> Target | None:
    """Where to deliver when agy cannot be re-read, judged on what the stream showed: ``gate`` itself
    while it is open; else, only if it was withdrawn as timed out, the open re-ask of the identical
    request (same digest) -- through re-asks that timed out too (``closed``: gate id -> the gate and
    why it was withdrawn). None: nothing the stream shows may take the answer."""
    if any(other.gate_id == gate.gate_id for other in open_gates):
        return Target(gate.step_index, moved=False)
    if closed.get(gate.gate_id, (gate, ""))[1] != TIMED_OUT:
        return None
    same = [
        g
        for g in [*open_gates, *(g for g, _ in closed.values())]
        if g.trajectory_id == gate.trajectory_id
        and g.digest == gate.digest
        and g.step_index > gate.step_index
    ]
    for other in sorted(same, key=lambda g: g.step_index):
        if other.gate_id not in closed:
            return Target(other.step_index, moved=True)
        if closed[other.gate_id][1] != TIMED_OUT:
            return None
    return None


TIMED_OUT = "timed out"  # the reconciler's withdrawal reason for a gate agy's timeout ended
