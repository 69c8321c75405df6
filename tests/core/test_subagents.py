"""What a parent's step says of the sub-agents it started (core/subagents.py), on the recorded shape and
the reference's typed step."""

from __future__ import annotations

import json
from typing import Any

from agy_harness.core.steps import parse_step
from agy_harness.core.subagents import SCAN_OBJECTS, SubagentSpec, named_children
from tests.core.fixtures import fixture


def _named(raw: dict[str, Any]) -> dict[str, SubagentSpec]:
    step = parse_step(raw)
    assert step is not None
    return named_children(step)


def test_the_recorded_list_names_each_child_with_its_role_and_type() -> None:
    raw = fixture("stream_generic_done")
    assert _named(raw) == {}  # the recording's text is cut inside the first id: nothing is guessed
    listed = [
        {"role": "App Router Code Reviewer", "type": "research", "conversationId": "c-1"},
        {"role": "Database & Schema Code Reviewer", "type": "research", "conversationId": "c-2"},
    ]
    raw["generic"]["result"]["result"] = f"You have 2 active subagent(s):\n{json.dumps(listed)}"
    assert _named(raw) == {
        "c-1": SubagentSpec("App Router Code Reviewer", "research"),
        "c-2": SubagentSpec("Database & Schema Code Reviewer", "research"),
    }


def test_the_typed_step_pairs_specs_with_results_by_position() -> None:
    raw = fixture("stream_generic_done")
    del raw["generic"]
    raw["type"] = "CORTEX_STEP_TYPE_INVOKE_SUBAGENT"
    raw["invokeSubagent"] = {
        "subagents": [{"role": "Auditor", "typeName": "research"}, {"role": "Fixer", "typeName": "code"}],
        "results": [{"conversationId": "kid-1"}, {}],  # the second child does not exist yet
    }
    assert _named(raw) == {"kid-1": SubagentSpec("Auditor", "research")}


def test_odd_text_names_nobody_and_the_scan_is_bounded() -> None:
    raw = fixture("stream_generic_done")
    raw["generic"]["result"]["result"] = (
        '{"conversationId": 7} {"x": {"conversationId": "nested"}} {"' * (SCAN_OBJECTS)
        + '{"role": "late", "conversationId": "late-kid"}'
    )
    assert _named(raw) == {}  # no id string, nested objects not taken apart, nothing past the bound
