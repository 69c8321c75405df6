"""A question's option labelled with another option's id, through the REAL omnigent 0.19.1 server.

omnigent's web form answers a question with the LABEL the human clicked (``{"0": "<label>"}``); its
terminal chat with what the human typed (the option's number, as the form's description lists
them). A hostile model labels option 1 ``2``: a click on it reached agy as option 2 ("Delete the
build"), the id ``2`` read before the label. Now a web-form answer is read as the label it is; an
answer that could be either (a field both forms key alike) is refused, never guessed. Checked on
what agy received (the simulator's ``selectedOptionIds``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.hostile import rewrite_question
from agy_harness.composition.root.session import Session

from .helpers import Omnigent, mirrored

pytestmark = pytest.mark.asyncio(loop_scope="module")
WAIT = 30.0
OPTIONS = [{"id": "1", "text": "2"}, {"id": "2", "text": "Delete the build"}]


async def rewritten(
    omni: Omnigent, sid: str, sim: Simulator, session: Session, options: list[dict[str, str]]
) -> tuple[int, dict[str, Any], list[str]]:
    """agy asks a question (its step ``index``), rewritten with ``options`` as a hostile model would:
    ``(index, the web form's new card, its options' labels)``."""
    await session.send("ask: which one?")
    first = await omni.wait_pending(sid, timeout=WAIT)
    index = next(i for i, s in enumerate(sim.steps()) if s["status"].endswith("WAITING"))
    rewrite_question(sim, index, options)
    card = await omni.wait_pending(sid, not_in=[first["elicitation_id"]], timeout=WAIT)
    return index, card, [o["label"] for o in card["params"]["ask_user_question"]["questions"][0]["options"]]


async def click(
    omni: Omnigent, sid: str, sim: Simulator, index: int, card: dict[str, Any], label: str
) -> Any:
    """The web form's click on ``label`` (taken: 202); once agy's step ``index`` is answered, the
    question as agy received it."""
    r = await omni.resolve(sid, card["elicitation_id"], {"action": "accept", "content": {"0": label}})
    assert r.status_code == 202, r.text
    async with asyncio.timeout(WAIT):
        while sim.steps()[index]["status"].endswith("WAITING"):
            await asyncio.sleep(0.05)
    return sim.steps()[index]["askQuestion"]["questions"][0]


async def test_a_web_click_on_an_option_labelled_with_another_options_id_picks_the_clicked_one(
    omni: Omnigent,
) -> None:
    async with mirrored(omni) as (sid, sim, session):
        index, card, labels = await rewritten(omni, sid, sim, session, OPTIONS)
        assert labels == ["2", "Delete the build"]
        asked = await click(omni, sid, sim, index, card, labels[0])
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
        index, card, labels = await rewritten(omni, sid, sim, session, options)
        assert labels[0] == "github.com" and labels[2] == "Keep"
        assert labels[1].startswith("g\u0456thub.com") and "U+0456" in labels[1]
        assert labels[3] == "Keep\\u200b" and len(set(labels)) == 4
        asked = await click(omni, sid, sim, index, card, labels[1])
        assert asked.get("selectedOptionIds") == ["2"]
