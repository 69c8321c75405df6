"""``agy-harness replay`` on JSON that parses but holds no agy steps, and on a cut multi-line file:
exit 2, one line naming the file and where it breaks, nothing on stdout (#16 finding 7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.core.fixtures import fixture
from tests.in_process import run_cli

# the command run in this process (tests/in_process.py): its messages are the subject; replay's exit 2
# with one line as a process is tests/cli/test_every_command.py's

PRETTY_STEP = json.dumps(fixture("user_input"), indent=2)
CUT_AT = PRETTY_STEP.index('"type"') + 4  # inside the string "type"
CUT_LINE = PRETTY_STEP[:CUT_AT].count("\n") + 1


@pytest.mark.parametrize(
    ("text", "position", "says"),
    [
        ("[1,2,3]", "1:2", "item[0] is not an agy step"),
        ('[\n  {"type": "CORTEX_STEP_TYPE_USER_INPUT"},\n  7\n]\n', "3:3", "item[1] is not an agy step"),
        ('{"update": 5}', "1:1", "the stream update is int"),
        ('{"steps": [{"no": "type"}]}', "1:1", "steps[0] is not an agy step"),
        ('{"update": {}}\n{"update": 5}\n', "2:1", "the stream update is int"),
        # a pretty-printed step cut off: where the parser stopped, not "1:2"
        (PRETTY_STEP[:CUT_AT], f"{CUT_LINE}:", "Unterminated string"),
    ],
)
def test_what_is_not_agy_steps_exits_2_with_one_line(
    tmp_path: Path, text: str, position: str, says: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    run = run_cli("replay", str(bad))
    assert run.returncode == 2
    assert run.stdout == ""
    [line] = run.stderr.splitlines()
    assert line.startswith(f"agy-harness replay: {bad}:{position}")
    assert says in line


def test_a_cut_multi_line_file_is_reported_where_it_breaks(tmp_path: Path) -> None:
    lines = PRETTY_STEP.splitlines()
    cut = "\n".join(lines[: len(lines) // 2]) + "\n"
    bad = tmp_path / "cut.json"
    bad.write_text(cut)
    run = run_cli("replay", str(bad))
    assert run.returncode == 2 and run.stdout == ""
    [line] = run.stderr.splitlines()
    where = line.split(f"{bad}:", 1)[1].split(":")[0]
    assert int(where) >= len(lines) // 2  # the end of what is there, not line 1
