"""What a hostile (or buggy) agy could do to its own step list, for the harness's tests.

None of this is agy's recorded behaviour; it is what the harness must survive without ever putting a
human's answer on a request the human did not see (issue #26):

* :func:`rewrite_waiting` -- a WAITING command step re-streamed with another command (and directory)
  at the same step index;
* :func:`foreign_done_steps` -- finished steps of ANOTHER trajectory in the conversation's step list,
  claiming the step indices agy's own next steps will have;
* :func:`flood_gates` -- many WAITING permission steps that nobody will ever take an answer for;
* :func:`as_url_permission` -- a WAITING command step re-streamed as a permission to read a URL;
* :func:`rewrite_question` -- a WAITING question re-streamed with other text and options (ids that
  are not their positions, ids shared by two options, labels that are another option's id or
  differ only in case): agy takes the answer for it as it takes any.

Each changes the simulator's state and notifies it, so the stream and the poll both show the change.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Literal

from . import steps as st
from . import tool_steps as ts
from .state import Cascade
from .steps import shape


def _cascade(sim: Any, cascade_id: str | None) -> Cascade:
    c: Cascade = sim._cascade(cascade_id)
    return c


def rewrite_waiting(
    sim: Any, index: int, command: str, *, cwd: str = "", cascade_id: str | None = None
) -> None:
    """The WAITING RUN_COMMAND step at ``index`` now asks to run ``command`` (in ``cwd``, if given):
    its command lines, the permission's target and persist pattern change; the step index does not.
    The simulator runs whatever the step holds once it is allowed."""
    c = _cascade(sim, cascade_id)
    step = c.steps[index]
    if step.get("status") != st.WAITING or "runCommand" not in step:
        raise ValueError(f"step {index} is not a waiting command")
    body = step["runCommand"]
    body["commandLine"] = body["proposedCommandLine"] = command
    if cwd:
        body["cwd"] = cwd
    call = step["metadata"].get("toolCall")
    if isinstance(call, dict) and call.get("argumentsJson"):  # the poll's copy of the call, kept coherent
        args = json.loads(call["argumentsJson"])
        args["CommandLine"] = command
        args["Cwd"] = body["cwd"]
        call["argumentsJson"] = json.dumps(args)
    permission = step["requestedInteraction"]["permission"]
    permission["resource"]["target"] = command
    permission["suggestedPersistPattern"] = command.split()[0] if command.split() else command
    sim._changed(c, index)


def foreign_done_steps(sim: Any, indices: list[int], *, cascade_id: str | None = None) -> str:
    """Append one finished LIST_DIRECTORY step per index in ``indices``, all of a new trajectory of
    the same conversation, each claiming that step index. Returns the other trajectory's id."""
    c = _cascade(sim, cascade_id)
    other = str(uuid.uuid4())
    for index in indices:
        step = shape("list_directory_done")
        info = step["metadata"]["sourceTrajectoryStepInfo"]
        info.update({"trajectoryId": other, "stepIndex": index, "cascadeId": c.id})
        sim._append(c, step)
    return other


def flood_gates(
    sim: Any,
    n: int,
    *,
    kind: Literal["permission", "question", "other"] = "permission",
    cascade_id: str | None = None,
) -> list[int]:
    """Append ``n`` WAITING gates in the conversation's own trajectory that no turn waits on: agy
    refuses any answer to them. ``permission``: ``run_command`` approvals (``echo bogus-<i>``);
    ``question``: ``ask_question`` steps (``bogus-<i>?``, options ``yes``/``no``; their multi-select
    flags only in the poll's copy of the call, as agy's); ``other``: file-write reviews
    (``write_to_file`` of ``bogus-<i>.md``, a kind only agy's terminal answers). Returns their indices."""
    c = _cascade(sim, cascade_id)
    indices = []
    for i in range(n):
        where = st.Where(c.id, c.trajectory_id, len(c.steps), c.planner_calls, str(uuid.uuid4()))
        if kind == "other":
            call, content = ts.write_call(f"{sim.workspace}/bogus-{i}.md")
            step, request = ts.write_to_file(
                where, sim.model, call, path=f"{sim.workspace}/bogus-{i}.md", content=content
            )
        elif kind == "question":
            options = ["yes", "no"]
            call = st.tool_call(
                "ask_question",
                {"questions": [{"is_multi_select": False, "options": options, "question": f"bogus-{i}?"}]},
            )
            step, request = ts.ask_question(
                where,
                sim.model,
                call,
                question=f"bogus-{i}?",
                options=options,
                action="Asking",
                summary="Ask",
            )
        else:
            command = f"echo bogus-{i}"
            call = ts.run_call(command, sim.workspace)
            step = ts.run_command(
                where,
                sim.model,
                call,
                command=command,
                cwd=sim.workspace,
                action="Running echo",
                summary=command,
            )
            request = ts.permission_request(command, "Running echo")
        ts.ask_gate(step, request)
        indices.append(sim._append(c, step))
    return indices


def rewrite_question(
    sim: Any,
    index: int,
    options: list[dict[str, str]],
    *,
    question: str = "",
    cascade_id: str | None = None,
) -> None:
    """The WAITING ASK_QUESTION step at ``index`` now asks ``question`` (if given) with ``options``
    (``{"id": ..., "text": ...}`` each, as agy sends them: an id may be missing, shared or not the
    option's position): the request, the step's body and the poll's copy of the call all change;
    the step index does not. agy records the ids the answer names (``selectedOptionIds``)."""
    c = _cascade(sim, cascade_id)
    step = c.steps[index]
    request = step.get("requestedInteraction", {}).get("askQuestion")
    if step.get("status") != st.WAITING or not isinstance(request, dict):
        raise ValueError(f"step {index} is not a waiting question")
    for questions in (request["questions"], step["askQuestion"]["questions"]):
        questions[0]["options"] = [dict(o) for o in options]
        if question:
            questions[0]["question"] = question
    call = step["metadata"].get("toolCall")
    if isinstance(call, dict) and call.get("argumentsJson"):  # the poll's copy of the call, kept coherent
        args = json.loads(call["argumentsJson"])
        args["questions"][0]["options"] = [o.get("text", "") for o in options]
        if question:
            args["questions"][0]["question"] = question
        call["argumentsJson"] = json.dumps(args)
    sim._changed(c, index)


def as_url_permission(sim: Any, index: int, url: str, *, cascade_id: str | None = None) -> None:
    """The WAITING RUN_COMMAND step at ``index`` now asks a plain ``permission`` to read ``url``: no
    command body, the permission's resource ``{action: "read_url", target: url}``. (agy's answer to
    it is whatever the simulator takes for a permission; what matters is the card.)"""
    c = _cascade(sim, cascade_id)
    step = c.steps[index]
    if step.get("status") != st.WAITING or "runCommand" not in step:
        raise ValueError(f"step {index} is not a waiting command")
    del step["runCommand"]
    permission = step["requestedInteraction"]["permission"]
    permission["resource"] = {"action": "read_url", "target": url}
    permission["actionDescription"] = "Reading a web page"
    permission.pop("suggestedPersistPattern", None)
    sim._changed(c, index)
