"""The omnigent sink's cards (pure): the wire mapping, the params omnigent's web UI and terminal chat
render (one policy name per request, agy's text by the rendering rule), and reading the web UI's
answers fail-closed. Delivery under faults and the hook are in test_omnigent.py; what the real
omnigent 0.19.1 stores and renders is tested in tests/omnigent_real/."""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest

from agy_harness.adapters.sinks.omnigent import (
    OmnigentProtocolError,
    answer_from_result,
    elicitation_id,
    gate_params,
    source_id,
    to_wire,
)
from agy_harness.core.answers import AnswerError
from agy_harness.core.display import request_hash
from agy_harness.ports.events import (
    Event,
    GateOpened,
    Question,
    QuestionOption,
    StatusChanged,
    Usage,
)
from agy_harness.ports.protocols import GateAnswer

from .omnigent_rules import real_rules
from .samples import PERMISSION_GATE, QUESTION_GATE, SAMPLES, C

# -- the mapping (pure) ------------------------------------------------------------------------------


def test_samples_cover_every_event_type() -> None:
    union = typing.get_args(typing.get_args(Event)[0])
    assert {e.type for e in SAMPLES} == {t.model_fields["type"].default for t in union}


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: e.type)
def test_every_body_is_one_omnigent_accepts(event: Event) -> None:
    body = to_wire(event)
    if event.type == "gate_opened":
        assert body is None
        return
    assert body is not None and real_rules(body) is None, body
    if body["type"] == "external_conversation_item":
        assert body["data"]["source_id"] == event.id  # omnigent dedups a re-delivery on it


def test_items_carry_omnigent_item_data() -> None:
    by_type = {e.type: to_wire(e) for e in SAMPLES}
    assert by_type["user_message"]["data"]["item_data"] == {  # type: ignore[index]
        "role": "user",
        "content": [{"type": "input_text", "text": "hello there"}],
    }
    assistant = by_type["assistant_message"]["data"]  # type: ignore[index]
    assert assistant["item_data"]["content"] == [{"type": "output_text", "text": "Hello!"}]
    assert assistant["message_id"] == "t1/2"  # retires the live preview its deltas built
    call = by_type["tool_call"]["data"]["item_data"]  # type: ignore[index]
    assert json.loads(call["arguments"]) == {"CommandLine": "ls -la", "Cwd": "/tmp/é"}
    assert by_type["rotation"]["data"]["item_data"]["code"] == "agy_conversation_cleared"  # type: ignore[index]


def test_usage_has_omnigents_semantics_and_display_names() -> None:
    usage = next(e for e in SAMPLES if isinstance(e, Usage))
    body = to_wire(usage, model_names={"MODEL_X": "Gemini X"}.get)
    assert body is not None
    assert body["data"] == {
        "cumulative_input_tokens": 127,  # agy's 120 + 7 cache reads: omnigent's input includes them
        "cumulative_output_tokens": 30,
        "cumulative_cache_read_input_tokens": 7,
        "model": "Gemini X",
    }


def test_a_failure_carries_its_text_and_long_ids_are_hashed() -> None:
    failed = to_wire(
        StatusChanged(id="t/9/status/failed", cascade_id=C, status="failed", reason="quota exceeded")
    )
    assert failed == {
        "type": "external_session_status",
        "data": {"status": "failed", "output": "quota exceeded"},
    }
    bare = to_wire(StatusChanged(id="t/9/status/failed", cascade_id=C, status="failed"))
    assert bare is not None and bare["data"]["output"]
    long_id = "t/" + "x" * 400
    assert len(source_id(long_id)) <= 256 and source_id(long_id) == source_id(long_id) != source_id(
        long_id + "y"
    )


def test_elicitation_ids_are_deterministic_and_url_safe() -> None:
    eid = elicitation_id("9d3f/12")
    assert eid == elicitation_id("9d3f/12") != elicitation_id("9d3f/13")
    assert "/" not in eid and eid.startswith("elicit_agy_")


