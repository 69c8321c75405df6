"""``agy-harness replay``: recorded agy steps in, domain events out as JSON lines.

Accepted input, per file: a JSON step, a JSON list of steps, a ``{"steps": [...]}`` poll response, a
``{"update": {...}}`` stream update, or a JSONL file of stream updates (``{"update": {...}}`` or bare
updates) or steps, one per line. Every file is read and checked before anything is printed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

from agy_harness.adapters.sinks.jsonl import event_line
from agy_harness.core import safejson
from agy_harness.core.steps import as_dict, as_str, steps_from_update
from agy_harness.ports.events import Event

from .errors import EXIT_OK, EXIT_USAGE


class ReplayInputError(Exception):
    def __init__(self, path: str, position: str, message: str) -> None:
        super().__init__(f"{path}:{position}: {message}")


def _position(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    return f"{line}:{offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


def _item_offsets(text: str) -> list[int]:
    """Where each item of a top-level JSON list starts (empty when ``text`` is not one)."""
    decoder = json.JSONDecoder()
    start = len(text) - len(text.lstrip())
    if not text.startswith("[", start):
        return []
    offsets: list[int] = []
    i = start + 1
    try:
        while True:
            while i < len(text) and text[i].isspace():
                i += 1
            if text.startswith("]", i):
                return offsets
            offsets.append(i)
            _, i = decoder.raw_decode(text, i)
            while i < len(text) and text[i].isspace():
                i += 1
            if text.startswith(",", i):
                i += 1
    except (ValueError, IndexError, RecursionError):
        return []


def _check_steps(steps: list[Any], path: str, position: str, where: str, text: str = "") -> list[Any]:
    """``steps`` when every one is a JSON object with a ``type``; else the first one that is not, named
    (at its own position when ``text`` is the file's list of steps)."""
    for n, step in enumerate(steps):
        if isinstance(step, dict) and isinstance(step.get("type"), str):
            continue
        what = (
            f"a JSON object without a step type ({', '.join(sorted(step)[:3]) or 'empty'})"
            if isinstance(step, dict)
            else f"{type(step).__name__} {json.dumps(step)[:40]}"
        )
        offsets = _item_offsets(text) if text else []  # (the file is decoded again only for this)
        at = _position(text, offsets[n]) if n < len(offsets) else position
        raise ReplayInputError(path, at, f"{where}[{n}] is not an agy step: {what}")
    return steps


def _steps_of(value: Any, path: str, position: str, text: str = "") -> list[Any]:
    if isinstance(value, list):
        return _check_steps(list(value), path, position, "item", text)
    if not isinstance(value, dict):
        raise ReplayInputError(path, position, f"expected a JSON object or list, got {_json_type(value)}")
    if isinstance(value.get("steps"), list):
        return _check_steps(list(value["steps"]), path, position, "steps")
    if "update" in value and not isinstance(value["update"], dict):
        raise ReplayInputError(
            path, position, f"the stream update is {type(value['update']).__name__}, not a JSON object"
        )
    if "update" in value or "mainTrajectoryUpdate" in value:
        return _check_steps(steps_from_update(value), path, position, "update steps")
    if "type" in value:
        return _check_steps([value], path, position, "step")
    raise ReplayInputError(
        path, position, "not a step, a list of steps, a {steps} response or a stream update"
    )


class UnreadableInput(Exception):
    """A file that cannot be read at all (no position to name)."""


def _read(path: str, stdin: TextIO | None) -> str:
    try:
        if path == "-":
            return (stdin or sys.stdin).read()
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableInput(
            f"cannot read {path}: not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    except OSError as exc:
        raise UnreadableInput(f"cannot read {path}: {exc.strerror or exc}") from None


def _json_type(value: Any) -> str:
    """A JSON value's type as JSON names it (``null``, not ``NoneType``)."""
    names = {type(None): "null", bool: "true/false", int: "a number", float: "a number", str: "a string"}
    return names.get(type(value), type(value).__name__)


def load_recorded(path: str, stdin: TextIO | None = None) -> list[Any]:
    """The raw steps recorded in ``path`` (``-``: standard input), in order; ReplayInputError names
    the file and position, UnreadableInput a file that cannot be read."""
    text = _read(path, stdin)
    if not text.strip():
        raise ReplayInputError("<stdin>" if path == "-" else path, "1:1", "empty: no JSON in it")
    path = "<stdin>" if path == "-" else path
    try:
        whole = safejson.loads(text)  # an over-deep or over-long part is cut, not fatal
    except json.JSONDecodeError as whole_error:
        broken = ReplayInputError(
            path, f"{whole_error.lineno}:{whole_error.colno}", f"not valid JSON ({whole_error.msg})"
        )
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        if len(lines) < 2:  # one document that is simply broken
            raise broken from None
        steps: list[Any] = []
        for i, (n, line) in enumerate(lines):
            try:
                value = safejson.loads(line)
            except ValueError as exc:
                if i == 0:  # not JSON lines: one multi-line document, broken where the parser stopped
                    raise broken from None
                col, msg = (
                    (exc.colno, exc.msg) if isinstance(exc, json.JSONDecodeError) else (1, str(exc)[:200])
                )
                raise ReplayInputError(path, f"{n}:{col}", f"invalid JSON line: {msg}") from None
            steps.extend(_steps_of(value, path, f"{n}:1"))
        return steps
    except ValueError as exc:  # not text JSON can read at all
        raise ReplayInputError(path, "1:1", str(exc)[:200]) from None
    return _steps_of(whole, path, "1:1", text)


def cascade_of(raws: Iterable[Any]) -> str:
    for raw in raws:
        info = as_dict(as_dict(as_dict(raw).get("metadata")).get("sourceTrajectoryStepInfo"))
        if as_str(info.get("cascadeId")):
            return as_str(info["cascadeId"])
    return "replay"


def recorded_steps(paths: Sequence[str], stdin: TextIO | None = None) -> list[Any]:
    raws: list[Any] = []
    for path in paths:
        raws.extend(load_recorded(path, stdin))
    return raws


def events_of(raws: list[Any]) -> list[Event]:
    from ..root.container import AgyContainer  # the composition root; imported late: replay needs no agy

    return AgyContainer().reconciler(cascade_of(raws)).feed_all(raws)


def replay(paths: Sequence[str], stdin: TextIO | None = None) -> list[Event]:
    return events_of(recorded_steps(paths, stdin))


def run(paths: Sequence[str], out: TextIO, err: TextIO, stdin: TextIO | None = None) -> int:
    """The ``replay`` command: 0 and every event on ``out``; or 2, one line on ``err``, nothing on ``out``.

    Every line is rendered before the first is written, so bad input never prints half-way. Input
    that holds no agy step at all (e.g. stream updates that only carry a status) is no error, but
    it is said on ``err``: an empty output is never silent for want of steps.
    """
    if list(paths).count("-") > 1:
        err.write("agy-harness replay: - (standard input) can be given once\n")
        return EXIT_USAGE
    try:
        raws = recorded_steps(paths, stdin)
        lines = [event_line(event) for event in events_of(raws)]
        encoding = getattr(out, "encoding", None) or "utf-8"
        if encoding.lower().replace("-", "") != "utf8":  # e.g. LANG=C: JSON's own escapes
            lines = [json.dumps(json.loads(line), ensure_ascii=True) + "\n" for line in lines]
    except (ReplayInputError, UnreadableInput) as exc:
        err.write(f"agy-harness replay: {exc}\n")
        return EXIT_USAGE
    except Exception as exc:  # never a traceback: bad input is one line and exit 2
        err.write(f"agy-harness replay: cannot replay {', '.join(paths)}: {type(exc).__name__}: {exc}\n")
        return EXIT_USAGE
    if not raws:
        err.write(
            "agy-harness replay: no events: the input holds no agy steps (only stream status, or none)\n"
        )
    out.writelines(lines)
    out.flush()
    return EXIT_OK
