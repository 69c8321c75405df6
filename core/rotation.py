"""Rotation (agy's ``/clear``): which cascade, if any, the harness must follow next. Pure."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from datetime import datetime

from agy_harness.ports.protocols import CascadeSummary

from .reconciler import MapperState
from .stamps import parse_time

__all__ = ["is_child", "is_conversation", "on_screen", "parse_time", "rotated_state", "rotation_target"]


def is_child(summary: CascadeSummary) -> bool:
    """A sub-agent's cascade: it names a parent, or a root other than itself."""
    return bool(summary.parent_id) or bool(summary.root_id and summary.root_id != summary.cascade_id)


CASCADE_TRAJECTORY = "CORTEX_TRAJECTORY_TYPE_CASCADE"


def is_conversation(summary: CascadeSummary) -> bool:
    """A user conversation (``trajectoryType`` CASCADE), not another kind of trajectory. The
    reference harness never rotates to a non-CASCADE one (omnigent 0.19.1 reader.py
    ``_detect_rotated_cascade``); a summary without the field (older agy) counts as one."""
    return not summary.trajectory_type or summary.trajectory_type == CASCADE_TRAJECTORY


def rotation_candidates(
    bound: str,
    summaries: Iterable[CascadeSummary],
    known: Collection[str] = (),
    claimed: Collection[str] = (),
) -> list[str] | None:
    """The cascades that could be our terminal's ``/clear``; ``None`` when the bound one is not listed.

    A candidate is a root user conversation (not a sub-agent, not another trajectory type) that did
    not exist when the harness bound (``known``), that no other session of this library is bound to
    (``claimed``), and that has user input newer than the bound conversation's last one.
    """
    listed = list(summaries)
    current = next((s for s in listed if s.cascade_id == bound), None)
    if current is None:  # cannot judge "newer" without the bound cascade: never guess
        return None
    since = parse_time(current.last_user_input_time)
    found: list[tuple[datetime, str]] = []
    for s in listed:
        if s.cascade_id == bound or s.cascade_id in known or s.cascade_id in claimed:
            continue
        if is_child(s) or not s.last_user_input_time or not is_conversation(s):
            continue
        when = parse_time(s.last_user_input_time)
        if when > since:
            found.append((when, s.cascade_id))
    return [cascade_id for _, cascade_id in sorted(found)]


def rotation_target(
    bound: str,
    summaries: Iterable[CascadeSummary],
    known: Collection[str] = (),
    claimed: Collection[str] = (),
) -> str | None:
    """The conversation our terminal's ``/clear`` moved to, on positive evidence only, else ``None``.

    Exactly one candidate (:func:`rotation_candidates`): an agy terminal's ``/clear`` leaves one new
    conversation behind it; two fresh unclaimed conversations mean somebody else is at work on the
    same language server, and the harness does not guess which (if any) is ours.
    """
    candidates = rotation_candidates(bound, summaries, known, claimed)
    if not candidates or len(candidates) != 1:
        return None
    return candidates[0]


def on_screen(text: str, rows: Sequence[str]) -> bool:
    """Whether user input ``text`` shows on agy's terminal screen (``rows``): its first line, or
    the first 60 characters of it, whitespace collapsed (the screen wraps and indents)."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    wanted = " ".join(first.split())[:60]
    return bool(wanted) and wanted in " ".join(" ".join(rows).split())


def rotated_state(old: MapperState) -> MapperState:
    """The state a new cascade starts from: usage totals and model carry over, nothing else."""
    return MapperState(
        input_tokens=old.input_tokens,
        output_tokens=old.output_tokens,
        cache_read_tokens=old.cache_read_tokens,
        model=old.model,
    )