def test_gate_params_render_the_web_uis_cards() -> None:
    q = gate_params(QUESTION_GATE)
    assert q["ask_user_question"] == {
        "questions": [
            {
                "id": "0",
                "question": "Which part first?",
                "options": [{"label": "Backend"}, {"label": "Frontend"}],
                "multiSelect": False,
            },
            {
                "id": "1",
                "question": "Which tests?",
                "options": [{"label": "Unit"}, {"label": "Integration"}],
                "multiSelect": True,
            },
        ]
    }
    p = gate_params(PERMISSION_GATE)
    h = request_hash("git status")
    # the command field carries the command alone; its hash goes beside it (request_hash, the description)
    assert (p["phase"], p["command"], p["cwd"]) == ("agy_permission", "git status", "/repo")
    assert p["request_hash"] == h and p["action_description"] == f"⋯ {h} ⋯"
    assert p["message"] == "agy asks to run `git status` in /repo"  # core.kinds.describe
    assert gate_params(PERMISSION_GATE) == p  # deterministic: omnigent matches re-POSTs by them


def test_each_request_goes_out_under_its_own_policy_name() -> None:
    """omnigent's chat remembers "approve always" per (policy_name, phase): one name per request."""
    first = PERMISSION_GATE.model_copy(update={"digest": "a" * 32})
    other = PERMISSION_GATE.model_copy(update={"gate_id": "c/t1/11/x", "digest": "f" * 32})
    names = {gate_params(g)["policy_name"] for g in (first, other, QUESTION_GATE)}
    assert len(names) == 3
    assert gate_params(first)["policy_name"] == "agy_native_permission." + "a" * 16
    re_ask = first.model_copy(update={"gate_id": "c/t1/12/y", "step_index": 12})  # the same request
    assert gate_params(re_ask)["policy_name"] == gate_params(first)["policy_name"]


def test_the_card_shows_every_character_and_the_whole_command() -> None:
    hidden = PERMISSION_GATE.permission.model_copy(  # type: ignore[union-attr]
        update={"command_line": "rm -rf ~/work\u200d #" + "\n" * 30 + "ls [red]x[/red]\U000e0041"}
    )
    p = gate_params(PERMISSION_GATE.model_copy(update={"permission": hidden}))
    h = request_hash(hidden.command_line)
    assert p["command"] == "rm -rf ~/work\\u200d #\n⋯ 29 blank lines ⋯\nls [red]x[/red]\\U000e0041"
    assert p["request_hash"] == h and p["action_description"].endswith(f" — ⋯ {h} ⋯")
    # markup-like text: the message (both media) points below; the web's field carries the exact text,
    # the chat's (printed as rich markup) the escaped text
    assert p["message"] == "agy asks for permission: the request is shown below"
    assert "rm -rf ~/work\\u200d #⏎⋯ 29 blank lines ⋯⏎ls [red]x[/red]\\U000e0041" in p["action_description"]
    assert "ls \\[red]x\\[/red]\\U000e0041" in p["content_preview"]
    assert "[red]" not in p["content_preview"].replace("\\[red]", "")


def test_omnigents_own_agy_buttons_are_never_asked_for_nor_accepted() -> None:
    """omnigent's "Allow commands starting with <pattern> for this session" acted as allow once: the
    card never asks for it (no ``always_allow_pattern``), and its ``_meta.persist`` is refused."""
    offered = PERMISSION_GATE.permission.model_copy(  # type: ignore[union-attr]
        update={
            "persist_suggestion_type": "PERSIST_SUGGESTION_TYPE_SUGGESTED",
            "suggested_persist_pattern": "git",
        }
    )
    gate = PERMISSION_GATE.model_copy(update={"permission": offered})
    assert "always_allow_pattern" not in gate_params(gate)
    for persist in ("session", "always", "forever"):
        with pytest.raises(AnswerError, match=r"_meta\.persist"):
            answer_from_result(gate, {"action": "accept", "_meta": {"persist": persist}})
    assert answer_from_result(gate, {"action": "decline", "_meta": {"persist": "always"}}).allow is False
    denied = answer_from_result(gate, {"action": "accept", "content": {"answer": "no: use git stash"}})
    assert (denied.allow, denied.deny_reason) == (False, "use git stash")


