"""The simulator's scripted model: what a turn does is picked from keywords in the user's text.

Keywords (case-insensitive, whole words; several in one turn run in the order they appear, then
one final text reply summarises):

* *(none of the below)* — a plain text reply, streamed in chunks after some streamed thinking.
  ``hello`` gets agy's recorded greeting; ``long`` / ``story`` / ``essay`` a long reply (~60
  chunks: room to interrupt it with CancelCascadeSteps).
* ``run`` / ``execute`` / ``command`` — a planner tool call, then RUN_COMMAND gated by a permission
  (WAITING). The command is the backticked text, else what follows ``run:`` / ``run`` (up to
  `` and ``, ``,`` or `` then ``; ``the command`` is skipped), else ``pwd``.
  Allowed: RUNNING -> DONE with ``runCommand.combinedOutput.full`` (canned output; nothing is ever
  executed: the command line and cwd the step holds when it is allowed are recorded in
  ``Simulator.executed``, which tests read as "what agy ran"). Denied: the step ends ``CORTEX_STEP_STATUS_ERROR`` with the refusal recorded in
  ``completedInteractions`` (``permission: {}``, proto-JSON omits ``allow: false``) and
  ``permissions.permissionGrants``; the final reply says the command was not run (and repeats the
  human's ``userDenyInstruction``, when the denial carried one).
  ``a && b`` is one planner call with two tool calls and two RUN_COMMAND steps gated one after
  the other (b is asked only once a was allowed and ran; denying a skips b).
* ``autorun`` / ``auto-run`` — RUN_COMMAND with no gate (agy's auto-execution policy): PENDING ->
  RUNNING -> DONE.
* ``ask`` / ``question`` / ``choose`` — ASK_QUESTION (WAITING) with options ids ``"1".."N"``; the
  question is what follows ``ask:`` when it ends with ``?``. With ``multi`` / ``multiple`` /
  ``several`` it is multi-select (``is_multi_select: true`` in ``toolCall.argumentsJson``, 4 options).
  The final reply names the chosen option(s) (or the write-in).
* ``kind: <field> [subject]`` — a step that waits for agy's interaction ``<field>`` (any of the 18
  ``CascadeUserInteraction`` fields, ``nestedFilePermission``, or a settings gate): see
  :mod:`.kind_steps`. The rest of the line is the request's subject.
* ``list`` — LIST_DIRECTORY of the workspace (canned entries).
* ``view`` / ``cat`` / ``read file`` — VIEW_FILE of the first path-like word (default README.md).
* ``write the file`` / ``write a file`` — WRITE_TO_FILE that waits for a file-write review: a gate
  whose ``requestedInteraction`` is ``fileReview`` (a GUESS: agy >= 1.1.0 pauses for diff review, but
  no recording shows the field; it exists to exercise the harness's generic gates). It is answered
  in the simulated terminal (:meth:`Simulator.resolve_in_terminal`), or over RPC with
  ``{"fileReview": {...}}``.
* ``edit the file <path>`` / ``edit a file <path>`` — agy's file-edit review: a CODE_ACTION step that
  waits until a human accepts or rejects its diff, answered by ``AcknowledgeCodeActionStep``
  (:mod:`.code_review`).
* ``make a plan`` / ``make a task list`` — agy's task artifact: WRITE_TO_FILE (no gate: agy writes
  its own artifacts) of ``<brain>/<cascade>/task.md``, a Markdown checklist (``[/]`` in progress,
  ``[ ]`` pending), then the same file again with the first item ``[x]`` done. Where agy keeps the
  artifact and its checklist marks follow public Antigravity material (docs/conventions.md);
  that it is written with ``write_to_file`` and without a review is a guess. Nothing is written to disk.
* ``subagent`` / ``sub-agent`` — a GENERIC ``invoke_subagent`` step, and a CHILD cascade (listed by
  GetAllCascadeTrajectories with ``trajectoryMetadata.parentConversationId``) that runs its own
  short text turn. With ``invoke`` in the turn (``invoke a sub-agent ...``) the step is the typed
  INVOKE_SUBAGENT instead, with only the fields the reference reads (``invokeSubagent.subagents[i].
  {role, typeName}``, ``results[i].conversationId``; see :func:`.tool_steps.invoke_subagent`).

Step order of a turn (from the recorded step indices): USER_INPUT, then on a cascade's first turn
CONVERSATION_HISTORY; PLANNER_RESPONSE (tool calls) + tool steps, repeated; a final text
PLANNER_RESPONSE; on the first turn a CHECKPOINT (the intent summary) last.

Gate timeouts (``Simulator(gate_timeout=...)``): the WAITING step goes ERROR and the same gate is
re-asked as a new step at a higher stepIndex, at most ``gate_reasks`` times; then the turn gives up
with a text reply.

Pacing: ``pace`` scales every delay (1.0 = human-like, ~0.1 s per chunk; 0 = no delay at all).

Named scenarios (:data:`SCENARIOS`, for ``agy-harness sim --scenario NAME``) are turns submitted at
start-up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .kind_steps import KINDS_SCENARIO

PLAN_ITEMS = ["Read the code", "Write the tests", "Fix the bug"]

SCENARIOS: dict[str, list[str]] = {
    "idle": [],
    "hello": ["Say hello in one short sentence."],
    "gate": ["run: pwd"],
    "question": ["ask: which part should we work on first?"],
    "chained": ["run: git status && git log -n 5 --oneline"],
    "tools": ["list the directory and view README.md"],
    "subagent": ["start a subagent to review the code"],
    "long": ["Write a long story about a lighthouse keeper."],
    "plan": ["make a task list and run: pytest"],
    "review": ["edit the file notes.txt"],  # agy's file-edit review (.code_review)
    # every gate kind agy defines, one turn each (adapters/simulator/kind_steps.py)
    "kinds": list(KINDS_SCENARIO),
}

GREETING = "Hello! I am Antigravity, your AI coding assistant, ready to help you with your tasks."

LONG_TEXT = (
    "The lighthouse keeper climbed the spiral stairs every evening at dusk, counting the one hundred "
    "and twelve steps as his father had before him. The lamp was older than the village below, and it "
    "hummed when the glass was warm. Ships passed far out on the grey water, and each of them, he "
    "liked to think, carried someone who was looking for the light. On the longest night of winter a "
    "small boat came close to the rocks, its sail torn and its lantern out. He rang the bell, he swung "
    "the beam low across the reef, and he watched the little boat turn, slowly, towards the harbour. "
    "In the morning a girl knocked at his door with a loaf of bread and a question about the lamp, and "
    "he showed her the stairs, all one hundred and twelve of them, and how the glass must be cleaned."
)

QUESTION_OPTIONS = [
    "(Recommended) Start with the core logic.",
    "Start with the tests.",
    "Start with the documentation.",
]
MULTI_OPTIONS = ["Linting", "Type checking", "Unit tests", "Benchmarks"]

WORKSPACE_ENTRIES: list[dict[str, Any]] = [
    {"name": ".git", "isDir": True},
    {"name": "README.md", "sizeBytes": "1342"},
    {"name": "notes.txt", "sizeBytes": "97"},
    {"name": "pyproject.toml", "sizeBytes": "812"},
    {"name": "src", "isDir": True},
    {"name": "tests", "isDir": True},
]


@dataclass
class Action:
    kind: str  # "run" | "autorun" | "ask" | "list" | "view" | "subagent" | "write" | "edit" | ...
    at: int
    arg: str = ""
    multi: bool = False
    cwd: str = ""  # a run's directory ("" = the workspace)
    typed: bool = False  # a sub-agent's step is the typed INVOKE_SUBAGENT (else GENERIC)


@dataclass
class Plan:
    actions: list[Action] = field(default_factory=list)
    long: bool = False


_KEYWORDS: list[tuple[str, str]] = [
    ("kind", r"\bkind:"),
    ("autorun", r"\bauto-?run\b"),
    ("run", r"\b(?<!-)(?:run|execute|command)\b"),
    ("ask", r"\b(?:ask|question|choose)\b"),
    ("list", r"\blist\b"),
    ("view", r"\b(?:view|cat)\b|\bread (?:the )?file\b"),
    ("subagent", r"\bsub-?agents?\b"),
    ("write", r"\bwrite (?:to )?(?:a |the )?file\b"),
    ("edit", r"\bedit (?:a |the )?file\b"),
    ("plan", r"\b(?:make|keep|write) a (?:task list|plan)\b"),
]


_IN_DIR = re.compile(r"\s+in\s+(/\S*[^\s.,;])")


def extract_run(text: str, at: int) -> tuple[str, str, int]:
    """The command a ``run`` at ``at`` names, its directory (``""``: the workspace), and where its
    mention ends in ``text``."""
    tick = re.search(r"`([^`]+)`", text[at:])
    if tick:
        end = at + tick.end()
        where = _IN_DIR.match(text, end)
        if where:
            return tick.group(1).strip(), where.group(1), where.end()
        return tick.group(1).strip(), "", end
    rest = text[at:]
    head = re.match(
        r"\s*(?:auto-?run|run|execute|command)\s*:?\s*(?:the\s+)?(?:(?:shell\s+)?command\s+)?", rest, re.I
    )
    skip = head.end() if head else 0
    body = re.split(r"\s+and\s+|,\s|\s+then\s+|\n", rest[skip:], maxsplit=1)[0]
    command = body.strip().rstrip(".").strip()
    return command or "pwd", "", at + skip + len(body)


def extract_question(text: str, at: int) -> tuple[str, int]:
    m = re.compile(
        r"(?:ask|question|choose)\w*(?:\s+multiple|\s+multi|\s+several)?\s*:?\s*([^?]*\?)", re.I
    ).match(text, at)
    if m and m.group(1).strip() != "?":
        q = m.group(1).strip()
        return q[0].upper() + q[1:], m.end()
    return "Which option should I go with?", at


def extract_path(text: str) -> str:
    for word in re.findall(r"[\w./-]+", text):
        if ("." in word.strip(".") or "/" in word) and not word.endswith("."):
            return str(word)
    return "README.md"


#: the keywords' patterns, and a long reply's ("long", whose matches are not actions)
_COMPILED = [(kind, re.compile(pattern, re.I)) for kind, pattern in _KEYWORDS] + [
    ("long", re.compile(r"\b(?:long|story|essay)\b", re.I))
]
_WORD = re.compile(r"\w+")
#: past this many words a turn is searched whole, pattern by pattern (each word tried in Python costs more)
_FEW_WORDS = 2000


def _keyword_matches(text: str) -> list[tuple[int, int, str]]:
    r"""Each keyword pattern's matches (as ``re.finditer`` finds them), by where they start.

    Every pattern starts with ``\b`` and a letter, so a match starts where a word does: in a turn of
    few words the patterns are tried there only. (A 4 MiB command line is one word: ``re.finditer``
    tried ``\b`` at each of its characters, for each of the 11 patterns: 0.65 CPU-s a turn.)"""
    starts = []
    for word in _WORD.finditer(text):
        starts.append(word.start())
        if len(starts) > _FEW_WORDS:
            found = [
                (m.start(), m.end(), kind) for kind, pattern in _COMPILED for m in pattern.finditer(text)
            ]
            return sorted(found)
    found = []
    for kind, pattern in _COMPILED:
        after = 0  # (finditer goes on from where its last match ended)
        for start in starts:
            if start >= after and (m := pattern.match(text, start)):
                found.append((m.start(), m.end(), kind))
                after = m.end()
    return sorted(found)


def plan_for(text: str) -> Plan:
    """The actions a user turn asks for (see the module docstring). A command or a question is
    taken whole: keywords inside it (``run`` in a question, ``cat`` in a command) do not count."""
    found = _keyword_matches(text)
    plan = Plan(long=any(kind == "long" for _, _, kind in found))
    matches = [m for m in found if m[2] != "long"]
    taken_until = -1
    seen: set[str] = set()
    for start, stop, kind in matches:
        if start < taken_until:
            continue
        family = "run" if kind == "autorun" else kind
        if family in seen:
            continue
        seen.add(family)
        action = Action(kind, start)
        end = stop
        if kind in ("run", "autorun"):
            action.arg, action.cwd, end = extract_run(text, start)
        elif kind == "ask":
            action.arg, end = extract_question(text, start)
            action.multi = bool(re.search(r"\b(?:multi|multiple|several)\b", text, re.I))
        elif kind == "view":
            action.arg = extract_path(text[stop:])
        elif kind == "subagent":
            action.arg = "Code Reviewer"
            action.typed = bool(re.search(r"\binvoke\b", text, re.I))
        elif kind in ("write", "edit"):
            action.arg = extract_path(text[stop:])
        elif kind == "kind":  # "kind: <field> [subject]": the rest of the line
            line = text[stop:].split("\n", 1)[0]
            action.arg, end = line.strip(), stop + len(line)
        taken_until = max(taken_until, end)
        plan.actions.append(action)
    return plan


def task_list(done: int) -> str:
    """agy's task artifact with the first ``done`` items checked and the next one in progress."""
    marks = ["x" if i < done else "/" if i == done else " " for i in range(len(PLAN_ITEMS))]
    return "# Task\n\n" + "".join(f"- [{m}] {item}\n" for m, item in zip(marks, PLAN_ITEMS, strict=True))


