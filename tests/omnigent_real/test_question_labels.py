"""A question's option labelled with another option's id, through the REAL omnigent 0.19.1 server.

omnigent's web form answers a question with the LABEL the human clicked (``{"0": "<label>"}``); its
terminal chat with what the human typed (the option's number, as the form's description lists
them). A hostile model labels option 1 ``2``: a click on it reached agy as option 2 ("Delete the
build"), the id ``2`` read before the label. Now a web-form answer is read as the label it is; an
answer that could be either (a field both forms key alike) is refused, never guessed. Checked on
what agy received (the simulator's ``selectedOptionIds``)."""

from __future__ import annotations

import asyncio

import pytest

from agy_harness.adapters.simulator.hostile import rewrite_question

from .helpers import Omnigent, mirrored

pytestmark = pytest.mark.asyncio(loop_scope="module")
WAIT = 30.0
OPTIONS = [{"id": "1", "text": "2"}, {"id": "2", "text": "Delete the build"}]


async def test_a_web_click_on_an_option_labelled_with_another_options_id_picks_the_clicked_one(
    omni: Omnigent,
) -> None:
    async with mirrored(omni) as (sid, sim, _session):
        await _session.send("ask: which one?")
        first = await omni.wait_pending(sid, timeout=WAIT)
        index = next(i for i, s in enumerate(sim.steps()) if s["status"].endswith("WAITING"))
        rewrite_question(sim, index, OPTIONS)
        card = await omni.wait_pending(sid, not_in=[first["elicitation_id"]], timeout=WAIT)
        labels = [o["label"] for o in card["params"]["ask_user_question"]["questions"][0]["options"]]
        assert labels == ["2", "Delete the build"]
        r = await omni.resolve(sid, card["elicitation_id"], {"action": "accept", "content": {"0": labels[0]}})
        assert r.status_code == 202, r.text
        async with asyncio.timeout(WAIT):
            while sim.steps()[index]["status"].endswith("WAITING"):
                await asyncio.sleep(0.05)
        asked = sim.steps()[index]["askQuestion"]["questions"][0]
        assert asked.get("selectedOptionIds") == ["1"]  # the option clicked (was ["2"])


async def test_look_alike_options_are_flagged_on_the_web_form_and_a_click_reaches_its_option(
    omni: Omnigent,
) -> None:
    """``github.com`` / ``gіthub.com`` (Cyrillic U+0456) and ``Keep`` / ``Keep`` + a zero-width space
    were labelled as agy wrote them (the web form showed two pairs of twins); now each label is the
    rendering rule's, its look-alikes flagged, and a click on one reaches that option."""
    options = [
        {"id": "1", "text": "github.com"},
        {"id": "2", "text": "g\u0456thub.com"},
        {"id": "3", "text": "Keep"},
        {"id": "4", "text": "Keep\u200b"},
    ]
    async with mirrored(omni) as (sid, sim, session):
        await session.send("ask: which one?")
        first = await omni.wait_pending(sid, timeout=WAIT)
        index = next(i for i, s in enumerate(sim.steps()) if s["status"].endswith("WAITING"))
        rewrite_question(sim, index, options)
        card = await omni.wait_pending(sid, not_in=[first["elicitation_id"]], timeout=WAIT)
        labels = [o["label"] for o in card["params"]["ask_user_question"]["questions"][0]["options"]]
        assert labels[0] == "github.com" and labels[2] == "Keep"
        assert labels[1].startswith("g\u0456thub.com") and "U+0456" in labels[1]
        assert labels[3] == "Keep\\u200b" and len(set(labels)) == 4
        r = await omni.resolve(sid, card["elicitation_id"], {"action": "accept", "content": {"0": labels[1]}})
        assert r.status_code == 202, r.text
        async with asyncio.timeout(WAIT):
            while sim.steps()[index]["status"].endswith("WAITING"):
                await asyncio.sleep(0.05)
        assert sim.steps()[index]["askQuestion"]["questions"][0].get("selectedOptionIds") == ["2"]
