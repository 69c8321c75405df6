"""Every step the simulator serves has the recorded shape: for each recorded fixture (the in-repo copies
in adapters/simulator/shapes/), the simulator's step of the same kind (same type, status and projection)
has exactly the fixture's set of key paths (values ignored). The copies are checked byte for byte against
the recordings' SHA-256 (recordings.sha256), and against ../shared/fixtures/agy/ where it is next to the
repository."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.steps import SHAPE_NAMES, shape
from tests.core.fixtures import FIXTURES, SHARED

from .helpers import client, interaction, ok, steps_by_index, stream, until, waiting_index

SHAPES = Path(__file__).resolve().parents[2] / "adapters" / "simulator" / "shapes"

#: Key paths whose *names* are values (a tool's own argument map).
FREE_FORM = ("generic.args.",)
#: Known drift between the recordings: the poll fixtures (2026-06) predate ``runCommand.shellName``,
#: which the later stream recording (2026-08) carries; the simulator serves the newer field.
ALLOWED_EXTRA = {"run_command_done": {"runCommand.shellName"}}


def keypaths(value: Any, prefix: str = "") -> set[str]:
    out: set[str] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            path = f"{prefix}.{k}" if prefix else k
            if path.startswith(FREE_FORM):
                continue
            out.add(path)
            out |= keypaths(v, path)
    elif isinstance(value, list):
        for v in value:
            out |= keypaths(v, f"{prefix}[]")
    return out


def fixture(name: str) -> dict[str, Any]:
    value = json.loads((FIXTURES / f"{name}.json").read_text())
    value.pop("_fixtureProvenance", None)
    return dict(value)


def _is(step: dict[str, Any], kind: str, status: str) -> bool:
    return step["type"] == f"CORTEX_STEP_TYPE_{kind}" and step["status"] == f"CORTEX_STEP_STATUS_{status}"


def _tool_planner(name: str) -> Any:
    def pick(step: dict[str, Any]) -> bool:
        calls = step.get("plannerResponse", {}).get("toolCalls") or []
        return _is(step, "PLANNER_RESPONSE", "DONE") and bool(calls) and calls[0]["name"] == name

    return pick


async def _session() -> dict[str, dict[str, Any]]:
    """Drive one conversation through every kind of step; return the steps picked per fixture."""
    picked: dict[str, dict[str, Any]] = {}
    async with Simulator(gate_timeout=None, pace=0.02) as sim, client() as c, stream(c, sim) as s:
        await s.next_frame()

        async def turn(text: str) -> None:
            await ok(
                c,
                sim,
                "SendUserCascadeMessage",
                {"cascadeId": sim.cascade_id, "items": [{"text": text}]},
            )
            await sim.wait_idle()

        await turn("Say hello in one short sentence.")
        await turn("run: pwd")
        i = waiting_index(sim)
        picked["run_command_waiting"] = sim.steps()[i]
        await ok(c, sim, "HandleCascadeUserInteraction", interaction(sim, i, permission={"allow": True}))
        await sim.wait_idle()
        await turn("ask: which part should we work on first?")
        i = waiting_index(sim)
        picked["ask_question_waiting"] = sim.steps()[i]
        question = sim.steps()[i]["askQuestion"]["questions"][0]["question"]
        answer = {"responses": [{"question": question, "selectedOptionIds": ["2"]}]}
        await ok(c, sim, "HandleCascadeUserInteraction", interaction(sim, i, askQuestion=answer))
        await sim.wait_idle()
        await turn("list the directory")
        await turn("view README.md")
        await turn("autorun: git status && git log -n 5 --oneline")
        await turn("start a subagent to review the code")
        await s.until(
            lambda s: (
                len(steps_by_index(s.updates())) == len(sim.steps())
                and s.updates()[-1]["status"] == "CASCADE_RUN_STATUS_IDLE"
            )
        )
        await asyncio.sleep(0.05)
        poll = sim.steps()
        final_stream = {i: snaps[-1] for i, snaps in steps_by_index(s.updates()).items()}
    assert sorted(final_stream) == list(range(len(poll)))

    def first(pred: Any, steps: list[dict[str, Any]], start: int = 0) -> dict[str, Any]:
        return next(st for st in steps[start:] if pred(st))

    stream_steps = [final_stream[i] for i in range(len(poll))]
    picked["user_input"] = poll[0]
    picked["conversation_history"] = poll[1]
    picked["planner_response_text"] = poll[2]
    picked["checkpoint"] = poll[3]
    picked["planner_response_tool_call_run_command"] = first(_tool_planner("run_command"), poll)
    picked["planner_response_tool_call_ask_question"] = first(_tool_planner("ask_question"), poll)
    picked["run_command_done"] = first(lambda st: _is(st, "RUN_COMMAND", "DONE"), poll)
    picked["ask_question_done"] = first(lambda st: _is(st, "ASK_QUESTION", "DONE"), poll)
    picked["list_directory_done"] = first(lambda st: _is(st, "LIST_DIRECTORY", "DONE"), poll)
    later = 4  # a text planner after the first turn (metadataIndex > 0, cache read)
    picked["stream_planner_text_done"] = first(
        lambda st: _is(st, "PLANNER_RESPONSE", "DONE") and "modifiedResponse" in st["plannerResponse"],
        stream_steps,
        later,
    )
    picked["stream_planner_tool_call"] = first(
        lambda st: _is(st, "PLANNER_RESPONSE", "DONE") and "modifiedResponse" not in st["plannerResponse"],
        stream_steps,
        later,
    )
    picked["stream_run_command_done"] = first(
        lambda st: _is(st, "RUN_COMMAND", "DONE") and "requestedInteraction" not in st, stream_steps
    )
    picked["stream_list_directory_done"] = first(lambda st: _is(st, "LIST_DIRECTORY", "DONE"), stream_steps)
    picked["stream_view_file_done"] = first(lambda st: _is(st, "VIEW_FILE", "DONE"), stream_steps)
    picked["stream_generic_done"] = first(lambda st: _is(st, "GENERIC", "DONE"), stream_steps)

    async with Simulator(gate_timeout=0.05, gate_reasks=0, pace=0.0) as sim:
        await sim.submit_user_turn("hello")  # a second-turn tool step has metadataIndex > 0, as recorded
        await sim.wait_idle()
        await sim.submit_user_turn("run: pwd")
        await until(lambda: any(_is(st, "RUN_COMMAND", "ERROR") for st in sim.steps()))
        await sim.wait_idle()
        picked["run_command_error"] = next(st for st in sim.steps() if _is(st, "RUN_COMMAND", "ERROR"))
    return picked


@pytest.fixture(scope="module")
def served() -> dict[str, dict[str, Any]]:
    return asyncio.run(_session())


def test_every_fixture_is_covered() -> None:
    names = sorted(p.stem for p in FIXTURES.glob("*.json"))
    assert names == sorted(SHAPE_NAMES)


#: SHA-256 of each recording in ``../shared/fixtures/agy`` when it was copied (``sha256sum *.json``)
MANIFEST = Path(__file__).with_name("recordings.sha256")


def _hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.json"))}


def test_the_in_repo_copies_are_the_recordings_byte_for_byte() -> None:
    """The copies hash as the recordings did (a plain clone checks this too: nothing skipped), and where
    the recordings sit next to the repository they are compared with them as well."""
    lines = MANIFEST.read_text(encoding="utf-8").splitlines()
    recorded = {name: digest for digest, name in (line.split("  ", 1) for line in lines)}
    assert len(recorded) == 18
    assert _hashes(SHAPES) == recorded
    if SHARED is not None:
        assert _hashes(SHARED) == recorded


@pytest.mark.parametrize("name", sorted(SHAPE_NAMES))
def test_shapes_are_the_recorded_steps(name: str) -> None:
    assert shape(name) == fixture(name)


@pytest.mark.parametrize("name", sorted(SHAPE_NAMES))
def test_served_step_has_the_fixture_key_paths(name: str, served: dict[str, dict[str, Any]]) -> None:
    want = keypaths(fixture(name))
    got = keypaths(served[name])
    extra = got - want - ALLOWED_EXTRA.get(name, set())
    missing = want - got
    assert not missing and not extra, f"{name}: missing {sorted(missing)}, extra {sorted(extra)}"
    assert served[name]["type"] == fixture(name)["type"]
    assert served[name]["status"] == fixture(name)["status"]


def test_stream_projection_fixtures_lack_what_the_stream_strips(served: dict[str, dict[str, Any]]) -> None:
    for name in ("stream_planner_text_done", "stream_planner_tool_call", "stream_run_command_done"):
        step = served[name]
        assert "internalMetadata" not in step["metadata"]
        assert "toolCall" not in step["metadata"]
        assert "toolCalls" not in step.get("plannerResponse", {})
    assert "toolCall" in served["stream_generic_done"]["metadata"]


def test_model_usage_counts_are_string_ints(served: dict[str, dict[str, Any]]) -> None:
    for name in (
        "planner_response_text",
        "planner_response_tool_call_run_command",
        "stream_planner_text_done",
    ):
        usage = served[name]["metadata"]["modelUsage"]
        for key in ("inputTokens", "outputTokens", "responseOutputTokens"):
            assert isinstance(usage[key], str) and int(usage[key]) > 0
    assert "cacheReadTokens" not in served["planner_response_text"]["metadata"]["modelUsage"]
    assert int(served["stream_planner_text_done"]["metadata"]["modelUsage"]["cacheReadTokens"]) > 0


FREE_FORM_STEPS = {"stream_generic_done"}


@pytest.mark.parametrize("name", sorted(SHAPE_NAMES))
def test_served_step_maps_like_the_fixture(name: str, served: dict[str, dict[str, Any]]) -> None:
    """The core turns the simulator's step into the same kinds of events, with the same tool names and
    argument names, as the recorded step of the same kind."""
    from agy_harness.core.reconciler import Reconciler

    generic = name in FREE_FORM_STEPS  # a GENERIC step is any tool: the simulator serves invoke_subagent

    def mapped(step: dict[str, Any]) -> list[tuple[Any, ...]]:
        out = []
        for e in Reconciler("c").feed(step):
            d = e.model_dump()
            tool = () if generic else (d.get("name"), tuple(sorted(d.get("arguments", {}) or {})))
            out.append((e.type, *tool, d.get("kind"), d.get("is_error"), d.get("status")))
        return out

    assert mapped(served[name]) == mapped(fixture(name))