def test_the_card_offers_its_choices_as_buttons_and_reads_each_back() -> None:
    """The web card's buttons are the enum of its one ``answer`` field; the chat's ``y`` fills in the
    first, which is "Allow once"."""
    p = gate_params(PERMISSION_GATE)
    assert p["requestedSchema"]["properties"]["answer"]["enum"] == ["Allow once", "Deny"]
    assert list(p["requestedSchema"]["properties"]) == ["answer"]
    once = answer_from_result(PERMISSION_GATE, {"action": "accept", "content": {"answer": "Allow once"}})
    assert once.allow is True and once.persist is None
    deny = answer_from_result(PERMISSION_GATE, {"action": "accept", "content": {"answer": "Deny"}})
    assert deny.allow is False


def test_markup_like_text_is_exact_on_the_web_and_escaped_for_the_chat() -> None:
    """issue 40: ``pip install -e '.[test]'`` read ``.\\[test]`` on omnigent's web card."""
    command = PERMISSION_GATE.permission.model_copy(  # type: ignore[union-attr]
        update={"command_line": "pip install -e '.[test]'", "description": "Installing [dev] deps"}
    )
    p = gate_params(PERMISSION_GATE.model_copy(update={"permission": command}))
    web = [p["message"], p["action_description"]]  # what the web card shows as text
    assert "pip install -e '.[test]' (in /repo)" in p["action_description"]
    assert "agy: Installing [dev] deps" in p["action_description"]
    assert not any("\\" in text for text in web)
    h = request_hash(command.command_line)
    assert p["content_preview"].startswith(
        f"pip install -e '.\\[test]' (in /repo) · ⋯ {h} ⋯ · y = Allow once"
    )
    plain = gate_params(PERMISSION_GATE)  # no markup-like text: the message carries it to both
    assert plain["message"] == "agy asks to run `git status` in /repo"
    # the message carries it to both; the hash is kept on the card, beside it (never inside the command)
    assert plain["action_description"] == f"⋯ {request_hash('git status')} ⋯"
    assert plain["content_preview"].startswith(f"⋯ {request_hash('git status')} ⋯ · y = Allow once")


def test_a_look_alike_working_directory_is_flagged_beside_the_command() -> None:
    """issue 35 point 2: a cwd with a Cyrillic "і" (U+0456) and the ASCII one render two different
    cards, the note naming U+0456 on the web card's description and the chat's preview; the command
    field stays the command alone."""
    params = []
    for cwd in ("/srv/wiki", "/srv/w\u0456ki"):
        where = PERMISSION_GATE.permission.model_copy(update={"cwd": cwd})  # type: ignore[union-attr]
        params.append(gate_params(PERMISSION_GATE.model_copy(update={"permission": where})))
    plain, odd = params
    assert plain["command"] == odd["command"] == "git status"
    assert "U+0456" not in plain["action_description"] + plain["content_preview"]
    assert "U+0456" in odd["action_description"] and "U+0456" in odd["content_preview"]
    assert plain["action_description"] != odd["action_description"]


def test_the_terminal_form_shows_agys_text_by_the_rendering_rule() -> None:
    """omnigent's chat prints the preview as rich markup and the form's fields as plain text: agy's
    question and options can neither style the screen nor hide characters, and the typed answer,
    keyed by the field the chat showed, reaches the question it names."""
    hostile = QUESTION_GATE.questions[0].model_copy(
        update={
            "question": "Delete [bold red]prod[/]?\u202e",
            "options": (
                QuestionOption(id="1", text="yes [link=x]\x1b[2J"),
                QuestionOption(id="2", text="no"),
            ),
        }
    )
    gate = QUESTION_GATE.model_copy(update={"questions": (hostile, QUESTION_GATE.questions[1])})
    params = gate_params(gate)
    preview = params["content_preview"]
    assert "\\[bold red]" in preview and "\\[link=x]" in preview  # escaped for rich markup
    assert "\\u202e" in preview and "\\x1b" in preview and "\x1b" not in preview
    fields = params["requestedSchema"]["properties"]
    key = "Delete [bold red]prod[/]?\\u202e"
    assert list(fields) == [key, "Which tests?"]
    assert fields[key]["description"].startswith("Options: 1 = yes [link=x]\\x1b[2J; 2 = no")
    typed = {"action": "accept", "content": {key: "2", "Which tests?": "1, 2"}}
    assert answer_from_result(gate, typed) == GateAnswer(selections=(("2",), ("1", "2")))


