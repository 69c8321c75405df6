"""Rotation (agy's ``/clear``): which cascade, if any, the harness must follow next. Pure."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime

from agy_harness.ports.protocols import CascadeSummary

from .reconciler import MapperState
from .stamps import parse_time

__all__ = ["is_child", "is_conversation", "parse_time", "rotated_state", "rotation_target"]


def is_child(summary: CascadeSummary) -> bool:
    """A sub-agent's cascade: it names a parent, or a root other than itself."""
    return bool(summary.parent_id) or bool(summary.root_id and summary.root_id != summary.cascade_id)


CASCADE_TRAJECTORY = "CORTEX_TRAJECTORY_TYPE_CASCADE"


def is_conversation(summary: CascadeSummary) -> bool:
    """A user conversation (``trajectoryType`` CASCADE), not another kind of trajectory. The
    reference harness never rotates to a non-CASCADE one (omnigent 0.19.1 reader.py
    ``_detect_rotated_cascade``); a summary without the field (older agy) counts as one."""
    return not summary.trajectory_type or summary.trajectory_type == CASCADE_TRAJECTORY


def rotation_target(
    bound: str, summaries: Iterable[CascadeSummary], known: Collection[str] = ()
) -> str | None:
    """The NEW root cascade with user activity newer than the bound one's, or ``None``.

    ``known`` are the cascades that already existed when the harness bound (other conversations of
    the same language server): activity there is somebody else's, never our ``/clear``. Sub-agents
    are not rotations, nor is a non-CASCADE trajectory, nor a minted cascade nobody has typed into yet.
    """
    listed = list(summaries)
    current = next((s for s in listed if s.cascade_id == bound), None)
    if current is None:  # cannot judge "newer" without the bound cascade: never guess
        return None
    since = parse_time(current.last_user_input_time)
    best: tuple[datetime, str] | None = None
    for s in listed:
        if s.cascade_id == bound or s.cascade_id in known or is_child(s) or not s.last_user_input_time:
            continue
        if not is_conversation(s):
            continue
        when = parse_time(s.last_user_input_time)
        if when > since and (best is None or when > best[0]):
            best = (when, s.cascade_id)
    return best[1] if best else None


def rotated_state(old: MapperState) -> MapperState:
    """The state a new cascade starts from: usage totals and model carry over, nothing else."""
    return MapperState(
        input_tokens=old.input_tokens,
        output_tokens=old.output_tokens,
        cache_read_tokens=old.cache_read_tokens,
        model=old.model,
    )
