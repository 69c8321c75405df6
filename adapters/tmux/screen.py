"""Reading agy's TUI from a captured tmux screen: is the composer ready, what does it hold, was the
turn echoed. Exact for the simulated TUI, heuristic for agy's real TUI (pass your own predicates to
:class:`~agy_harness.adapters.tmux.sender.TmuxTurnSender` when they do not fit)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from agy_harness.ports.events import GateOpened

ScreenPredicate = Callable[[Sequence[str]], bool]
ComposerReader = Callable[[Sequence[str]], str | None]


def _norm(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().replace("\r\n", "\n").split("\n"))


def _collapsed(text: str) -> str:
    return " ".join(text.split())


def _holds(composer: str, text: str) -> bool:
    """The composer shows (the start of) ``text``."""
    shown = _collapsed(composer)
    wanted = _collapsed(text)
    if not shown:
        return False
    probe = shown[:30]
    return wanted.startswith(probe) or probe in wanted


SIM_FOOTER = re.compile(r"^agy (\S+) · (idle|working|waiting for approval)\s*$")
_SEPARATOR = re.compile(r"^─{3,}$")


def _last_nonblank(lines: Sequence[str]) -> int:
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].strip():
            return i
    return -1


def _sim_footer(lines: Sequence[str]) -> tuple[int, str] | None:
    i = _last_nonblank(lines)
    if i < 0:
        return None
    m = SIM_FOOTER.match(lines[i].strip())
    return (i, m.group(2)) if m else None


def sim_ready(lines: Sequence[str]) -> bool:
    """The simulated TUI: its footer (the last line) says ``agy <version> · idle``."""
    footer = _sim_footer(lines)
    return footer is not None and footer[1] == "idle"


def _sim_composer_region(lines: Sequence[str]) -> tuple[int, int] | None:
    footer = _sim_footer(lines)
    if footer is None:
        return None
    end = footer[0]
    for i in range(end - 1, -1, -1):
        if _SEPARATOR.match(lines[i].strip()):
            return i, end
    return None


def sim_composer(lines: Sequence[str]) -> str | None:
    """What the simulated TUI's composer holds (between the last ``───`` rule and the footer)."""
    region = _sim_composer_region(lines)
    if region is None:
        return None
    rows = list(lines[region[0] + 1 : region[1]])
    if not rows or not rows[0].startswith(">"):
        return None
    parts = [rows[0][2:] if rows[0].startswith("> ") else rows[0][1:]]
    parts += [row[2:] if row.startswith("  ") else row for row in rows[1:]]
    return "\n".join(parts).rstrip()


# agy's real TUI is not recorded: these markers are a conservative heuristic (an Ink-style composer
# line starting with ">" and no "working"/approval marker on screen). Pass your own predicates to
# TmuxTurnSender when they do not fit the agy version in use.
AGY_BUSY_MARKERS = (
    "esc to cancel",
    "esc to interrupt",
    "ctrl+c to interrupt",
    "waiting for approval",
    "waiting for user",
    "allow execution",
    "do you want to",
)
_BOX = "│┃║╭╮╰╯ \t"
_AGY_PROMPT = re.compile(r"^(>|❯|›)( |$)")
_AGY_PLACEHOLDERS = ("type your message", "ask anything", "send a message")


def _agy_prompt_line(lines: Sequence[str]) -> str | None:
    for line in reversed(lines):
        content = line.strip(_BOX)
        if _AGY_PROMPT.match(content):
            return content
    return None


def agy_ready(lines: Sequence[str]) -> bool:
    """Heuristic for agy's real TUI: a composer prompt line is visible and nothing says it is busy."""
    tail = "\n".join(lines[-15:]).lower()
    if any(marker in tail for marker in AGY_BUSY_MARKERS):
        return False
    return _agy_prompt_line(lines) is not None


def agy_composer(lines: Sequence[str]) -> str | None:
    """Heuristic: the text after agy's composer prompt (``""`` for a placeholder), ``None`` if unseen."""
    content = _agy_prompt_line(lines)
    if content is None:
        return None
    rest = content[1:].strip()
    if any(rest.lower().startswith(p) for p in _AGY_PLACEHOLDERS):
        return ""
    return rest


