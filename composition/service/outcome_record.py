"""The ``outcome`` record of a decided gate (what ran, written by :class:`~.decisions.DecisionRecorder`
once the gate's step has its result): whether it failed, a digest and the last lines of its output
(secrets of the command lines masked), and, for a command, what agy proposed, what the human approved
and what agy's step shows ran (:func:`~agy_harness.core.decision_record.ran_fields`)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from typing import Any

from agy_harness.core.decision_record import output_tail, ran_fields
from agy_harness.core.elicitation import proposed_command
from agy_harness.ports.events import GateOpened, ToolResult

OUTPUT_TAIL = 400  # characters of a tool's output kept in its outcome record


#: the command line a step ran once settled (the decided gate, the step's trajectory and index): None
#: when it has none or has not settled (:meth:`.settled_runs.SettledRuns.ran`)
RanLine = Callable[[GateOpened, str, int], Awaitable[str | None]]


async def ran_at(ran_line: RanLine, gate: GateOpened, step_key: str) -> tuple[str | None, str]:
    """The command line the step that took ``gate``'s answer shows it ran (agy's
    ``runCommand.commandLine`` once it settled, after any edit or hook), or None and why it could
    not be read."""
    trajectory, _, index = step_key.rpartition("/")
    try:
        ran = await ran_line(gate, trajectory, int(index))
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        return None, f"agy's steps could not be read ({type(exc).__name__}: {exc})"
    return ran, "" if ran is not None else "agy's step shows no command line that ran"


def outcome_body(
    gate: GateOpened,
    seq: int,
    result: ToolResult,
    approved: str | None,
    ran_why: tuple[str | None, str],
    secrets_of: Callable[[str], list[str]],
    redact_command: Callable[[str], str],
) -> dict[str, Any]:
    """The outcome record's body for decision ``seq`` on ``gate``: ``result`` is its step's result,
    ``approved`` the command line the human approved (None: no command), ``ran_why`` what ran (and
    why it is unknown, if it is)."""
    output = result.output
    proposed = proposed_command(gate)
    ran, why = ran_why
    secrets = [s for line in {proposed, approved or "", ran or ""} for s in secrets_of(line)]
    body: dict[str, Any] = {
        "conversation": gate.cascade_id,
        "gate_id": gate.gate_id,
        "decision": seq,
        "tool": result.name,
        "command": "",
        "error": result.is_error,
        "output_sha256": hashlib.sha256(output.encode("utf-8", "replace")).hexdigest(),
        "output_chars": len(output),
        "output_tail": output_tail(output, secrets, OUTPUT_TAIL),
    }
    if proposed or approved is not None:
        body.update(ran_fields(proposed, approved, ran, why, redact_command))
    return body
