"""omnigent's executor interface, from whichever module layout the installed omnigent has.

omnigent 0.19.1 has it in ``omnigent.inner.executor`` and its adapter in
``omnigent.runtime.harnesses._executor_adapter``; omnigent's newer sources import the same names from
``omnigent.core.executor`` and ``omnigent.harnesses.runtime._executor_adapter`` (every built-in
harness's ``app.py`` there). The newer layout is tried first, then 0.19.1's.
"""

from __future__ import annotations

import importlib
from types import ModuleType


def _first(*names: str) -> ModuleType:
    """The first of ``names`` that imports (the last one's ImportError when none does)."""
    for name in names[:-1]:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return importlib.import_module(names[-1])


_executor = _first("omnigent.core.executor", "omnigent.inner.executor")  # newer layout, then 0.19.1's
_executor_adapter = _first(
    "omnigent.harnesses.runtime._executor_adapter", "omnigent.runtime.harnesses._executor_adapter"
)

EnqueuedContent = _executor.EnqueuedContent
Executor = _executor.Executor
ExecutorConfig = _executor.ExecutorConfig
ExecutorError = _executor.ExecutorError
ExecutorEvent = _executor.ExecutorEvent
Message = _executor.Message
ReasoningChunk = _executor.ReasoningChunk
SubAgentCompleted = _executor.SubAgentCompleted
SubAgentStarted = _executor.SubAgentStarted
SubAgentToolCall = _executor.SubAgentToolCall
TextChunk = _executor.TextChunk
ToolCallComplete = _executor.ToolCallComplete
ToolCallRequest = _executor.ToolCallRequest
ToolCallStatus = _executor.ToolCallStatus
ToolSpec = _executor.ToolSpec
TurnCancelled = _executor.TurnCancelled
TurnComplete = _executor.TurnComplete
ExecutorAdapter = _executor_adapter.ExecutorAdapter
LAYOUT = "omnigent.core" if _executor.__name__.startswith("omnigent.core") else "omnigent.inner"