def default_ready(lines: Sequence[str]) -> bool:
    """The simulated TUI's footer when it is on screen, else the agy heuristic."""
    if _sim_footer(lines) is not None:
        return sim_ready(lines)
    return agy_ready(lines)


def default_composer(lines: Sequence[str]) -> str | None:
    if _sim_footer(lines) is not None:
        return sim_composer(lines)
    return agy_composer(lines)


def _echo_count(lines: Sequence[str], text: str) -> int | None:
    """How often ``text``'s first line shows above the simulated TUI's composer (None: layout unknown)."""
    region = _sim_composer_region(lines)
    if region is None:
        return None
    first = _collapsed(text.strip().split("\n")[0])[:40]
    if not first:
        return None
    return sum(1 for line in lines[: region[0]] if first in _collapsed(line))


# -- the prompt of one request ------------------------------------------------------------------
# Before typing into agy's pane the harness checks that the prompt on screen is that request's (see
# composition/service/gate_delivery.py). The simulated TUI's prompt is exact: ``? Allow this command?`` then
# ``  $ <command>`` (continuation lines indented four spaces), ``  in <cwd>`` and the menu; a question
# is ``? <question>`` then ``  <id>. <option>`` lines. agy's real prompt is not recorded: the check
# there is a heuristic (every line of the request, in order, near the bottom, then a "Yes" menu).

SIM_PERMISSION_HEADER = "? Allow this command?"


def request_lines(gate: GateOpened) -> list[str] | None:
    """What the simulated TUI's prompt shows of ``gate``'s request (None: a kind with no prompt)."""
    if gate.kind == "permission" and gate.permission is not None:
        rows = gate.permission.command_line.split("\n")
        out = ["  $ " + rows[0], *("    " + row for row in rows[1:])]
        return [*out, "  in " + gate.permission.cwd] if gate.permission.cwd else out
    if gate.kind == "question" and len(gate.questions) == 1:
        q = gate.questions[0]
        return [f"? {q.question}", *(f"  {o.id}. {o.text}" for o in q.options)]
    return None


def _sim_prompt_shown(lines: Sequence[str], gate: GateOpened, wanted: list[str]) -> bool:
    footer = _sim_footer(lines)
    region = _sim_composer_region(lines)
    if footer is None or footer[1] != "waiting for approval" or region is None or sim_composer(lines) != "":
        return False
    above = [line.rstrip() for line in lines[: region[0]]]
    heads = [i for i, line in enumerate(above) if line.startswith("? ")]
    if not heads:
        return False
    start = heads[-1]  # the last prompt on screen: the one typed keys answer
    block = above[start:]
    if gate.kind == "permission":
        return block[:1] == [SIM_PERMISSION_HEADER] and block[1 : 1 + len(wanted)] == [
            w.rstrip() for w in wanted
        ]
    return block[: len(wanted)] == [w.rstrip() for w in wanted]


def _agy_prompt_shown(lines: Sequence[str], wanted: list[str]) -> bool:
    rows = [line.strip(_BOX).strip() for line in lines[-40:]]
    texts = [w.strip().removeprefix("$ ").removeprefix("in ").strip() for w in wanted]
    texts = [t for t in texts if t]
    for start in range(len(rows)):
        if all(start + k < len(rows) and t in rows[start + k] for k, t in enumerate(texts)):
            after = rows[start + len(texts) :]
            return any("yes" in row.lower() for row in after) or any(row.startswith("1.") for row in after)
    return False


def prompt_shown(lines: Sequence[str], gate: GateOpened) -> bool:
    """The screen's last prompt is exactly ``gate``'s request, with nothing typed in the composer:
    exact for the simulated TUI, a heuristic for agy's real TUI (a guess: it is not recorded)."""
    wanted = request_lines(gate)
    if wanted is None:
        return False
    if _sim_footer(lines) is not None:
        return _sim_prompt_shown(lines, gate, wanted)
    return _agy_prompt_shown(lines, wanted)