def test_a_key_that_could_name_two_questions_is_refused() -> None:
    twins = tuple(
        QUESTION_GATE.questions[0].model_copy(update={"question": text}) for text in ("a\u200d", "a\\u200d")
    )
    gate = QUESTION_GATE.model_copy(update={"questions": twins})
    keys = list(gate_params(gate)["requestedSchema"]["properties"])
    assert keys == ["a\\u200d", "a\\\\u200d"]  # what the chat shows, each its own
    with pytest.raises(AnswerError, match="several questions"):  # one's shown text is the other's raw
        answer_from_result(gate, {"action": "accept", "content": {"a\\u200d": "1", "1": "1"}})


def test_a_card_only_agys_terminal_answers_has_its_own_policy_name() -> None:
    """A chat's "always" on such a card would otherwise approve every later one with no prompt."""
    review = GateOpened(
        id="t1/12/gate",
        cascade_id=C,
        step_key="t1/12",
        gate_id="c/t1/12/d",
        kind="other",
        trajectory_id="t1",
        step_index=12,
        tool_name="write_to_file",
        interaction="fileReview[x]",
        answerable=False,
        digest="b" * 32,
    )
    params = gate_params(review)
    assert params["policy_name"] == "agy_native_terminal_only." + "b" * 16
    # in words (issue 45): agy's raw field stays in the event, not in what the human reads
    assert "fileReview" not in params["message"] and "answer in agy's terminal" in params["message"]


# -- the web UI's answers, fail-closed -------------------------------------------------------------

QUESTION_ANSWERS: list[tuple[dict[str, Any], GateAnswer]] = [
    (
        {"action": "accept", "content": {"0": "Frontend", "1": ["Unit", "Integration"]}},
        GateAnswer(selections=(("2",), ("1", "2"))),  # the labels clicked, read as their options
    ),
    (
        {"action": "accept", "content": {"Which part first?": "2", "which tests?": ["1", "also e2e"]}},
        GateAnswer(selections=(("2",), ("1", "also e2e"))),
    ),
    ({"action": "decline"}, GateAnswer(action="decline")),
    ({"action": "cancel", "content": {"0": "Backend"}}, GateAnswer(action="cancel")),
]


@pytest.mark.parametrize(("result", "answer"), QUESTION_ANSWERS)
def test_question_answers_from_the_web_form(result: dict[str, Any], answer: GateAnswer) -> None:
    assert answer_from_result(QUESTION_GATE, result) == answer


@pytest.mark.parametrize(
    ("result", "allow"),
    [
        ({"action": "accept"}, True),  # the card's Approve
        ({"action": "accept", "content": {}}, True),
        ({"action": "accept", "content": {"answer": "Allow once"}}, True),
        ({"action": "accept", "content": {"allow": False}}, False),
        ({"action": "accept", "content": {"0": "deny"}}, False),
        ({"action": "decline"}, False),  # the card's Reject
        ({"action": "cancel"}, False),
    ],
)
def test_permission_answers(result: dict[str, Any], allow: bool) -> None:
    assert answer_from_result(PERMISSION_GATE, result).allow is allow


