"""A tolerant read of agy trajectory steps, in both projections (poll snapshot and stream frame).

agy's steps are proto-JSON: 64-bit numbers may arrive as strings, absent fields mean their default
(``stepIndex`` absent means 0), and new fields appear between versions. Nothing here raises on odd
input: :func:`parse_step` returns ``None`` for what is not a step, and every accessor falls back to
an empty value. Only fields that BOTH projections carry are used for identity.
"""

from __future__ import annotations

import logging
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, NamedTuple

from . import safejson
from .safejson import clean_text
from .stamps import PLACEHOLDER_PREFIX, time_key

log = logging.getLogger("agy_harness.core.steps")

TYPE_PREFIX = "CORTEX_STEP_TYPE_"
STATUS_PREFIX = "CORTEX_STEP_STATUS_"

#: agy's tool names for step types whose stream projection has no ``metadata.toolCall``.
TOOL_NAMES_BY_TYPE = {
    "LIST_DIRECTORY": "list_dir",
    "RUN_COMMAND": "run_command",
    "VIEW_FILE": "view_file",
    "ASK_QUESTION": "ask_question",
    "GREP_SEARCH": "grep_search",
    "FIND": "find_by_name",
    "WRITE_TO_FILE": "write_to_file",
    "VIEW_FILE_OUTLINE": "view_file_outline",
    "READ_URL_CONTENT": "read_url_content",
    "SEARCH_WEB": "search_web",
    "COMMAND_STATUS": "command_status",
}

DISPLAY_ARGUMENT_KEYS = frozenset({"toolAction", "toolSummary"})

SETTLED_STATUSES = frozenset({"DONE", "ERROR", "CANCELED", "CANCELLED"})


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: object) -> str:
    """A str field; lone surrogates (valid JSON, unencodable) become U+FFFD so every event encodes."""
    if type(value) is str and value.isascii():  # the common case, without a call
        return value
    return clean_text(value) if isinstance(value, str) else ""


def as_int(value: object, default: int = 0) -> int:
    """An int from an int, a float or a numeric string (proto-JSON int64); ``default`` otherwise."""
    if type(value) is int:  # (the common cases first, by exact type)
        return value
    if type(value) is str:
        try:
            return int(value)
        except ValueError:
            return default
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)  # (int() takes surrounding whitespace)
        except ValueError:
            return default
    return default


def camel(short_type: str) -> str:
    """``RUN_COMMAND`` -> ``runCommand``: the key of a step's typed body (memoised: on the hot path)."""
    key = _CAMEL.get(short_type)
    if key is None:
        head, *rest = short_type.lower().split("_")
        key = head + "".join(part.capitalize() for part in rest)
        if len(_CAMEL) < 1024:  # agy has a few dozen step types; never grow without bound on junk
            _CAMEL[short_type] = key
    return key


_CAMEL: dict[str, str] = {}


class StepKey(NamedTuple):
    """A step's identity: ``(trajectoryId, stepIndex)``; USER_INPUT is keyed by its executionId."""

    trajectory_id: str
    step_index: int
    execution_id: str = ""

    def __str__(self) -> str:
        if self.execution_id:
            return f"{self.trajectory_id}/u:{self.execution_id}"
        return f"{self.trajectory_id}/{self.step_index}"


def turn_of_user_key(step_key: str) -> str:
    """The executionId a USER_INPUT's step key (``StepKey``'s ``<trajectory>/u:<executionId>``)
    names; "" for any other key and for a turn told apart by its time only (``u:t:...``)."""
    _, sep, execution_id = step_key.rpartition("/u:")
    return execution_id if sep and not execution_id.startswith("t:") else ""


@dataclass(slots=True, eq=False)
class Step:
    """One parsed step (read once, then only read: treat it as immutable)."""

    raw: dict[str, Any]
    type: str  # without the CORTEX_STEP_TYPE_ prefix
    status: str  # without the CORTEX_STEP_STATUS_ prefix
    key: StepKey
    cascade_id: str
    metadata: dict[str, Any]
    #: the typed body (``runCommand``, ``plannerResponse``, ...), read once
    body: dict[str, Any]
    #: DONE/ERROR/CANCELED, or a USER_INPUT: the step will not change any more
    settled: bool
    #: ``str(key)``, made once
    name: str = ""

    @property
    def tool_call(self) -> dict[str, Any]:
        return as_dict(self.metadata.get("toolCall"))

    @property
    def is_tool(self) -> bool:
        """Tool steps are known by ``metadata.toolAction`` or ``metadata.toolCall.id``, whatever their type."""
        metadata = self.metadata
        if metadata.get("toolAction"):
            return True
        call = metadata.get("toolCall")
        return isinstance(call, dict) and bool(call.get("id"))


