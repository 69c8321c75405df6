"""What the simulator shows of a conversation: its ``GetAllCascadeTrajectories`` summary and its
``StreamAgentStateUpdates`` frames."""

from __future__ import annotations

from typing import Any

from . import steps as st
from .state import IDLE, RUNNING, Cascade


def summary_of(c: Cascade) -> dict[str, Any]:
    # The reference harness's live-verified shape (omnigent 0.19.1 reader.py
    # _summary_is_child_trajectory, agy 1.1.9): trajectoryType CASCADE for roots and
    # sub-agents alike; trajectoryMetadata.rootConversationId is the root itself, or for a
    # child its parent, with parentConversationId.
    summary: dict[str, Any] = {
        "trajectoryType": "CORTEX_TRAJECTORY_TYPE_CASCADE",
        "status": RUNNING if c.busy else IDLE,
        "stepCount": len(c.steps),
    }
    if c.last_user_input:
        summary["lastUserInputTime"] = c.last_user_input
    summary["lastModifiedTime"] = c.last_modified
    meta: dict[str, Any] = {}
    if c.parent_id:
        meta["parentConversationId"] = c.parent_id
        meta["rootConversationId"] = c.parent_id
    else:
        meta["rootConversationId"] = c.id
    summary["trajectoryMetadata"] = meta
    return summary


def update_frame(c: Cascade, indices: list[int]) -> dict[str, Any]:
    """A stream data frame carrying the steps at ``indices`` (stream projection)."""
    return {
        "update": {
            "conversationId": c.id,
            "status": RUNNING if c.busy else IDLE,
            "mainTrajectoryUpdate": {
                "stepsUpdate": {
                    "indices": list(indices),
                    "steps": [st.stream_projection(c.steps[i]) for i in indices],
                }
            },
        }
    }
