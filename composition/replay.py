"""``agy-harness replay``: recorded agy steps in, domain events out as JSON lines.

Accepted input, per file: a JSON step, a JSON list of steps, a ``{"steps": [...]}`` poll response, a
``{"update": {...}}`` stream update, or a JSONL file of stream updates (``{"update": {...}}`` or bare
updates) or steps, one per line. Every file is read and checked before anything is printed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

from agy_harness.core.reconciler import Reconciler
from agy_harness.core.steps import as_dict, as_str, steps_from_update
from agy_harness.ports.events import Event, event_to_json


class ReplayInputError(Exception):
    def __init__(self, path: str, position: str, message: str) -> None:
        super().__init__(f"{path}:{position}: {message}")


def _steps_of(value: Any, path: str, position: str) -> list[Any]:
    if isinstance(value, list):
        return list(value)
    if not isinstance(value, dict):
        raise ReplayInputError(path, position, f"expected a JSON object or list, got {type(value).__name__}")
    if isinstance(value.get("steps"), list):
        return list(value["steps"])
    if "update" in value or "mainTrajectoryUpdate" in value:
        return steps_from_update(value)
    if "type" in value:
        return [value]
    raise ReplayInputError(
        path, position, "not a step, a list of steps, a {steps} response or a stream update"
    )


def load_recorded(path: str) -> list[Any]:
    """The raw steps recorded in ``path``, in order; ReplayInputError names the file and position."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ReplayInputError(path, "0", f"cannot read: {exc}") from exc
    try:
        return _steps_of(json.loads(text), path, "1:1")
    except json.JSONDecodeError as whole_error:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        if len(lines) < 2:  # one document that is simply broken
            raise ReplayInputError(
                path, f"{whole_error.lineno}:{whole_error.colno}", whole_error.msg
            ) from None
        steps: list[Any] = []
        for n, line in lines:
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ReplayInputError(path, f"{n}:{exc.colno}", f"invalid JSON line: {exc.msg}") from None
            steps.extend(_steps_of(value, path, f"{n}:1"))
        return steps


def cascade_of(raws: Iterable[Any]) -> str:
    for raw in raws:
        info = as_dict(as_dict(as_dict(raw).get("metadata")).get("sourceTrajectoryStepInfo"))
        if as_str(info.get("cascadeId")):
            return as_str(info["cascadeId"])
    return "replay"


def replay(paths: Sequence[str]) -> list[Event]:
    raws: list[Any] = []
    for path in paths:
        raws.extend(load_recorded(path))
    return Reconciler(cascade_of(raws)).feed_all(raws)


def write_events(events: Iterable[Event], out: TextIO) -> None:
    for event in events:
        out.write(json.dumps(event_to_json(event), ensure_ascii=False) + "\n")