class Committed:
    """What :func:`parse_step` returns for a step whose key is in the ``committed`` set it was given."""


COMMITTED = Committed()


def parse_step(raw: object) -> Step | None:
    """Read one step; ``None`` (with a log line) when ``raw`` is not a usable step."""
    step = parse_new_step(raw, _NOTHING)
    return step if type(step) is Step else None


_NOTHING: frozenset[str] = frozenset()
#: ``StepKey(a, b, c)`` without the named tuple's Python-level ``__new__`` (every step makes one)
_new_key = tuple.__new__


def parse_new_step(raw: object, committed: AbstractSet[str]) -> Step | Committed | None:
    """:func:`parse_step`, or :data:`COMMITTED` when the step's key (``str(StepKey)``, under a real
    trajectory: not a transcript's placeholder) is in ``committed``: decided on the key alone, before
    the rest of the step is read (the reconciler's dedup of cumulative frames and re-read history)."""
    if not isinstance(raw, dict):
        log.warning("skipping a step that is not a JSON object: %s", type(raw).__name__)
        return None
    # (the plain ASCII strings every step has are read through memos: this runs for every step seen)
    raw_type = raw.get("type")
    step_type = _SHORT_TYPES.get(raw_type) if type(raw_type) is str else None
    if step_type is None:
        step_type = _short(raw_type, TYPE_PREFIX, _SHORT_TYPES)
    if not step_type:
        log.warning("skipping a step without a type (keys: %s)", sorted(raw)[:8])
        return None
    metadata = raw.get("metadata")
    if type(metadata) is not dict:
        metadata = as_dict(metadata)
    info = metadata.get("sourceTrajectoryStepInfo")
    if type(info) is not dict:
        info = as_dict(info)
    trajectory_id = info.get("trajectoryId")
    if type(trajectory_id) is not str or not trajectory_id.isascii():
        trajectory_id = as_str(trajectory_id)
    if not trajectory_id:
        log.warning("skipping a %s step without metadata.sourceTrajectoryStepInfo.trajectoryId", step_type)
        return None
    if step_type == "USER_INPUT":
        execution_id = as_str(metadata.get("executionId"))
        # Without an executionId the turn's createdAt tells turns apart (as the reference harness
        # does: omnigent 0.19.1 steps.py _execution_discriminator); both projections carry it.
        if not execution_id and as_str(metadata.get("createdAt")):
            execution_id = "t:" + time_key(as_str(metadata.get("createdAt")))
        if not execution_id:
            log.warning("skipping a USER_INPUT step without metadata.executionId or createdAt")
            return None
        key = _new_key(StepKey, (trajectory_id, 0, execution_id))
        name = f"{trajectory_id}/u:{execution_id}"
    else:
        index = info.get("stepIndex", 0)
        if type(index) is not int:
            index = as_int(index)
        name = f"{trajectory_id}/{index}"
        if committed and name in committed and not trajectory_id.startswith(PLACEHOLDER_PREFIX):
            return COMMITTED
        key = _new_key(StepKey, (trajectory_id, index, ""))
    raw_status = raw.get("status")
    status = _SHORT_STATUSES.get(raw_status) if type(raw_status) is str else None
    if status is None:
        status = _short(raw_status, STATUS_PREFIX, _SHORT_STATUSES)
    body = raw.get(_CAMEL.get(step_type) or camel(step_type))
    cascade_id = info.get("cascadeId", "")
    if type(cascade_id) is not str or not cascade_id.isascii():
        cascade_id = as_str(cascade_id)
    return Step(
        raw,
        step_type,
        status,
        key,
        cascade_id,
        metadata,
        body if type(body) is dict else as_dict(body),
        step_type == "USER_INPUT" or status in SETTLED_STATUSES,
        name,
    )


def _short(value: object, prefix: str, memo: dict[str, str]) -> str:
    """A step's type or status without agy's prefix (``CORTEX_STEP_TYPE_``...), memoised (never
    growing without bound on junk)."""
    text = as_str(value)
    short = text[len(prefix) :] if text.startswith(prefix) else text
    if type(value) is str and len(memo) < 1024:
        memo[value] = short
    return short


_SHORT_TYPES: dict[str, str] = {}
_SHORT_STATUSES: dict[str, str] = {}


