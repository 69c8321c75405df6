"""What the simulated agy TUI shows and how typed text answers a gate (pure functions; the terminal
program is :mod:`.tui`)."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agy_harness.core.arguments import tool_arguments
from agy_harness.core.steps import (
    Step,
    as_dict,
    as_list,
    as_str,
    parse_step,
    planner_text,
    tool_name,
    user_text,
    waiting_interaction,
)

RULE = "─"


def write_port_file(path: Path, port: int, cascade_id: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f"{port} {cascade_id}\n", encoding="utf-8")
    os.replace(tmp, path)


def _indent(prefix: str, text: str) -> list[str]:
    rows = text.split("\n") or [""]
    pad = " " * len(prefix)
    return [(prefix if i == 0 else pad) + row for i, row in enumerate(rows)]


def _tool_line(step: Step) -> str:
    args = tool_arguments(step)
    detail = as_str(args.get("CommandLine")) or as_str(step.metadata.get("toolSummary"))
    if not detail:
        for value in args.values():
            if isinstance(value, str) and value:
                detail = value
                break
    status = step.status.lower() or "pending"
    return f"• {tool_name(step)}: {detail}  [{status}]" if detail else f"• {tool_name(step)}  [{status}]"


def _persist_pattern(request: dict[str, Any]) -> str:
    if as_str(request.get("persistSuggestionType")) != "PERSIST_SUGGESTION_TYPE_SUGGESTED":
        return ""
    return as_str(request.get("suggestedPersistPattern"))


PERMISSION_HEADER = "? Allow this command?"
COMMAND_PREFIX, COMMAND_MORE, CWD_PREFIX = "  $ ", "    ", "  in "


def permission_request_lines(command: str, cwd: str) -> list[str]:
    """What the prompt shows of a permission request: the whole command line (every line of it) and
    its directory -- as agy's own prompt shows the command it asks about, so a human (and the
    harness, before it types into the prompt) can tell which request it is."""
    rows = command.split("\n") or [""]
    out = [COMMAND_PREFIX + rows[0], *(COMMAND_MORE + row for row in rows[1:])]
    return [*out, CWD_PREFIX + cwd] if cwd else out


def gate_lines(step: Step) -> list[str]:
    gate = waiting_interaction(step)
    if gate is None:
        return []
    kind, request = gate
    if kind == "permission":
        body = as_dict(step.raw.get("runCommand"))
        command = as_str(body.get("commandLine")) or as_str(as_dict(request.get("resource")).get("target"))
        head = [PERMISSION_HEADER, *permission_request_lines(command, as_str(body.get("cwd")))]
        pattern = _persist_pattern(request)
        if pattern:  # agy's menu when it offers "allow always" (the reference, live-verified on 1.2.7)
            return [
                *head,
                "  1. Yes, run command",
                f"  2. Yes, and always allow in this conversation for commands that start with '{pattern}'",
                f"  3. Yes, and always allow commands that start with '{pattern}' (Persist to settings.json)",
                "  4. No, cancel",
                "  (type 1-4, or y/n, then Enter)",
            ]
        return [
            *head,
            "  1. Yes, run command",
            "  2. No, cancel",
            "  (type 1/y or 2/n, then Enter)",
        ]
    out: list[str] = []
    for q in as_list(request.get("questions")):
        q = as_dict(q)
        out.append(f"? {as_str(q.get('question'))}")
        for opt in as_list(q.get("options")):
            opt = as_dict(opt)
            out.append(f"  {as_str(opt.get('id'))}. {as_str(opt.get('text'))}")
    out.append("  (type option number(s), e.g. 1 or 1,3, or your own answer, then Enter)")
    return out


def render_steps(steps: list[Any]) -> list[str]:
    """The conversation area for a cascade's steps (poll projection)."""
    out: list[str] = []
    for raw in steps:
        step = parse_step(raw)
        if step is None:
            continue
        if step.type == "USER_INPUT":
            out += _indent("› ", user_text(step))
        elif step.type == "PLANNER_RESPONSE":
            text = planner_text(step)
            if text:
                out += _indent("✦ ", text)
        elif step.is_tool or waiting_interaction(step) is not None:
            out.append(_tool_line(step))
            out += gate_lines(step)
        elif step.status == "ERROR":
            out.append(f"✗ {step.type.lower()} failed")
    return out


def answer_interaction(step: Step, text: str) -> dict[str, Any] | None:
    """The ``interaction`` payload answering the WAITING gate ``step`` with typed ``text`` (None: invalid)."""
    gate = waiting_interaction(step)
    if gate is None:
        return None
    kind, request = gate
    base: dict[str, Any] = {"trajectoryId": step.key.trajectory_id, "stepIndex": step.key.step_index}
    word = text.strip().lower()
    if kind == "permission":
        offered = bool(_persist_pattern(request))
        allow = ("1", "y", "yes", "allow", "2", "3") if offered else ("1", "y", "yes", "allow")
        deny = ("4", "n", "no", "deny") if offered else ("2", "n", "no", "deny")
        if word in allow:  # 2/3 also record the rule in agy's settings; the step is simply allowed
            return {**base, "permission": {"allow": True}}
        if word in deny:
            return {**base, "permission": {"allow": False}}
        return None
    questions = [as_dict(q) for q in as_list(request.get("questions"))]
    parts = text.split(";") if len(questions) > 1 else [text]
    if len(parts) != len(questions):
        return None
    responses: list[dict[str, Any]] = []
    for q, part in zip(questions, parts, strict=True):
        ids = {as_str(as_dict(o).get("id")) for o in as_list(q.get("options"))}
        tokens = [t for t in re.split(r"[,\s]+", part.strip()) if t]
        response: dict[str, Any] = {"question": as_str(q.get("question"))}
        if tokens and all(t in ids for t in tokens):
            response["selectedOptionIds"] = tokens
        elif part.strip():
            response["selectedOptionIds"] = []
            response["writeInResponse"] = part.strip()
        else:
            return None
        responses.append(response)
    return {**base, "askQuestion": {"responses": responses}}


def render_screen(
    steps: list[Any],
    composer: str,
    state: str,
    profile: str,
    cols: int,
    rows: int,
    *,
    notice: str = "",
    prompt: Sequence[str] = (),
) -> list[str]:
    """The whole screen, one string per logical line: conversation tail, rule, composer, footer."""
    conversation = render_steps(steps)
    conversation += prompt  # a prompt left open after its gate was answered elsewhere
    if notice:
        conversation.append(f"! {notice}")
    bottom = [RULE * max(3, cols), *_indent("> ", composer), f"agy {profile} · {state}"]

    def height(line: str) -> int:
        return max(1, math.ceil(len(line) / max(1, cols)))

    room = rows - sum(height(line) for line in bottom)
    kept: list[str] = []
    for line in reversed(conversation):
        h = height(line)
        if h > room:
            break
        kept.append(line)
        room -= h
    kept.reverse()
    return [*kept, *bottom]