def canned_output(command: str, workspace: str) -> str:
    """What a command "printed" (the simulator never executes anything)."""
    head = command.split()[0] if command.split() else ""
    if command.strip() == "pwd":
        return workspace + "\n"
    if head == "echo":
        return command.partition(" ")[2].strip("'\"") + "\n"
    if head == "ls":
        return "\n".join(e["name"] for e in WORKSPACE_ENTRIES if not e["name"].startswith(".")) + "\n"
    if command.startswith("git status"):
        return "On branch main\r\nYour branch is up to date with 'origin/main'.\r\n\r\nnothing to commit, working tree clean\r\n"
    if command.startswith("git log"):
        return "5be046c0 (HEAD -> main) Initial commit\r\n"
    if command.startswith("pip install"):  # a progress bar redrawn with a bare CR, as pip draws it
        bar = "".join(f"\rDownloading {pct:>3}%" for pct in (10, 55, 100))
        return f"Collecting rich\r\n{bar}\r\nSuccessfully installed rich\r\n"
    return f"(simulated) {command}: ok\n"


def chunks(text: str, n: int) -> list[str]:
    """``text`` split into about ``n`` word-aligned pieces."""
    words = re.findall(r"\S+\s*", text)
    if not words:
        return []
    size = max(1, -(-len(words) // max(1, n)))
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]


def intent_of(text: str) -> str:
    words = re.findall(r"[A-Za-z]+", text)[:4]
    return (" ".join(w.capitalize() for w in words) or "User") + " Request"


def sentence(text: str) -> str:
    """``text`` ending in one full stop (quoted text that already ends a sentence gets no second)."""
    return text if text.rstrip().endswith((".", "!", "?", "…")) else f"{text}."
