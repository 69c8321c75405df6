"""agy's plan artifacts as ACP agent plans (``session/update`` ``plan``).

agy has no structured plan channel: it keeps its task list and implementation plan as Markdown
artifacts in its brain directory, ``<brain>/<conversation>/task.md`` and ``implementation_plan.md``
(brain roots ``~/.gemini/antigravity-cli/brain`` and ``~/.gemini/antigravity/brain``), written with
its own file tools, checklist items marked ``[ ]`` / ``[/]`` / ``[x]`` (docs/acp.md: sources). So the plan
a client sees is the checklist of the plan artifact agy last wrote:

* ``write_to_file`` of such a file: its ``CodeContent``;
* an edit of one (``replace_file_content``, ...): the file as it is on disk once the edit is done
  (read bounded: the brain is the user's own directory).

Entries are the checklist items in order: ``[ ]`` pending, ``[/]`` (also ``[~]``, ``[-]``) in
progress, ``[x]`` completed; priority ``medium`` (agy gives none). A file without checklist items is
no plan (an implementation plan in prose stays a file edit). Each update carries the whole list.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any

from acp.schema import AgentPlanUpdate, PlanEntry, PlanEntryStatus

PLAN_FILES = frozenset({"task.md", "implementation_plan.md"})
MAX_PLAN_BYTES = 1024 * 1024
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\[([ xX/~-])\]\s+(\S.*?)\s*$")
_STATUS: dict[str, PlanEntryStatus] = {" ": "pending", "x": "completed", "/": "in_progress"}


def plan_path(args: dict[str, Any]) -> str | None:
    """The plan artifact a file tool's arguments write, if they write one."""
    target = args.get("TargetFile") or args.get("AbsolutePath")
    if not isinstance(target, str):
        return None
    parts = PurePath(target).parts
    if len(parts) >= 3 and parts[-1] in PLAN_FILES and "brain" in parts[:-2]:
        return target
    return None


def entries(markdown: str) -> list[PlanEntry]:
    out = []
    for line in markdown.splitlines():
        match = _ITEM.match(line)
        if match:
            mark = match.group(1).lower()
            status = _STATUS.get(mark, "in_progress")
            out.append(PlanEntry(content=match.group(2), priority="medium", status=status))
    return out


def plan_update(markdown: str) -> AgentPlanUpdate | None:
    found = entries(markdown)
    return AgentPlanUpdate(session_update="plan", entries=found) if found else None


def read_plan(path: str) -> str | None:
    """The artifact's text as agy left it (None when it cannot be read or is too large)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_PLAN_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_PLAN_BYTES:
        return None
    return data.decode("utf-8", errors="replace")
