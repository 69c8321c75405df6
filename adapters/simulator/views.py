"""What the simulator shows: a conversation's ``GetAllCascadeTrajectories`` summary, its
``StreamAgentStateUpdates`` frames, and agy's start-up lines in its log."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agy_harness.adapters.rpc.agy_log import log_line_prefix

from . import steps as st
from .state import IDLE, RUNNING, Cascade


def summary_of(c: Cascade, workspace: str) -> dict[str, Any]:
    # The reference harness's live-verified shape (omnigent 0.19.1 reader.py
    # _summary_is_child_trajectory, agy 1.1.9): trajectoryType CASCADE for roots and
    # sub-agents alike; trajectoryMetadata.rootConversationId is the root itself, or for a
    # child its parent, with parentConversationId.
    # ``workspaces[].workspaceFolderAbsoluteUri`` and ``summary`` (the title): what public
    # language-server clients read from these summaries (docs/conventions.md). That the
    # title is the first checkpoint's ``userIntent`` is a guess.
    summary: dict[str, Any] = {
        "trajectoryType": "CORTEX_TRAJECTORY_TYPE_CASCADE",
        "status": RUNNING if c.busy else IDLE,
        "stepCount": len(c.steps),
        "workspaces": [{"workspaceFolderAbsoluteUri": f"file://{workspace}"}],
    }
    title = next((s["checkpoint"].get("userIntent") for s in c.steps if "checkpoint" in s), None)
    if isinstance(title, str) and title:
        summary["summary"] = title
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
    """A stream data frame carrying the steps at ``indices`` (stream projection), sharing the steps'
    values: encode it before the conversation changes (:func:`~.steps.stream_view`)."""
    return {
        "update": {
            "conversationId": c.id,
            "status": RUNNING if c.busy else IDLE,
            "mainTrajectoryUpdate": {
                "stepsUpdate": {
                    "indices": list(indices),
                    "steps": [st.stream_view(c.steps[i]) for i in indices],
                }
            },
        }
    }


def announce(log_file: Path, port: int, plain_port: int) -> None:
    """agy's start-up lines in its log (cli.log / --log-file), which discovery reads."""
    pid = os.getpid()
    lines = [
        f"Starting language server process with pid {pid}",
        f"Language server listening on random port at {port} for HTTPS (gRPC)",
        f"Language server listening on random port at {plain_port} for HTTP",
    ]
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "a", encoding="utf-8") as fh:
        fh.writelines(log_line_prefix(pid) + line + "\n" for line in lines)
