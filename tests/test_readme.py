"""The README's promises: exactly two set-up commands, .ci/run runs the same test command; and the
two Python examples of the docs (docs/python-api.md's, docs/architecture.md's composition root) run
against the simulator and print what they say."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def page(name: str) -> str:
    return (ROOT / "docs" / name).read_text(encoding="utf-8")


def section(title: str, text: str = README) -> str:
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def test_two_setup_commands_and_ci_runs_the_same_test_command() -> None:
    commands = [b.strip() for b in blocks(section("Set-up"), "sh")]
    assert commands == [
        "pip install -e . && agy-harness demo",
        "pip install -e '.[test]' && python -m pytest -q",
    ]
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1] in ci.splitlines()


def printed_by(code: str, tmp_path: Path) -> list[str]:
    """The lines a docs example prints, run as a script of its own (it must exit 0)."""
    script = tmp_path / "example.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_the_python_api_example_runs(tmp_path: Path) -> None:
    [code] = blocks(page("python-api.md"), "python")
    lines = printed_by(code, tmp_path)
    assert lines[0] == "agy asks: git status"
    assert "output: On branch main" in lines
    assert any(line.startswith("agy: `git status` ran") for line in lines)


def test_the_composition_root_example_runs(tmp_path: Path) -> None:
    """docs/architecture.md's entry-point example: a container whose capabilities are overridden runs
    on the sources the version gate picks for them (the poll alone, for an agy without the stream)."""
    [code] = blocks(section("The composition root", page("architecture.md")), "python")
    lines = printed_by(code, tmp_path)
    assert lines[0] == "sources: ['poll']"
    assert len(lines) == 2 and lines[1].startswith("agy: ") and len(lines[1]) > len("agy: ")
