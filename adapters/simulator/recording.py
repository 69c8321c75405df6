"""``agy-harness sim --recording FILE``: serve a recorded conversation (``agy-harness record``'s
JSONL: ``{"steps": [...]}`` snapshots and ``{"update": ...}`` stream frames, in order).

The conversation's final state is rebuilt (a snapshot replaces the steps, a frame replaces the steps
at its indices) and becomes the simulator's current, idle conversation under its recorded id; a
recording is static (new turns run the scripted model on top of it).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Protocol

from .state import Cascade


class _Host(Protocol):
    cascade_id: str
    _cascades: dict[str, Cascade]

    def _new_cascade(self, parent: Cascade | None = None) -> Cascade: ...


def recorded_state(lines: list[Any]) -> tuple[str, list[dict[str, Any]]]:
    """``(conversation id, steps)`` after every line of a recording ("" when none names one)."""
    cascade_id = ""
    steps: list[dict[str, Any]] = []
    for obj in lines:
        if not isinstance(obj, dict):
            continue
        if isinstance(obj.get("steps"), list):
            steps = [copy.deepcopy(s) for s in obj["steps"] if isinstance(s, dict)]
            continue
        inner = obj.get("update")
        update: dict[str, Any] = inner if isinstance(inner, dict) else obj
        cascade_id = str(update.get("conversationId") or cascade_id)
        part = ((update.get("mainTrajectoryUpdate") or {}).get("stepsUpdate")) or {}
        indices, new = part.get("indices") or [], part.get("steps") or []
        for n, step in enumerate(new):
            if not isinstance(step, dict):
                continue
            index = int(indices[n]) if n < len(indices) else len(steps)
            while len(steps) <= index:
                steps.append({})
            merged = copy.deepcopy(steps[index]) if steps[index] else {}
            merged.update(copy.deepcopy(step))  # the stream lacks some poll fields: keep them
            steps[index] = merged
    if not cascade_id:
        for step in steps:
            info = ((step.get("metadata") or {}).get("sourceTrajectoryStepInfo")) or {}
            cascade_id = str(info.get("cascadeId") or cascade_id)
    return cascade_id, [s for s in steps if s]


class BadRecording(ValueError):
    """A recording that cannot be served: the message names the file (and the line) and what to do."""


#: a recording is read whole: larger than this is not one `record` wrote for a conversation
MAX_BYTES = 256 * 1024 * 1024


def read_recording(path: str | Path) -> list[Any]:
    """The JSON objects of the recording at ``path``, one per non-empty line; :class:`BadRecording`
    when it is missing, unreadable, too large or not JSON lines (naming the line)."""
    where = str(path)
    try:
        if Path(path).stat().st_size > MAX_BYTES:
            raise BadRecording(
                f"{where}: larger than {MAX_BYTES >> 20} MiB; not a recording of `agy-harness record`"
            )
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadRecording(f"{where}: no such file; `agy-harness record --out FILE` makes one") from None
    except IsADirectoryError:
        raise BadRecording(f"{where}: a directory; name a file `agy-harness record` wrote") from None
    except UnicodeDecodeError as exc:
        raise BadRecording(f"{where}: not UTF-8 text (byte {exc.start}); not a recording") from None
    except OSError as exc:
        raise BadRecording(f"{where}: cannot be read ({exc.strerror or exc})") from None
    lines: list[Any] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            lines.append(json.loads(line))
        except ValueError as exc:
            raise BadRecording(
                f"{where}, line {number}: not JSON ({getattr(exc, 'msg', exc)}, column "
                f"{getattr(exc, 'colno', '?')}); a recording has one JSON object per line, as "
                "`agy-harness record` writes"
            ) from None
    return lines


def load_recording(sim: _Host, path: str | Path, lines: list[Any] | None = None) -> str:
    """Make the recording at ``path`` (its ``lines``, when read already) the simulator's current
    conversation; returns its id."""
    if lines is None:
        lines = read_recording(path)
    cascade_id, steps = recorded_state(lines)
    c = sim._new_cascade()
    if cascade_id:
        del sim._cascades[c.id]
        c.id = c.root_id = cascade_id
        sim._cascades[c.id] = c
    for step in steps:
        info = ((step.get("metadata") or {}).get("sourceTrajectoryStepInfo")) or {}
        if info.get("trajectoryId"):
            c.trajectory_id = str(info["trajectoryId"])
            break
    c.steps = steps
    c.turns = sum(1 for s in steps if str(s.get("type", "")).endswith("USER_INPUT"))
    sim.cascade_id = c.id
    return c.id
