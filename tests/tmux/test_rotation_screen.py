"""Issue #20, case 8: with agy's terminal known (its tmux pane), a conversation another client starts
on the same agy is not followed as our /clear (what was typed in it is not on agy's screen); the
terminal's own /clear still is. Without a pane the README's rotation rule is what there is."""

from __future__ import annotations

import asyncio

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.composition.root.session import open_session
from agy_harness.ports.events import Notice, Rotation
from tests.fakes import RecordingSink
from tests.integration.helpers import FAST

from .conftest import TuiPane, is_idle


async def test_another_clients_conversation_is_not_followed_but_our_clear_is(tui: TuiPane) -> None:
    sink = RecordingSink()
    async with open_session(
        port=tui.port, cascade_id=tui.cascade_id, tmux_target=tui.pane_id, tmux_server=tui.server,
        sink=sink, options=FAST,
    ) as session:  # fmt: skip
        bound = session.cascade_id
        async with RpcClient(tui.base_url) as client:  # a client outside the library, same agy
            other = (await client.call("StartCascade", {}))["cascadeId"]
            await client.call(
                "SendUserCascadeMessage", {"cascadeId": other, "items": [{"text": "Say hi from elsewhere."}]}
            )
        await sink.wait_for(lambda: any(isinstance(e, Notice) and other in e.text for e in sink.events), 15)
        await asyncio.sleep(0.5)  # more directory checks
        assert session.cascade_id == bound  # it used to rotate onto `other`

        tui.send_literal("/clear")
        tui.send_key("Enter")
        await tui.wait_screen(is_idle)
        tui.send_literal("Say hello again.")
        tui.send_key("Enter")
        await sink.wait_for(lambda: any(isinstance(e, Rotation) for e in sink.events), 15)
        [rotation] = [e for e in sink.events if isinstance(e, Rotation)]
        assert rotation.old_cascade_id == bound and rotation.new_cascade_id not in (bound, other)
        assert session.cascade_id == rotation.new_cascade_id
