"""Issue #35 case 1: past the 4 MiB string cut, two different requests used to have one digest and
byte-identical cards (``echo <4 MiB>; ls`` and ``echo <4 MiB>; rm -rf work``), so an answer -- or
omnigent's "always" under the digest's policy name -- given for one approved the other.

Now the cut mark carries the removed part's size and the whole string's size and hash: the two
requests have different digests and different cards (every surface's card says the request was cut,
with the hash), and neither can be allowed from anywhere (nowhere can its whole text be shown); a
denial goes through to agy. The two requests make the conversation outgrow the 64 MiB answer cap, so
the poll re-reads it with strings cut at 1 MiB: the digest binds a cut string by the whole string, not
the part kept, so the gate keeps its digest and the denial still reaches it (it was refused as
undeliverable before), and the delivery re-reads only the gate's step.
Through the public API on the simulator (``sim.executed`` is what agy ran)."""

from __future__ import annotations

import pytest

from agy_harness.adapters.rpc.bounded import MAX_STRING
from agy_harness.adapters.simulator import Simulator
from agy_harness.core.answers import AnswerError
from agy_harness.core.display import command_view
from agy_harness.ports.events import GateOpened
from tests.binding.helpers import waiting, watched

BIG = "x" * (MAX_STRING + 1000)
SLOW = 300.0  # s: a safety net, not a deadline (tens of megabytes through the in-process simulator)


async def _gate(w: object, command: str) -> GateOpened:
    from tests.binding.helpers import Watched

    assert isinstance(w, Watched)
    mark = len(w.events)
    await w.session.send(f"run `{command}`")
    return await w.gate(after=mark, timeout=SLOW)


async def test_requests_that_differ_past_the_cut_differ_and_can_only_be_denied(sim: Simulator) -> None:
    async with watched(sim) as w:
        first = await _gate(w, f"echo {BIG}; ls")
        assert first.permission is not None
        shown = command_view(first.permission.command_line)
        assert any("cut: " in line and "can be denied, not allowed" in line for line in shown.lines)
        with pytest.raises(AnswerError, match="was cut"):
            await w.session.answer(first.gate_id, True)
        with pytest.raises(AnswerError, match="was cut"):
            await w.session.answer(first.gate_id, "yes")
        assert waiting(sim, first.step_index)  # nothing was sent: agy still waits
        await w.session.answer(first.gate_id, False)  # a denial goes through
        await w.idle(after=w.events.index(first), timeout=SLOW)

        second = await _gate(w, f"echo {BIG}; rm -rf work")
        assert second.permission is not None
        assert second.digest != first.digest  # an answer for one never reaches the other
        other = command_view(second.permission.command_line)
        assert other.lines != shown.lines and other.hash != shown.hash
        assert other.title() != shown.title()
        with pytest.raises(AnswerError, match="was cut"):
            await w.session.answer(second.gate_id, True)
        await w.session.answer(second.gate_id, "no: too long to review")
        await w.idle(after=w.events.index(second), timeout=SLOW)
    assert sim.executed == []  # neither ran
