"""The pure mapper + reconciler: agy steps in arrival order in, domain events out.

One :class:`Reconciler` per cascade. :meth:`Reconciler.feed` takes one raw step (poll or stream
projection, any order of re-deliveries) and returns the events it causes. It never raises on bad
input and never emits a committed event twice: a step is committed once, when settled (DONE/ERROR,
or a USER_INPUT), and re-seeing it emits nothing. Live state (text already streamed, open gates,
usage totals, the open turn) lives in :class:`MapperState`, a plain model that a cursor store can
save and restore, so a restarted harness resumes without repeating itself.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from typing import Any

from agy_harness.ports.events import (
    AssistantMessage,
    Event,
    ModelChanged,
    ReasoningDelta,
    RunStatus,
    StatusChanged,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
    built,
)

from . import code_review, stamps
from . import steps as S
from .aliases import other_keys
from .arguments import tool_arguments
from .gate_book import CHANGED as CHANGED
from .gate_book import GATE_DIGEST as GATE_DIGEST
from .gate_book import GateBook
from .gate_book import gate_id_for as gate_id_for
from .mapper_state import LiveText as LiveText
from .mapper_state import MapperState as MapperState
from .steps import Step

log = logging.getLogger("agy_harness.core.reconciler")


class Reconciler:
    def __init__(self, cascade_id: str, state: MapperState | None = None) -> None:
        self.cascade_id = cascade_id
        self.state = state if state is not None else MapperState()
        self.skipped = 0  # steps skipped as unreadable
        self._gates = GateBook(cascade_id)  # the open gates' bookkeeping (its digests memo)
        #: step keys committed since a cursor journal last took them; None (nothing kept) until a
        #: journal starts taking them (without one it would only grow)
        self.committed_log: list[str] | None = None
        self._placeholder = stamps.placeholder_trajectory(cascade_id)

    # -- public ----------------------------------------------------------------------------

    def feed(self, raw: object) -> list[Event]:
        """The events that one raw step causes (possibly none)."""
        committed = self.state.committed
        # a step committed already (cumulative stream frames, a re-read history) is known by its key,
        # before the rest of it is read
        step = S.parse_new_step(raw, committed)
        if type(step) is not Step:
            if step is None:
                self.skipped += 1
            return []
        key = step.key
        known = self.state.trajectory_id
        if key.trajectory_id == known and known:  # (the common case: nothing to resolve)
            placeholder = False
        else:
            placeholder = key.trajectory_id.startswith(stamps.PLACEHOLDER_PREFIX)
            key = self._resolve(step)
            known = self.state.trajectory_id
        sk = step.name
        if (placeholder or key.execution_id) and sk in committed:  # (parse_new_step checked the others)
            return []
        aliases: AbstractSet[str] | tuple[str, ...]
        if key.trajectory_id == known and not key.execution_id:
            # the common case, a step of the known trajectory: its one other key is the placeholder's,
            # committed by a transcript read before the trajectory was known. Not committed in turn:
            # from now on a transcript's step is resolved to this trajectory (``_resolve``) and
            # known by this key.
            if f"{self._placeholder}/{key.step_index}" in committed:
                return []
            aliases = ()
        else:
            check, aliases = other_keys(step, sk, self._placeholder, known)
            if check and not check.isdisjoint(committed):
                return []
        try:
            events = self._map(step, sk)
        except Exception:  # a malformed step must never break the reader
            log.exception("skipping step %s (%s %s): could not map it", sk, step.type, step.status)
            self.skipped += 1
            return []
        if step.settled:
            if aliases:
                keys = (sk, *sorted(aliases))
                committed.update(keys)
                if self.committed_log is not None:
                    self.committed_log.extend(keys)
            else:
                committed.add(sk)
                if self.committed_log is not None:
                    self.committed_log.append(sk)
            if self.state.live:
                self.state.live.pop(sk, None)
        return events

    # -- one step, several sources -----------------------------------------------------------

    def _resolve(self, step: Step) -> S.StepKey:
        """A step from agy's current transcript (placeholder trajectory) gets the real trajectory id
        once one is known; the first step of this cascade with a real one teaches it. Returns the
        step's key, resolved."""
        key = step.key
        trajectory = key.trajectory_id
        if trajectory.startswith(stamps.PLACEHOLDER_PREFIX):
            if self.state.trajectory_id:
                key = step.key = key._replace(trajectory_id=self.state.trajectory_id)
                step.name = str(key)
        elif not self.state.trajectory_id and step.cascade_id in ("", self.cascade_id):
            vars(self.state)["trajectory_id"] = trajectory
        return key

    def feed_all(self, raws: Iterable[object]) -> list[Event]:
        out: list[Event] = []
        for raw in raws:
            out.extend(self.feed(raw))
        return out

    def observe_idle(self, reason: str = "agy reports the cascade idle") -> list[Event]:
        """The run-status backstop: agy says the cascade is idle, so close an open turn."""
        if self.state.status != "running":
            return []
        sk = self.state.turn or "turn"
        vars(self.state)["status"] = "idle"
        return [self._status_event(sk, "status/idle-backstop", "idle", reason)]

    # -- mapping ---------------------------------------------------------------------------

    def _map(self, step: Step, sk: str) -> list[Event]:
        # a gate opens only on a WAITING step, and is withdrawn only where one is open
        gates = self.state.gates
        gate_events = self._gates.events(step, sk, gates) if step.status == "WAITING" or sk in gates else []
        step_type = step.type
        if step_type == "USER_INPUT":
            out = self._user_input(step, sk)
        elif step_type == "PLANNER_RESPONSE":
            out = self._planner(step, sk)
        elif step.is_tool:
            tool_events = self._tool(step, sk)
            # A withdrawn gate precedes the tool's call+result; an opened gate follows the running edge.
            return gate_events + tool_events if step.settled else tool_events + gate_events
        else:
            if not step.settled and step_type not in _SILENT_TYPES:
                log.debug("ignoring unsettled %s step %s", step_type, sk)
            return gate_events
        return out + gate_events if gate_events else out

    # The events below are built from values this module made of the field types, listed in each
    # model's field order, so pydantic does not validate them again (``ports.events.built``).

    def _status_event(self, sk: str, suffix: str, status: RunStatus, reason: str) -> StatusChanged:
        values = {
            "id": f"{sk}/{suffix}",
            "cascade_id": self.cascade_id,
            "step_key": sk,
            "type": "status",
            "status": status,
            "reason": reason,
        }
        return built(StatusChanged, values, _STATUS_SET)

    def _status(self, sk: str, status: RunStatus, reason: str = "") -> StatusChanged:
        vars(self.state)["status"] = status
        return self._status_event(sk, f"status/{status}", status, reason)

    def _ensure_running(self, sk: str) -> list[Event]:
        if self.state.status == "running":
            return []
        return [self._status(sk, "running")]

    def _user_input(self, step: Step, sk: str) -> list[Event]:
        out: list[Event] = []
        if self.state.status == "running":
            out.append(self._status(sk, "idle", "a new user turn began"))
        out.append(self._status(sk, "running"))
        vars(self.state)["turn"] = sk
        model = S.user_model(step)
        if model and model != self.state.model:
            vars(self.state)["model"] = model
            values: dict[str, Any] = {"id": f"{sk}/model", "cascade_id": self.cascade_id, "step_key": sk}
            values["type"], values["model"] = "model_change", model
            out.append(built(ModelChanged, values, _MODEL_SET))
        text = S.user_text(step)
        if text:  # a turn without text opens the turn but is no user message (as the reference maps it)
            user: dict[str, Any] = {"id": f"{sk}/user", "cascade_id": self.cascade_id, "step_key": sk}
            user["type"], user["text"] = "user_message", text
            out.append(built(UserMessage, user, _USER_SET))
        return out

    def _planner(self, step: Step, sk: str) -> list[Event]:
        body = step.body
        live = self.state.live.get(sk)
        message_id = S.as_str(body.get("messageId")) or (live.message_id if live else sk)
        text = S.planner_text(step)
        thinking = S.planner_thinking(step)
        out: list[Event] = []
        if step.status == "GENERATING" or (not step.settled and (text or thinking)):
            out += self._ensure_running(sk)
            if live is None:
                live = self.state.live[sk] = LiveText(message_id=message_id)
            out += self._stream(sk, live, text, thinking)
            return out
        if not step.settled:
            return out
        out += self._ensure_running(sk)
        if live is not None:
            out += self._stream(sk, live, text, thinking, closing=True)
        if step.status == "ERROR":
            detail = S.error_text(step) or "the model's response failed"
            shown = f"{text}\n\n[error] {detail}" if text else f"[error] {detail}"
            out.append(self._assistant(sk, "error", shown, message_id, True, _ERROR_SET))
            out += self._usage(step, sk)
            out.append(self._status(sk, "failed", detail))
            return out
        if text:
            out.append(self._assistant(sk, "assistant", text, message_id, False, _ASSISTANT_SET))
        out += self._usage(step, sk)
        # Text closes the turn, unless the same planner also called tools (poll projection only: the
        # stream strips toolCalls), whose results and a further planner follow (the reference's
        # _is_assistant_text_close_step).
        if text and not S.planner_tool_calls(step):
            out.append(self._status(sk, "idle"))
        return out

    def _assistant(
        self, sk: str, suffix: str, text: str, message_id: str, is_error: bool, fields: set[str]
    ) -> AssistantMessage:
        values = {
            "id": f"{sk}/{suffix}",
            "cascade_id": self.cascade_id,
            "step_key": sk,
            "type": "assistant_message",
            "text": text,
            "message_id": message_id,
            "is_error": is_error,
        }
        return built(AssistantMessage, values, fields)

    def _stream(
        self, sk: str, live: LiveText, text: str, thinking: str, closing: bool = False
    ) -> list[Event]:
        # A delta's id names the span of the message it carries (``text/<start>-<end>``, ``/final``
        # for the closing one), never a counter: after a restart from an older saved state the same
        # id can only be minted again for the very same text.
        out: list[Event] = []
        if thinking.startswith(live.thinking) and len(thinking) > len(live.thinking):
            values = {
                "id": f"{sk}/thinking/{len(live.thinking)}-{len(thinking)}",
                "cascade_id": self.cascade_id,
                "step_key": sk,
                "type": "reasoning_delta",
                "delta": thinking[len(live.thinking) :],
                "message_id": live.message_id,
                "index": live.thinking_index,
                "started": not live.thinking,
            }
            out.append(built(ReasoningDelta, values, _REASONING_SET))
            fields = vars(live)
            fields["thinking"], fields["thinking_index"] = thinking, live.thinking_index + 1
        elif thinking and not thinking.startswith(live.thinking):
            # A rewrite that does not extend what was sent: re-anchor on it (sending nothing), so the
            # reasoning that grows from it still streams (reasoning has no committed message to fall
            # back on; the reference re-anchors the same way).
            vars(live)["thinking"] = thinking
        delta = ""
        if text.startswith(live.text) and len(text) > len(live.text):
            delta = text[len(live.text) :]
        # A rewrite that does not extend what was sent sends nothing; the committed message is the truth.
        if delta or (closing and live.text_index > 0):
            span = f"text/{len(live.text)}-{len(live.text) + len(delta)}" + ("/final" if closing else "")
            values = {
                "id": f"{sk}/{span}",
                "cascade_id": self.cascade_id,
                "step_key": sk,
                "type": "text_delta",
                "delta": delta,
                "message_id": live.message_id,
                "index": live.text_index,
                "final": closing,
            }
            out.append(built(TextDelta, values, _TEXT_SET))
            fields = vars(live)
            if delta:
                fields["text"] = text
            fields["text_index"] = live.text_index + 1
        return out

    def _usage(self, step: Step, sk: str) -> list[Event]:
        usage = S.as_dict(step.metadata.get("modelUsage"))
        if not usage:
            return []
        st = self.state
        fields = vars(st)
        as_int = S.as_int
        inp, out, cache = usage.get("inputTokens"), usage.get("outputTokens"), usage.get("cacheReadTokens")
        fields["input_tokens"] = st.input_tokens + (inp if type(inp) is int else as_int(inp))
        # (outputTokens is thinking + response already)
        fields["output_tokens"] = st.output_tokens + (out if type(out) is int else as_int(out))
        fields["cache_read_tokens"] = st.cache_read_tokens + (cache if type(cache) is int else as_int(cache))
        values = {
            "id": f"{sk}/usage",
            "cascade_id": self.cascade_id,
            "step_key": sk,
            "type": "usage",
            "cumulative_input_tokens": st.input_tokens,
            "cumulative_output_tokens": st.output_tokens,
            "cumulative_cache_read_input_tokens": st.cache_read_tokens,
            "model": S.as_str(usage.get("model")) or st.model,
        }
        return [built(Usage, values, _USAGE_SET)]

    def _tool(self, step: Step, sk: str) -> list[Event]:
        if not step.settled:
            return self._ensure_running(sk) if step.status in ("RUNNING", "WAITING") else []
        name = S.tool_name(step)
        out = self._ensure_running(sk)
        cascade_id = self.cascade_id
        call = {
            "id": f"{sk}/call",
            "cascade_id": cascade_id,
            "step_key": sk,
            "type": "tool_call",
            "call_id": sk,
            "name": name,
            "arguments": tool_arguments(step),
        }
        out.append(built(ToolCall, call, _CALL_SET))
        result = {
            "id": f"{sk}/result",
            "cascade_id": cascade_id,
            "step_key": sk,
            "type": "tool_result",
            "call_id": sk,
            "name": name,
            "output": S.tool_output(step),
            "is_error": step.status != "DONE",
        }
        reviewed = code_review.outcome(step)  # agy's file-edit review: accepted, or rejected
        if reviewed is not None:
            result["output"], result["is_error"] = reviewed
        out.append(built(ToolResult, result, _RESULT_SET))
        return out


_SILENT_TYPES = frozenset({"CHECKPOINT", "CONVERSATION_HISTORY", "SYSTEM_MESSAGE", "EPHEMERAL_MESSAGE"})

# model_fields_set of each event the mapper builds: the fields it sets (the rest keep their default)
_BASE = ("id", "cascade_id", "step_key")
_STATUS_SET = {*_BASE, "status", "reason"}
_MODEL_SET = {*_BASE, "model"}
_USER_SET = {*_BASE, "text"}
_ASSISTANT_SET = {*_BASE, "text", "message_id"}
_ERROR_SET = {*_ASSISTANT_SET, "is_error"}
_REASONING_SET = {*_BASE, "delta", "message_id", "index", "started"}
_TEXT_SET = {*_BASE, "delta", "message_id", "index", "final"}
_USAGE_SET = {
    *_BASE,
    "cumulative_input_tokens",
    "cumulative_output_tokens",
    "cumulative_cache_read_input_tokens",
    "model",
}
_CALL_SET = {*_BASE, "call_id", "name", "arguments"}
_RESULT_SET = {*_BASE, "call_id", "name", "output", "is_error"}