@pytest.mark.parametrize(
    ("gate", "result"),
    [
        (PERMISSION_GATE, {"action": "accept", "content": {"allow": "maybe"}}),
        (PERMISSION_GATE, {"action": "accept", "content": {"allow": True, "deny": True}}),
        (PERMISSION_GATE, {"action": "accept", "content": {"whatever": "yes"}}),
        (PERMISSION_GATE, {"action": "accept", "content": "yes"}),
        (QUESTION_GATE, {"action": "accept"}),
        (QUESTION_GATE, {"action": "accept", "content": {"0": "Backend"}}),  # question 2 left unanswered
        (
            QUESTION_GATE,
            {"action": "accept", "content": {"0": ["Backend", "Frontend"], "1": "Unit"}},
        ),  # single
        (QUESTION_GATE, {"action": "accept", "content": {"0": "7", "1": "Unit"}}),  # no option 7
        (QUESTION_GATE, {"action": "accept", "content": {"0": "Backend", "1": "Unit", "2": "x"}}),
        (QUESTION_GATE, {"action": "accept", "content": {"0": 2, "1": "Unit"}}),
    ],
)
def test_ambiguous_answers_are_refused(gate: Any, result: dict[str, Any]) -> None:
    with pytest.raises(AnswerError):
        answer_from_result(gate, result)


def test_a_label_that_is_another_options_number_is_refused_where_both_forms_key_the_field_alike() -> None:
    """A question whose text is a number: the terminal chat keys its field ``"0"`` as the web form
    does, so ``"2"`` could be option 1's label (clicked) or option 2's number (typed): refused.
    (tests/omnigent_real/test_question_labels.py: where only the web form keys it so, the label.)"""
    q = Question(
        question="7",
        options=(QuestionOption(id="1", text="2"), QuestionOption(id="2", text="Delete the build")),
    )
    gate = QUESTION_GATE.model_copy(update={"questions": (q,)})
    with pytest.raises(AnswerError, match="could name either"):
        answer_from_result(gate, {"action": "accept", "content": {"0": "2"}})
    assert answer_from_result(
        gate, {"action": "accept", "content": {"0": "Delete the build"}}
    ).selections == (("2",),)


@pytest.mark.parametrize("result", [None, [], {"content": {}}, {"action": "approve"}])
def test_a_body_that_is_no_verdict_is_a_protocol_error(result: Any) -> None:
    with pytest.raises(OmnigentProtocolError):
        answer_from_result(PERMISSION_GATE, result)


SCOPED = PERMISSION_GATE.model_copy(
    update={
        "interaction": "permission",
        "scopes": ("once", "conversation", "global"),
        "permission": PERMISSION_GATE.permission.model_copy(  # type: ignore[union-attr]
            update={
                "persist_suggestion_type": "PERSIST_SUGGESTION_TYPE_SUGGESTED",
                "suggested_persist_pattern": "git",
            }
        ),
    }
)


def test_each_scope_the_gate_lists_is_a_labelled_choice_read_back_as_that_scope() -> None:
    """issue 34: one button per ``gate.scopes`` entry, labelled by the core; "Allow once" first (the
    chat's ``y``), Deny last; each label reads back as exactly that answer."""
    enum = gate_params(SCOPED)["requestedSchema"]["properties"]["answer"]["enum"]
    assert enum == [
        "Allow once",
        "Allow for this conversation: commands that start with 'git'",
        "Always allow: commands that start with 'git'",
        "Deny",
    ]
    scopes = [answer_from_result(SCOPED, {"action": "accept", "content": {"answer": e}}) for e in enum]
    assert [(a.allow, a.scope) for a in scopes] == [
        (True, None),
        (True, "conversation"),
        (True, "global"),
        (False, None),
    ]
    assert "2 more choices on omnigent's web card" in gate_params(SCOPED)["content_preview"]


def test_a_scope_the_gate_does_not_list_is_neither_shown_nor_accepted() -> None:
    once_only = SCOPED.model_copy(update={"scopes": ("once",)})
    assert gate_params(once_only)["requestedSchema"]["properties"]["answer"]["enum"] == ["Allow once", "Deny"]
    for label in ("Allow for this conversation: commands that start with 'git'", "Allow in this workspace"):
        with pytest.raises(AnswerError):
            answer_from_result(once_only, {"action": "accept", "content": {"answer": label}})
    with pytest.raises(AnswerError):  # the text form too: parse_answer checks gate.scopes
        answer_from_result(once_only, {"action": "accept", "content": {"answer": "allow conversation"}})
