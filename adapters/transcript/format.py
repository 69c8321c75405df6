"""The legacy agy transcript: ``<root>/brain/<cascadeId>/.system_generated/logs/transcript_full.jsonl``.

Older agy versions append one JSON line per *completed* step (DONE or ERROR; a USER_INPUT counts as
completed when it is recorded) to that file. agy's own line format is not recorded anywhere we can
read, so this module **defines** it; the simulator's writer and the tail source both use it.

Line format (one UTF-8 JSON object per line, ``\\n``-terminated)::

    {
      "step_index":   7,                      # metadata.sourceTrajectoryStepInfo.stepIndex (absent -> 0)
      "type":         "RUN_COMMAND",          # the step type WITHOUT the CORTEX_STEP_TYPE_ prefix
      "status":       "DONE",                 # the status WITHOUT the CORTEX_STEP_STATUS_ prefix
      "trajectory_id": "efb1...",             # metadata.sourceTrajectoryStepInfo.trajectoryId
      "execution_id": "552a...",              # metadata.executionId ("" when absent)
      "created_at":   "2026-06-22T23:59:07Z", # metadata.createdAt ("" when absent)
      "metadata":     {...},                  # the step's metadata minus sourceTrajectoryStepInfo
                                              #   and internalMetadata (toolCall, modelUsage, ... kept)
      "runCommand":   {...},                  # the typed body under its own key (camelCase of the type)
      ...                                     # and every other top-level key of the step verbatim
                                              #   (requestedInteraction, completedInteractions, permissions)
    }

Properties a reader must tolerate: ``step_index`` values arrive out of order and with gaps; the last
line may be partial (no newline yet); the file may be truncated or replaced (log rotation). The
cascade id is not in the line: it is the ``<cascadeId>`` directory the file lives in.

:func:`line_to_step` turns a line back into the poll-projection step the core reads
(``CORTEX_STEP_TYPE_``/``CORTEX_STEP_STATUS_`` prefixes, ``metadata.sourceTrajectoryStepInfo``
``{trajectoryId, stepIndex, cascadeId}`` restored — a USER_INPUT gets no ``stepIndex``, as in agy's
own projection — and ``metadata.executionId``). ``metadataIndex`` and ``internalMetadata`` are lost.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from agy_harness.core.steps import STATUS_PREFIX, TYPE_PREFIX, as_dict, as_int, as_str, parse_step

TRANSCRIPT_NAME = "transcript_full.jsonl"

#: The line's own fields; everything else at the top level is a step field carried verbatim.
LINE_FIELDS = frozenset(
    {"step_index", "type", "status", "trajectory_id", "execution_id", "created_at", "metadata"}
)
#: Step fields that the line rebuilds rather than carries.
_STEP_OWN = frozenset({"type", "status", "metadata"})
_DROPPED_METADATA = ("sourceTrajectoryStepInfo", "internalMetadata")
COMPLETED_STATUSES = frozenset({"DONE", "ERROR"})


def transcript_path(root: Path, cascade_id: str) -> Path:
    """Where agy writes the transcript of ``cascade_id`` under its data root (e.g. ``~/.gemini/antigravity-cli``)."""
    return root / "brain" / cascade_id / ".system_generated" / "logs" / TRANSCRIPT_NAME


def short_type(step: dict[str, Any]) -> str:
    return as_str(step.get("type")).removeprefix(TYPE_PREFIX)


def short_status(step: dict[str, Any]) -> str:
    return as_str(step.get("status")).removeprefix(STATUS_PREFIX)


def is_completed(step: dict[str, Any]) -> bool:
    """True when agy would have written this step to the transcript (DONE/ERROR, or any USER_INPUT)."""
    return short_type(step) == "USER_INPUT" or short_status(step) in COMPLETED_STATUSES


def step_identity(step: dict[str, Any]) -> str:
    """``trajectoryId/stepIndex`` (USER_INPUT: ``trajectoryId/u:executionId``): the core's step key."""
    parsed = parse_step(step)
    return str(parsed.key) if parsed is not None else ""


def step_to_line(step: object) -> dict[str, Any] | None:
    """A poll-projection step as a transcript line object; ``None`` when ``step`` is not a step."""
    if not isinstance(step, dict):
        return None
    step_type = short_type(step)
    if not step_type:
        return None
    metadata = as_dict(step.get("metadata"))
    info = as_dict(metadata.get("sourceTrajectoryStepInfo"))
    line: dict[str, Any] = {
        "step_index": as_int(info.get("stepIndex")),
        "type": step_type,
        "status": short_status(step),
        "trajectory_id": as_str(info.get("trajectoryId")),
        "execution_id": as_str(metadata.get("executionId")),
        "created_at": as_str(metadata.get("createdAt")),
        "metadata": {k: copy.deepcopy(v) for k, v in metadata.items() if k not in _DROPPED_METADATA},
    }
    for key, value in step.items():
        if key in _STEP_OWN or key in LINE_FIELDS:
            continue
        line[key] = copy.deepcopy(value)
    return line


def encode_line(line: dict[str, Any]) -> bytes:
    """One transcript line, UTF-8 (non-ASCII kept as is), newline-terminated."""
    return (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def line_to_step(obj: object, *, cascade_id: str = "") -> dict[str, Any] | None:
    """A transcript line object back as a poll-projection step; ``None`` when it is not a usable line.

    A usable line is a JSON object with a non-empty string ``type`` and ``trajectory_id``. The
    ``cascade_id`` (the transcript's directory name) goes into ``sourceTrajectoryStepInfo.cascadeId``.
    """
    if not isinstance(obj, dict):
        return None
    step_type = as_str(obj.get("type")).removeprefix(TYPE_PREFIX)
    trajectory_id = as_str(obj.get("trajectory_id"))
    if not step_type or not trajectory_id:
        return None
    step_index = as_int(obj.get("step_index"), -1)
    if step_index < 0 and step_type != "USER_INPUT":
        return None
    metadata = copy.deepcopy(as_dict(obj.get("metadata")))
    info: dict[str, Any] = {"trajectoryId": trajectory_id}
    if step_type != "USER_INPUT":
        info["stepIndex"] = step_index
    if cascade_id:
        info["cascadeId"] = cascade_id
    metadata["sourceTrajectoryStepInfo"] = info
    execution_id = as_str(obj.get("execution_id"))
    if execution_id:
        metadata["executionId"] = execution_id
    created_at = as_str(obj.get("created_at"))
    if created_at and "createdAt" not in metadata:
        metadata["createdAt"] = created_at
    step: dict[str, Any] = {"type": TYPE_PREFIX + step_type}
    status = as_str(obj.get("status")).removeprefix(STATUS_PREFIX)
    if status:
        step["status"] = STATUS_PREFIX + status
    step["metadata"] = metadata
    for key, value in obj.items():
        if key in LINE_FIELDS or key in _STEP_OWN:
            continue
        step[key] = copy.deepcopy(value)
    return step
