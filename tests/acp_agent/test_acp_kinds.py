"""Every kind issue 45 made answerable, in the editor: the real ``agy-harness acp`` process driven by the
ACP SDK's client against one simulator for the module. The permission request's title says in words
what agy asks, its body the exact subject whole, its options the gate's allows and its deny in the
kind's words; each option reaches agy (the simulator's record) in the descriptor's shape, a deny never
in a shape that proceeds. An elicitation asking for content offers no accept (ACP's options carry no
content) and says where to give it; agy's refusal reaches the editor with "answer it in agy's
terminal"."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.interactions import proceeds
from agy_harness.adapters.simulator.kind_steps import FIELD_OF
from agy_harness.composition.entrypoints.acp.gates import NO_CONTENT_HERE
from agy_harness.composition.entrypoints.acp.mapping import command_content
from tests.gates.test_kind_answers import CASES

from .helpers import RecordingClient, acp_agent, prompt

pytestmark = pytest.mark.asyncio(loop_scope="module")

ALLOW_LABEL = {"deploy": "Deploy", "plainElicitation": "Accept"}
DENY_LABEL = {"deploy": "Cancel the deploy", "plainElicitation": "Decline", "elicitation": "Decline"}


class Editor:
    """The module's simulator, editor (SDK client) and one ACP session; ``pick`` is the option the
    editor's human picks next (None: the request is cancelled)."""

    def __init__(self, agy: Simulator, client: RecordingClient, conn: Any, sid: str) -> None:
        self.agy, self.client, self.conn, self.sid = agy, client, conn, sid
        self.pick: str | None = None

    async def choose(self, _tool_call: Any, _options: list[Any]) -> str | None:
        return self.pick

    async def turn(self, text: str, pick: str | None) -> tuple[Any, list[Any], dict[str, Any]]:
        """One turn asking one gate: (the tool call, the options) asked and what agy received."""
        self.pick, asked, before = pick, len(self.client.permission_requests), len(self.agy.received)
        assert (await prompt(self.conn, self.sid, text)).stop_reason == "end_turn"
        [(_, tool_call, options)] = self.client.permission_requests[asked:]
        [(_, sent)] = self.agy.received[before:]
        return tool_call, options, {k: v for k, v in sent.items() if k not in ("trajectoryId", "stepIndex")}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editor() -> AsyncIterator[Editor]:
    async with Simulator(pace=0) as agy:
        client = RecordingClient()
        async with acp_agent(client, where=("--port", str(agy.port))) as conn:
            sid = (await conn.new_session(cwd=agy.workspace, mcp_servers=[])).session_id
            on = Editor(agy, client, conn, sid)
            client.permission = on.choose
            yield on


def texts(tool_call: Any) -> list[str]:
    return [c.content.text for c in tool_call.content or [] if c.type == "content"]


@pytest.mark.parametrize("allow", [True, False], ids=["allow", "deny"])
@pytest.mark.parametrize("field", list(CASES))
async def test_each_kind_is_asked_in_words_and_each_option_reaches_agy_in_its_shape(
    editor: Editor, field: str, allow: bool
) -> None:
    subject, words, allowed, denied = CASES[field]
    asked = FIELD_OF.get(field, field)
    tool_call, options, sent = await editor.turn(
        f"kind: {field} {subject}".strip(), "allow" if allow else "deny"
    )
    assert tool_call.title == words  # what agy asks, in words (no raw field name)
    target = tool_call.raw_input.get("target", "")
    if target:  # the exact subject, whole, by the one display rule
        assert command_content(target)[0].content.text in texts(tool_call)
    expected = [("allow", "allow_once", ALLOW_LABEL.get(field, "Allow once"))]
    if asked == "filePermission":
        expected.append(("allow:conversation", "allow_always", f"Allow for this conversation: '{subject}'"))
    expected.append(("deny", "reject_once", DENY_LABEL.get(field, "Deny")))
    assert [(o.option_id, o.kind, o.name) for o in options] == expected
    assert sent == {asked: allowed if allow else denied}
    assert proceeds(asked, sent) is allow  # agy goes on exactly when allowed


async def test_a_file_grant_for_the_conversation_reaches_agy_with_its_scope(editor: Editor) -> None:
    _call, _options, sent = await editor.turn("kind: nestedFilePermission file:///srv", "allow:conversation")
    assert sent == {
        "filePermission": {
            "allow": True,
            "scope": "PERMISSION_SCOPE_CONVERSATION",
            "absolutePathUri": "file:///srv",
        }
    }


async def test_an_mcp_tools_arguments_are_shown_whole(editor: Editor) -> None:
    tool_call, _options, sent = await editor.turn("kind: mcp create_issue", "deny")
    assert tool_call.title == "agy asks to use the MCP tool github/create_issue"
    [arguments] = [t for t in texts(tool_call) if t.startswith("{")]
    assert arguments == tool_call.raw_input["description"]  # the arguments JSON, whole
    assert sent == {"mcp": {"confirm": False}}


async def test_an_elicitation_asking_for_content_is_only_declined_here_and_says_where_to_accept(
    editor: Editor,
) -> None:
    tool_call, options, sent = await editor.turn("kind: elicitation Which account?", "deny")
    assert tool_call.title.startswith(
        "the MCP server github asks through agy: Which account? (it asks for: account (string, required))"
    )
    assert "cannot be allowed from here" in tool_call.title
    assert [(o.option_id, o.kind, o.name) for o in options] == [("deny", "reject_once", "Decline")]
    assert NO_CONTENT_HERE in texts(tool_call)
    assert sent == {"elicitation": {"action": "decline"}}
    _call, _options, sent = await editor.turn("kind: elicitation Which account?", None)  # dismissed
    assert sent == {"elicitation": {"action": "cancel"}}


async def test_an_approval_that_cannot_be_allowed_offers_only_its_deny(editor: Editor) -> None:
    tool_call, options, sent = await editor.turn("kind: approvalInteraction", "allow")  # (not offered)
    assert "cannot be allowed from here (agy does not say what it would act on)" in tool_call.title
    assert [o.option_id for o in options] == ["deny"]
    assert sent == {"approvalInteraction": {"confirm": False}}  # an option not offered denies


async def test_agys_refusal_reaches_the_editor_with_where_to_answer(editor: Editor) -> None:
    agy, client, sid = editor.agy, editor.client, editor.sid
    agy.faults.refuse_kinds = {"deploy"}  # an agy whose build takes no deploy answer over RPC
    try:
        editor.pick = "allow"
        said = len(client.text(sid))
        turn = asyncio.create_task(prompt(editor.conn, sid, "kind: deploy my-site"))
        await client.wait_for(lambda: "agy refused the answer" in client.text(sid)[said:])
        text = client.text(sid)[said:]
        assert 'agy refused the answer to: agy asks to deploy {"name": "my-site"}' in text
        assert text.count("answer it in agy's terminal") == 1
        call_id = [u for u in client.of(sid, "tool_call") if u.title.startswith("agy asks to deploy")][
            -1
        ].tool_call_id
        await client.wait_for(
            lambda: any(
                u.status == "failed" for u in client.of(sid, "tool_call_update") if u.tool_call_id == call_id
            )
        )
    finally:
        agy.faults.refuse_kinds = set()
    await agy.resolve_in_terminal(sid, kind="permission")  # the human answers in agy's terminal
    assert (await turn).stop_reason == "end_turn"
