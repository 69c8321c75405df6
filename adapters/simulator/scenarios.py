"""The simulator's scripted model: what a turn does is picked from keywords in the user's text.

Keywords (case-insensitive, whole words; several in one turn run in the order they appear, then
one final text reply summarises):

* *(none of the below)* — a plain text reply, streamed in chunks after some streamed thinking.
  ``hello`` gets agy's recorded greeting; ``long`` / ``story`` / ``essay`` a long reply (~60
  chunks: room to interrupt it with CancelCascadeSteps).
* ``run`` / ``execute`` / ``command`` — a planner tool call, then RUN_COMMAND gated by a permission
  (WAITING). The command is the backticked text, else what follows ``run:`` / ``run`` (up to
  `` and ``, ``,`` or `` then ``; ``the command`` is skipped), else ``pwd``.
  Allowed: RUNNING -> DONE with ``runCommand.combinedOutput.full`` (canned output; nothing is ever
  executed). Denied: the step ends ``CORTEX_STEP_STATUS_ERROR`` with the refusal recorded in
  ``completedInteractions`` (``permission: {}``, proto-JSON omits ``allow: false``) and
  ``permissions.permissionGrants``; the final reply says the command was not run.
  ``a && b`` is one planner call with two tool calls and two RUN_COMMAND steps gated one after
  the other (b is asked only once a was allowed and ran; denying a skips b).
* ``autorun`` / ``auto-run`` — RUN_COMMAND with no gate (agy's auto-execution policy): PENDING ->
  RUNNING -> DONE.
* ``ask`` / ``question`` / ``choose`` — ASK_QUESTION (WAITING) with options ids ``"1".."N"``; the
  question is what follows ``ask:`` when it ends with ``?``. With ``multi`` / ``multiple`` /
  ``several`` it is multi-select (``is_multi_select: true`` in ``toolCall.argumentsJson``, 4 options).
  The final reply names the chosen option(s) (or the write-in).
* ``list`` — LIST_DIRECTORY of the workspace (canned entries).
* ``view`` / ``cat`` / ``read file`` — VIEW_FILE of the first path-like word (default README.md).
* ``subagent`` / ``sub-agent`` — a GENERIC ``invoke_subagent`` step, and a CHILD cascade (listed by
  GetAllCascadeTrajectories with ``trajectoryMetadata.parentConversationId``) that runs its own
  short text turn.

Step order of a turn (from the recorded step indices): USER_INPUT, then on a cascade's first turn
CONVERSATION_HISTORY; PLANNER_RESPONSE (tool calls) + tool steps, repeated; a final text
PLANNER_RESPONSE; on the first turn a CHECKPOINT (the intent summary) last.

Gate timeouts (``Simulator(gate_timeout=...)``): the WAITING step goes ERROR and the same gate is
re-asked as a new step at a higher stepIndex, at most ``gate_reasks`` times; then the turn gives up
with a text reply.

Pacing: ``pace`` scales every delay (1.0 = human-like, ~0.1 s per chunk; 0 = no delay at all).

Named scenarios (:data:`SCENARIOS`, for ``agy-harness sim --scenario NAME``) are turns submitted at
start-up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import steps as st

if TYPE_CHECKING:
    from .simulator import Cascade, Simulator

CHUNK_DELAY = 0.1  # seconds per streamed chunk at pace 1.0
STEP_DELAY = 0.15  # between steps
TOOL_DELAY = 0.4  # a tool's run time

SCENARIOS: dict[str, list[str]] = {
    "idle": [],
    "hello": ["Say hello in one short sentence."],
    "gate": ["run: pwd"],
    "question": ["ask: which part should we work on first?"],
    "chained": ["run: git status && git log -n 5 --oneline"],
    "tools": ["list the directory and view README.md"],
    "subagent": ["start a subagent to review the code"],
    "long": ["Write a long story about a lighthouse keeper."],
}

GREETING = "Hello! I am Antigravity, your AI coding assistant, ready to help you with your tasks."

LONG_TEXT = (
    "The lighthouse keeper climbed the spiral stairs every evening at dusk, counting the one hundred "
    "and twelve steps as his father had before him. The lamp was older than the village below, and it "
    "hummed when the glass was warm. Ships passed far out on the grey water, and each of them, he "
    "liked to think, carried someone who was looking for the light. On the longest night of winter a "
    "small boat came close to the rocks, its sail torn and its lantern out. He rang the bell, he swung "
    "the beam low across the reef, and he watched the little boat turn, slowly, towards the harbour. "
    "In the morning a girl knocked at his door with a loaf of bread and a question about the lamp, and "
    "he showed her the stairs, all one hundred and twelve of them, and how the glass must be cleaned."
)

QUESTION_OPTIONS = [
    "(Recommended) Start with the core logic.",
    "Start with the tests.",
    "Start with the documentation.",
]
MULTI_OPTIONS = ["Linting", "Type checking", "Unit tests", "Benchmarks"]

WORKSPACE_ENTRIES: list[dict[str, Any]] = [
    {"name": ".git", "isDir": True},
    {"name": "README.md", "sizeBytes": "1342"},
    {"name": "notes.txt", "sizeBytes": "97"},
    {"name": "pyproject.toml", "sizeBytes": "812"},
    {"name": "src", "isDir": True},
    {"name": "tests", "isDir": True},
]


@dataclass
class Action:
    kind: str  # "run" | "autorun" | "ask" | "list" | "view" | "subagent"
    at: int
    arg: str = ""
    multi: bool = False


@dataclass
class Plan:
    actions: list[Action] = field(default_factory=list)
    long: bool = False


_KEYWORDS: list[tuple[str, str]] = [
    ("autorun", r"\bauto-?run\b"),
    ("run", r"\b(?<!-)(?:run|execute|command)\b"),
    ("ask", r"\b(?:ask|question|choose)\b"),
    ("list", r"\blist\b"),
    ("view", r"\b(?:view|cat)\b|\bread (?:the )?file\b"),
    ("subagent", r"\bsub-?agents?\b"),
]


def extract_command(text: str, at: int) -> tuple[str, int]:
    """The command a ``run`` at ``at`` names, and where its mention ends in ``text``."""
    tick = re.search(r"`([^`]+)`", text[at:])
    if tick:
        return tick.group(1).strip(), at + tick.end()
    rest = text[at:]
    head = re.match(
        r"\s*(?:auto-?run|run|execute|command)\s*:?\s*(?:the\s+)?(?:(?:shell\s+)?command\s+)?", rest, re.I
    )
    skip = head.end() if head else 0
    body = re.split(r"\s+and\s+|,\s|\s+then\s+|\n", rest[skip:], maxsplit=1)[0]
    command = body.strip().rstrip(".").strip()
    return command or "pwd", at + skip + len(body)


def extract_question(text: str, at: int) -> tuple[str, int]:
    m = re.compile(
        r"(?:ask|question|choose)\w*(?:\s+multiple|\s+multi|\s+several)?\s*:?\s*([^?]*\?)", re.I
    ).match(text, at)
    if m and m.group(1).strip() != "?":
        q = m.group(1).strip()
        return q[0].upper() + q[1:], m.end()
    return "Which option should I go with?", at


def extract_path(text: str) -> str:
    for word in re.findall(r"[\w./-]+", text):
        if ("." in word.strip(".") or "/" in word) and not word.endswith("."):
            return str(word)
    return "README.md"


def plan_for(text: str) -> Plan:
    """The actions a user turn asks for (see the module docstring). A command or a question is
    taken whole: keywords inside it (``run`` in a question, ``cat`` in a command) do not count."""
    plan = Plan(long=bool(re.search(r"\b(?:long|story|essay)\b", text, re.I)))
    matches = sorted(
        (m.start(), m.end(), kind) for kind, pattern in _KEYWORDS for m in re.finditer(pattern, text, re.I)
    )
    taken_until = -1
    seen: set[str] = set()
    for start, stop, kind in matches:
        if start < taken_until:
            continue
        family = "run" if kind == "autorun" else kind
        if family in seen:
            continue
        seen.add(family)
        action = Action(kind, start)
        end = stop
        if kind in ("run", "autorun"):
            action.arg, end = extract_command(text, start)
        elif kind == "ask":
            action.arg, end = extract_question(text, start)
            action.multi = bool(re.search(r"\b(?:multi|multiple|several)\b", text, re.I))
        elif kind == "view":
            action.arg = extract_path(text[stop:])
        elif kind == "subagent":
            action.arg = "Code Reviewer"
        taken_until = max(taken_until, end)
        plan.actions.append(action)
    return plan


def canned_output(command: str, workspace: str) -> str:
    """What a command "printed" (the simulator never executes anything)."""
    head = command.split()[0] if command.split() else ""
    if command.strip() == "pwd":
        return workspace + "\n"
    if head == "echo":
        return command.partition(" ")[2].strip("'\"") + "\n"
    if head == "ls":
        return "\n".join(e["name"] for e in WORKSPACE_ENTRIES if not e["name"].startswith(".")) + "\n"
    if command.startswith("git status"):
        return "On branch main\r\nYour branch is up to date with 'origin/main'.\r\n\r\nnothing to commit, working tree clean\r\n"
    if command.startswith("git log"):
        return "5be046c0 (HEAD -> main) Initial commit\r\n"
    return f"(simulated) {command}: ok\n"


def chunks(text: str, n: int) -> list[str]:
    """``text`` split into about ``n`` word-aligned pieces."""
    words = re.findall(r"\S+\s*", text)
    if not words:
        return []
    size = max(1, -(-len(words) // max(1, n)))
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]


class TurnCanceled(Exception):
    """CancelCascadeSteps reached a turn that was not parked on a gate."""


class Engine:
    """Runs one user turn on a cascade: builds the steps and moves them through their statuses."""

    def __init__(
        self, sim: Simulator, cascade: Cascade, text: str, model: str, execution_id: str, first: bool
    ):
        self.sim = sim
        self.c = cascade
        self.text = text
        self.model = model
        self.execution_id = execution_id
        self.first = first
        self.current: dict[str, Any] | None = None  # the step a cancel would end
        self.results: list[str] = []

    # -- plumbing ---------------------------------------------------------------------------
    def where(self, metadata_index: int | None = None) -> st.Where:
        mi = self.c.planner_calls if metadata_index is None else metadata_index
        return st.Where(self.c.id, self.c.trajectory_id, len(self.c.steps), mi, self.execution_id)

    def add(self, step: dict[str, Any]) -> int:
        return self.sim._append(self.c, step)

    def changed(self, index: int) -> None:
        self.sim._changed(self.c, index)

    async def pause(self, seconds: float) -> None:
        await self.sim._pause(self.c, seconds * self.sim.pace)

    def usage(self, thinking: str, response: str) -> dict[str, Any]:
        history = sum(len(str(s)) for s in self.c.steps) // 40
        first_call = self.c.planner_calls == 0
        return st.model_usage(
            self.model,
            input_tokens=900 + history + st.tokens(self.text),
            thinking=st.tokens(thinking),
            response=max(1, st.tokens(response)),
            cache_read=0 if first_call else 12000 + history,
            session_id=self.sim.session_id,
        )

    # -- planner calls ----------------------------------------------------------------------
    async def _think(self, step: dict[str, Any], index: int, thinking: str) -> None:
        """Stream the planner's thinking in a few growing snapshots."""
        grown = ""
        for piece in chunks(thinking, 3):
            await self.pause(CHUNK_DELAY)
            grown += piece
            st.planner_grow(step, thinking=grown, text="")
            self.changed(index)

    async def planner_text(self, text: str, thinking: str, n_chunks: int = 6) -> None:
        step = st.planner(self.where(), self.model)
        index = self.add(step)
        self.current = step
        await self._think(step, index, thinking)
        said = ""
        for piece in chunks(text, n_chunks):
            await self.pause(CHUNK_DELAY)
            said += piece
            st.planner_grow(step, thinking="", text=said)
            self.changed(index)
        st.planner_done(step, self.usage(thinking, text), text=text)
        self.c.planner_calls += 1
        self.current = None
        self.changed(index)

    async def planner_tools(self, calls: list[dict[str, Any]], thinking: str) -> int:
        """A planner call that ends in tool calls; returns its metadataIndex (for the tool steps)."""
        step = st.planner(self.where(), self.model)
        index = self.add(step)
        self.current = step
        await self._think(step, index, thinking)
        mi = self.c.planner_calls
        st.planner_done(step, self.usage(thinking, str(calls)), tool_calls=calls)
        self.c.planner_calls += 1
        self.current = None
        self.changed(index)
        return mi

    # -- the turn ---------------------------------------------------------------------------
    async def run(self) -> None:
        try:
            if self.first:
                self.add(st.conversation_history(self.where(0)))
                await self.pause(STEP_DELAY)
            plan = plan_for(self.text)
            for action in plan.actions:
                await getattr(self, f"do_{action.kind}")(action)
            await self.final(plan)
            if self.first:
                await self.pause(STEP_DELAY)
                self.add(
                    st.checkpoint(
                        self.where(),
                        intent=intent_of(self.text),
                        requests=[self.text],
                        usage=st.model_usage(
                            "MODEL_PLACEHOLDER_M50",
                            input_tokens=35,
                            thinking=0,
                            response=3,
                            cache_read=0,
                            session_id=self.sim.session_id,
                        ),
                    )
                )
        except TurnCanceled:
            step = self.current
            if step is not None:
                index = self.c.steps.index(step)
                if step["status"] == st.GENERATING:
                    st.planner_cancel(step)
                else:
                    st.settle(step, st.CANCELED)
                self.changed(index)

    async def final(self, plan: Plan) -> None:
        if not plan.actions:
            if plan.long:
                text, n = LONG_TEXT, 60
            elif re.search(r"\bhello\b", self.text, re.I):
                text, n = GREETING, 6
            else:
                text, n = f"Here is my answer to “{self.text.strip()[:80]}”: done, nothing else is needed.", 6
            thinking = f"**Responding to the user**\n\nThe user wrote: {self.text.strip()[:60]}. A direct reply will do."
        else:
            text = " ".join(self.results) or "Done."
            n = 5
            thinking = "**Summarising the results**\n\nAll the requested tools finished; I will report what happened."
        await self.pause(STEP_DELAY)
        await self.planner_text(text, thinking, n)

    # -- gates ------------------------------------------------------------------------------
    async def gate(
        self, step: dict[str, Any], request: dict[str, Any], kind: str
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """Ask ``request`` on ``step`` (already appended); re-ask after timeouts. Returns the step that
        got the answer (or the last one) and the answer (``None``: gave up after the re-asks)."""
        reasks = 0
        while True:
            index = self.c.steps.index(step)
            st.ask_gate(step, request)
            self.changed(index)
            answer = await self.sim._await_gate(self.c, index, kind)
            if answer is not None:
                return step, answer
            st.transition(step, st.ERROR)  # timed out (run_command_error.json)
            self.changed(index)
            if reasks >= self.sim.gate_reasks:
                return step, None
            reasks += 1
            await self.pause(STEP_DELAY)
            again = _reask_copy(step, self.where(_metadata_index(step)))
            self.add(again)
            step = again

    # -- tools ------------------------------------------------------------------------------
    def _run_call(self, command: str) -> dict[str, Any]:
        return st.tool_call(
            "run_command",
            {
                "CommandLine": command,
                "Cwd": self.sim.workspace,
                "WaitMsBeforeAsync": 2000,
                "toolAction": f"Running {command.split()[0] if command.split() else 'the'} command",
                "toolSummary": f"Run {command}",
            },
        )

    async def do_run(self, action: Action, *, gated: bool = True) -> None:
        parts = [p.strip() for p in action.arg.split("&&") if p.strip()] or ["pwd"]
        calls = [self._run_call(p) for p in parts]
        mi = await self.planner_tools(
            calls, f"**Running a command**\n\nI will run `{action.arg}` in the workspace."
        )
        for command, call in zip(parts, calls, strict=True):
            await self.pause(STEP_DELAY)
            args = _args(call)
            step = st.run_command(
                self.where(mi),
                self.model,
                call,
                command=command,
                cwd=self.sim.workspace,
                action=args["toolAction"],
                summary=args["toolSummary"],
            )
            index = self.add(step)
            if gated:
                step, answer = await self.gate(
                    step, st.permission_request(command, args["toolAction"]), "permission"
                )
                index = self.c.steps.index(step)
                if answer is None:
                    self.results.append(f"Nobody approved `{command}` in time, so it did not run.")
                    return
                if not _allowed(answer):
                    self.results.append(f"You denied permission to run `{command}`, so I did not run it.")
                    return
            else:
                st.transition(step, st.RUNNING)
                self.changed(index)
            self.current = step
            await self.pause(TOOL_DELAY)
            output = canned_output(command, self.sim.workspace)
            st.run_command_finish(step, output)
            self.current = None
            self.changed(index)
            self.results.append(f"`{command}` ran (exit code 0): {output.strip()[:120]}")

    async def do_autorun(self, action: Action) -> None:
        await self.do_run(action, gated=False)

    async def do_ask(self, action: Action) -> None:
        options = MULTI_OPTIONS if action.multi else QUESTION_OPTIONS
        summary = "Pick options" if action.multi else "Pick an option"
        arguments = {
            "questions": [{"is_multi_select": action.multi, "options": options, "question": action.arg}],
            "toolAction": "Asking the user to choose",
            "toolSummary": summary,
        }
        call = st.tool_call("ask_question", arguments)
        mi = await self.planner_tools(
            [call], "**Asking the user**\n\nI need the user's choice before going on."
        )
        await self.pause(STEP_DELAY)
        step, request = st.ask_question(
            self.where(mi),
            self.model,
            call,
            question=action.arg,
            options=options,
            action="Asking the user to choose",
            summary=summary,
        )
        index = self.add(step)
        await self.pause(CHUNK_DELAY / 4)
        st.transition(step, st.RUNNING)
        self.changed(index)
        step, answer = await self.gate(step, request, "question")
        if answer is None:
            self.results.append("Nobody answered the question in time.")
            return
        index = self.c.steps.index(step)
        self.current = step
        await self.pause(CHUNK_DELAY / 4)
        st.settle(step, st.DONE)
        self.current = None
        self.changed(index)
        picked: list[str] = []
        for q in step["askQuestion"]["questions"]:
            texts = {o["id"]: o["text"] for o in q["options"]}
            picked += [texts.get(i, i) for i in q.get("selectedOptionIds", [])]
            if q.get("writeInResponse"):
                picked.append(q["writeInResponse"])
        self.results.append(f"You chose: {', '.join(picked) or 'nothing'}.")

    async def _simple_tool(self, step: dict[str, Any], finish: Any = None) -> int:
        index = self.add(step)
        self.current = step
        await self.pause(CHUNK_DELAY / 2)
        st.transition(step, st.RUNNING)
        self.changed(index)
        await self.pause(TOOL_DELAY / 2)
        if finish is not None:
            finish(step)
        else:
            st.settle(step, st.DONE)
        self.current = None
        self.changed(index)
        return index

    async def do_list(self, action: Action) -> None:
        path = self.sim.workspace
        call = st.tool_call(
            "list_dir",
            {
                "DirectoryPath": path,
                "toolAction": "Listing workspace contents",
                "toolSummary": "List workspace",
            },
        )
        mi = await self.planner_tools([call], "**Looking around**\n\nListing the workspace first.")
        await self.pause(STEP_DELAY)
        step = st.list_directory(
            self.where(mi),
            self.model,
            call,
            path=path,
            entries=[dict(e) for e in WORKSPACE_ENTRIES],
            action="Listing workspace contents",
            summary="List workspace",
        )
        await self._simple_tool(step)
        self.results.append(f"The workspace has {len(WORKSPACE_ENTRIES)} entries.")

    async def do_view(self, action: Action) -> None:
        path = action.arg if action.arg.startswith("/") else f"{self.sim.workspace}/{action.arg}"
        name = path.rsplit("/", 1)[-1]
        call = st.tool_call(
            "view_file",
            {"AbsolutePath": path, "toolAction": f"Reading {name}", "toolSummary": f"Read {name}"},
        )
        mi = await self.planner_tools([call], f"**Reading a file**\n\nI will read {name}.")
        await self.pause(STEP_DELAY)
        step = st.view_file(
            self.where(mi),
            self.model,
            call,
            path=path,
            num_lines=42,
            num_bytes=1342,
            action=f"Reading {name}",
            summary=f"Read {name}",
        )
        await self._simple_tool(step)
        self.results.append(f"{name} has 42 lines.")

    async def do_subagent(self, action: Action) -> None:
        role = action.arg
        prompt = f"Review the code in {self.sim.workspace} and report problems. Say hello first."
        call = st.tool_call("invoke_subagent", None)
        mi = await self.planner_tools([call], "**Delegating**\n\nA subagent can review this in parallel.")
        await self.pause(STEP_DELAY)
        args = {"Role": role, "Type": "research", "Prompt": prompt}
        step = st.generic(
            self.where(mi),
            self.model,
            call,
            args=args,
            arguments_order=["Role", "Type", "Prompt", "toolAction", "toolSummary"],
            action=f"Starting subagent {role}",
            summary=f"Start subagent {role}",
        )
        child = self.sim._new_cascade(parent=self.c)

        def finish(s: dict[str, Any]) -> None:
            st.generic_finish(
                s,
                f'Started subagent {role} (research): {{"role":"{role}","type":"research",'
                f'"conversationId":"{child.id}"}}',
                {
                    "title": role,
                    "titlePrefix": "Started",
                    "markdown": f"- {role}\n",
                    "icon": "robot_2",
                    "aggregationKey": "subagents",
                },
            )

        await self._simple_tool(step, finish)
        self.sim._submit(child, prompt, self.model)
        self.results.append(f"Subagent {role} is running as conversation {child.id}.")


def intent_of(text: str) -> str:
    words = re.findall(r"[A-Za-z]+", text)[:4]
    return (" ".join(w.capitalize() for w in words) or "User") + " Request"


def _args(call: dict[str, Any]) -> dict[str, Any]:
    import json

    return dict(json.loads(call.get("argumentsJson") or "{}"))


def _allowed(answer: dict[str, Any]) -> bool:
    perm = answer.get("permission")
    return isinstance(perm, dict) and perm.get("allow") is True


def _metadata_index(step: dict[str, Any]) -> int:
    return int(step["metadata"]["sourceTrajectoryStepInfo"].get("metadataIndex", 0))


def _reask_copy(step: dict[str, Any], where: st.Where) -> dict[str, Any]:
    """The re-asked gate: the same tool call as a new step (PENDING), at ``where``'s higher index."""
    import copy

    again = copy.deepcopy(step)
    again["metadata"]["createdAt"] = again["metadata"]["viewableAt"] = st.now()
    again["metadata"]["sourceTrajectoryStepInfo"] = where.info()
    again.pop("requestedInteraction", None)
    again.pop("completedInteractions", None)
    st._set_transitions(again, st.PENDING)
    if again["type"] == st.T + "ASK_QUESTION":
        st.transition(again, st.RUNNING)
    return again
