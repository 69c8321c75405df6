"""What each tool of a scripted turn does to the conversation (the simulator's :class:`~.engine.Engine`
runs them: ``do_<kind>`` for each action of the turn's plan): the steps it adds, the gates it asks,
what it "runs"."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import steps as st
from . import tool_steps as ts
from .interactions import allowed, call_args, deny_instruction, proceeds
from .kind_steps import FIELD_OF, KIND_TOOLS, kind_body, kind_request
from .scenarios import (
    MULTI_OPTIONS,
    QUESTION_OPTIONS,
    WORKSPACE_ENTRIES,
    Action,
    canned_output,
    sentence,
    task_list,
)
from .state import Cascade, EngineHost

CHUNK_DELAY = 0.1  # seconds per streamed chunk at pace 1.0
STEP_DELAY = 0.15  # between steps
TOOL_DELAY = 0.4  # a tool's run time

if TYPE_CHECKING:
    from collections.abc import Coroutine


class ToolActions:
    """The tools of :class:`~.engine.Engine` (its base): they build steps with the engine's plumbing."""

    sim: EngineHost
    c: Cascade
    model: str
    current: dict[str, Any] | None
    results: list[str]

    if TYPE_CHECKING:

        def where(self, metadata_index: int | None = None) -> st.Where: ...
        def add(self, step: dict[str, Any]) -> int: ...
        def changed(self, index: int) -> None: ...
        def pause(self, seconds: float) -> Coroutine[Any, Any, None]: ...
        def planner_tools(self, calls: list[dict[str, Any]], thinking: str) -> Coroutine[Any, Any, int]: ...
        def gate(
            self, step: dict[str, Any], request: dict[str, Any] | None, kind: str
        ) -> Coroutine[Any, Any, tuple[dict[str, Any], dict[str, Any] | None]]: ...

    # -- tools ------------------------------------------------------------------------------
    async def do_run(self, action: Action, *, gated: bool = True) -> None:
        parts = [p.strip() for p in action.arg.split("&&") if p.strip()] or ["pwd"]
        cwd = action.cwd or self.sim.workspace
        calls = [ts.run_call(p, cwd) for p in parts]
        mi = await self.planner_tools(
            calls, f"**Running a command**\n\nI will run `{action.arg}` in {action.cwd or 'the workspace'}."
        )
        for command, call in zip(parts, calls, strict=True):
            await self.pause(STEP_DELAY)
            args = call_args(call)
            step = ts.run_command(
                self.where(mi),
                self.model,
                call,
                command=command,
                cwd=cwd,
                action=args["toolAction"],
                summary=args["toolSummary"],
            )
            index = self.add(step)
            covered = self.sim.grants.covers(self.c.id, "command", command)
            if gated and covered is not None and not self.sim.faults.forget_grants:
                gated = False  # a lasting grant agy keeps: the same request runs without asking
            if gated:
                step, answer = await self.gate(
                    step, ts.permission_request(command, args["toolAction"]), "permission"
                )
                index = self.c.steps.index(step)
                if answer is None:
                    self.results.append(f"Nobody approved `{command}` in time, so it did not run.")
                    return
                if not allowed(answer):
                    why = deny_instruction(answer)
                    self.results.append(
                        f"You denied permission to run `{command}`, so I did not run it"
                        + (f"; you said: {why}" if why else ".")
                    )
                    return
            else:
                st.transition(step, st.RUNNING)
                self.changed(index)
            self.hook_rewrites(step)
            # what runs is what the step holds now (a step can change while it waits)
            command, ran_in = step["runCommand"]["commandLine"], step["runCommand"]["cwd"]
            self.sim.executed.append((command, ran_in))
            self.current = step
            await self.pause(TOOL_DELAY)
            output = canned_output(command, ran_in)
            ts.run_command_finish(step, output)
            self.current = None
            self.changed(index)
            self.results.append(f"`{command}` ran (exit code 0): {output.strip()[:120]}")

    def hook_rewrites(self, step: dict[str, Any]) -> None:
        """``Faults.rewrite_command_once``: a hook rewrites the allowed command before it runs."""
        rewrite = self.sim.faults.rewrite_command_once
        if rewrite:
            self.sim.faults.rewrite_command_once = ""
            self.sim.faults.fired.append("rewrite_command")
            step["runCommand"]["commandLine"] = rewrite

    async def do_kind(self, action: Action) -> None:
        """``kind: <field> [subject]``: a step that waits for agy's interaction ``field`` (see
        :mod:`.kind_steps`); answered, it runs (a command: what the step then holds) or settles."""
        field, _, subject = action.arg.partition(" ")
        subject = subject.strip()
        if field not in KIND_TOOLS:
            self.results.append(f"I know no gate kind {field!r}.")
            return
        tool, _key, default = KIND_TOOLS[field]
        words = tool.replace("_", " ")
        call = st.tool_call(
            tool, {"toolAction": "Asking first", "toolSummary": f"Ask before {tool.replace('_', ' ')}"}
        )
        mi = await self.planner_tools([call], "**Asking first**\n\nThis needs the user's answer.")
        await self.pause(STEP_DELAY)
        asked = FIELD_OF.get(field, field)
        request: dict[str, Any] | None = {asked: kind_request(field, subject)}
        settings = ("artifactReviewPolicy", "allowNonWorkspaceAccess")
        kind = "other" if field in settings else "permission"
        if field == "runCommand":
            command = subject or default
            step = ts.run_command(self.where(mi), self.model, call, command=command, cwd=self.sim.workspace,
                                  action=f"Running {command}", summary=f"Run {command}")  # fmt: skip
        else:
            step = ts.generic(self.where(mi), self.model, call, args={"subject": subject or default},
                              arguments_order=["subject"], action="Asking first", summary=f"Ask before {tool.replace('_', ' ')}")  # fmt: skip
            typed = kind_body(field, subject)
            if typed is not None:  # the descriptors' typed body: what agy would do
                step_type, key, body = typed
                del step["generic"]
                step["type"] = st.T + step_type
                step[key] = body
        if field == "nestedFilePermission":  # the request sits in the tool step's own body
            del step["generic"]
            step["type"] = st.T + "LIST_DIRECTORY"
            step["listDirectory"] = {"directoryPathUri": subject or default,
                                     "filePermissionRequest": kind_request(field, subject)}  # fmt: skip
            request = None
        self.add(step)
        step, answer = await self.gate(step, request, kind)
        if answer is None:
            self.results.append(f"Nobody answered the {words} gate in time.")
            return
        index = self.c.steps.index(step)
        if not proceeds(asked, answer):
            self.results.append(f"You refused the {words} request.")
            return
        if field == "runCommand":
            self.hook_rewrites(step)
            command, ran_in = step["runCommand"]["commandLine"], step["runCommand"]["cwd"]
            self.sim.executed.append((command, ran_in))
            ts.run_command_finish(step, canned_output(command, ran_in))
        else:
            st.settle(step, st.DONE)
        self.changed(index)
        self.results.append(f"The {words} request was allowed.")

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
        step, request = ts.ask_question(
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
        if not answer.get("askQuestion"):  # {"askQuestion": {}}: the human skipped it
            self.results.append("You skipped the question, so I went on without an answer.")
            return
        picked: list[str] = []
        for q in step["askQuestion"]["questions"]:
            texts = {o.get("id", ""): o.get("text", "") for o in q["options"]}
            picked += [texts.get(i, i) for i in q.get("selectedOptionIds", [])]
            if q.get("writeInResponse"):
                picked.append(q["writeInResponse"])
        self.results.append(sentence(f"You chose: {', '.join(picked) or 'nothing'}"))

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
        step = ts.list_directory(
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
        step = ts.view_file(
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

    async def do_write(self, action: Action) -> None:
        path = action.arg if action.arg.startswith("/") else f"{self.sim.workspace}/{action.arg}"
        name = path.rsplit("/", 1)[-1]
        call, content = ts.write_call(path)
        mi = await self.planner_tools([call], f"**Writing a file**\n\nI will write {name}.")
        await self.pause(STEP_DELAY)
        where = self.where(mi)
        step, request = ts.write_to_file(where, self.model, call, path=path, content=content)
        self.add(step)
        step, answer = await self.gate(step, request, "other")
        if answer is None:
            self.results.append(f"Nobody reviewed the write to {name} in time.")
            return
        accepted = any(isinstance(v, dict) and v.get("accepted") is True for v in answer.values())
        st.settle(step, st.DONE if accepted else st.ERROR)
        self.changed(self.c.steps.index(step))
        self.results.append(f"I wrote {name}." if accepted else f"You rejected the write to {name}.")

    async def do_plan(self, action: Action) -> None:
        brain = self.sim.workspace.rsplit("/", 1)[0] + "/brain"
        path = f"{brain}/{self.c.id}/task.md"
        for done in (0, 1):
            content = task_list(done)
            call = st.tool_call(
                "write_to_file",
                {"TargetFile": path, "CodeContent": content,
                 "toolAction": "Updating the task list", "toolSummary": "Task list"},
            )  # fmt: skip
            mi = await self.planner_tools([call], "**Planning**\n\nKeeping the task list up to date.")
            await self.pause(STEP_DELAY)
            step, _review = ts.write_to_file(self.where(mi), self.model, call, path=path, content=content)
            await self._simple_tool(step)
        self.results.append("The task list is in task.md.")

    async def do_subagent(self, action: Action) -> None:
        role = action.arg
        prompt = f"Review the code in {self.sim.workspace} and report problems. Say hello first."
        call = st.tool_call("invoke_subagent", None)
        mi = await self.planner_tools([call], "**Delegating**\n\nA subagent can review this in parallel.")
        await self.pause(STEP_DELAY)
        if action.typed:
            await self._typed_subagent(mi, call, role, prompt)
            return
        args = {"Role": role, "Type": "research", "Prompt": prompt}
        step = ts.generic(
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
            ts.generic_finish(
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

    async def _typed_subagent(self, mi: int, call: dict[str, Any], role: str, prompt: str) -> None:
        """The typed INVOKE_SUBAGENT step (see :func:`.tool_steps.invoke_subagent`): it names the
        child in its results as soon as the child exists, still running, then settles."""
        step = ts.invoke_subagent(self.where(mi), self.model, call, role=role, type_name="research")
        index = self.add(step)
        self.current = step
        await self.pause(CHUNK_DELAY / 2)
        st.transition(step, st.RUNNING)
        child = self.sim._new_cascade(parent=self.c)
        step["invokeSubagent"]["results"] = [{"conversationId": child.id}]
        self.changed(index)
        self.sim._submit(child, prompt, self.model)
        await self.pause(TOOL_DELAY / 2)
        st.settle(step, st.DONE)
        self.current = None
        self.changed(index)
        self.results.append(f"Subagent {role} is running as conversation {child.id}.")