def steps_from_update(update: object) -> list[Any]:
    """The raw steps carried by one stream update (``{"update": ...}`` unwrapped or not).

    Tolerant of shapes: ``mainTrajectoryUpdate.stepsUpdate.steps``, a top-level ``steps`` list, or a
    bare step. Returns raw values; the caller parses (and skips) them one by one.
    """
    if not isinstance(update, dict):
        return []
    if "update" in update and isinstance(update["update"], dict):
        update = update["update"]
    main = as_dict(update.get("mainTrajectoryUpdate"))
    steps = as_dict(main.get("stepsUpdate")).get("steps")
    if isinstance(steps, list):
        return steps
    if isinstance(update.get("steps"), list):
        return list(update["steps"])
    if "type" in update and "metadata" in update:
        return [update]
    return []


# ---------------------------------------------------------------------------------------------
# Field readers used by the mapper


def planner_text(step: Step) -> str:
    body = step.body
    return as_str(body.get("modifiedResponse")) or as_str(body.get("response"))


def planner_thinking(step: Step) -> str:
    return as_str(step.body.get("thinking"))


def user_text(step: Step) -> str:
    """``userResponse``, else the ``items`` texts joined; "" when the turn has no text at all."""
    body = step.body
    text = as_str(body.get("userResponse"))
    if text.strip():
        return text
    joined = "".join(as_str(as_dict(item).get("text")) for item in as_list(body.get("items")))
    return joined if joined.strip() else ""


def planner_tool_calls(step: Step) -> list[Any]:
    """``plannerResponse.toolCalls`` (poll projection only: the stream strips it)."""
    return as_list(step.body.get("toolCalls"))


def user_model(step: Step) -> str:
    planner = as_dict(as_dict(step.body.get("userConfig")).get("plannerConfig"))
    return as_str(planner.get("planModel")) or as_str(as_dict(planner.get("requestedModel")).get("model"))


def tool_name(step: Step) -> str:
    name = as_str(step.tool_call.get("name"))
    if name:
        return name
    return TOOL_NAMES_BY_TYPE.get(step.type, step.type.lower())


def error_text(step: Step) -> str:
    """The step's error detail: ``error`` (a string or its message fields), else a planner's
    ``plannerResponse.error`` / ``errorMessage`` (where the reference harness reads it)."""
    for error in (step.raw.get("error"), step.body.get("error"), step.body.get("errorMessage")):
        if isinstance(error, str) and error.strip():
            return clean_text(error.strip())
        error = as_dict(error)
        for key in ("userErrorMessage", "shortError", "message", "modelErrorMessage"):
            if as_str(error.get(key)).strip():
                return as_str(error.get(key)).strip()
    return ""


def interaction_response(step: Step) -> dict[str, Any] | None:
    """The last answer agy recorded for this step's gate (``completedInteractions[-1].response``)."""
    done = as_list(step.raw.get("completedInteractions"))
    return as_dict(as_dict(done[-1]).get("response")) if done else None


def permission_denied(step: Step) -> bool:
    """A recorded permission answer that did not allow (proto-JSON omits ``allow: false``)."""
    response = interaction_response(step)
    return (
        response is not None and "permission" in response and not as_dict(response["permission"]).get("allow")
    )


def tool_output(step: Step) -> str:
    """What the tool produced, as text (always encodable). An ERROR step without output says it did
    not complete."""
    return clean_text(_tool_output(step))


def _tool_output(step: Step) -> str:
    full = as_dict(as_dict(step.raw.get("runCommand")).get("combinedOutput")).get("full")
    if isinstance(full, str):
        return full
    if step.type == "RUN_COMMAND" and step.status == "DONE":
        return ""  # a command that printed nothing: proto-JSON omits the empty output
    result = as_dict(step.raw.get("generic")).get("result")
    if isinstance(result, dict) and isinstance(result.get("result"), str):
        return str(result["result"])
    if result is not None:
        return safejson.dumps(result)
    if step.status == "ERROR" and permission_denied(step):
        return f"{tool_name(step)} was not run: permission denied"
    if step.status == "ERROR":
        detail = error_text(step)
        base = f"{tool_name(step)} did not complete (the step ended in error)"
        return f"{base}: {detail}" if detail else base
    return safejson.dumps(step.body, sort_keys=True) if step.body else ""


def waiting_interaction(step: Step) -> tuple[str, dict[str, Any]] | None:
    """``("question"|"permission", request)`` when the step is a pending gate, else ``None``.

    DONE steps keep ``requestedInteraction``; only ``status == WAITING`` makes a gate pending.
    """
    if step.status != "WAITING":
        return None
    requested = as_dict(step.raw.get("requestedInteraction"))
    if isinstance(requested.get("askQuestion"), dict):
        return "question", requested["askQuestion"]
    if isinstance(requested.get("permission"), dict):
        return "permission", requested["permission"]
    return None
