"""The reconciler's memory (:class:`MapperState`): what it committed, what it streamed, which gates
are open, the turn, usage totals and the model. A plain model a cursor store saves and restores, so
a restarted harness resumes without repeating itself.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from agy_harness.ports.events import RunStatus


class LiveText(BaseModel):
    """What has been streamed so far for one planner step."""

    message_id: str
    text: str = ""
    text_index: int = 0
    thinking: str = ""
    thinking_index: int = 0


class MapperState(BaseModel):
    """The reconciler's memory. On the hot path the reconciler writes its fields (and a
    :class:`LiveText`'s) through ``vars()``: pydantic's ``__setattr__`` cost more than the rest of a
    step, and the values are the reconciler's own, of the field types (no validation is skipped:
    these models do not validate assignments)."""

    committed: set[str] = Field(default_factory=set)
    live: dict[str, LiveText] = Field(default_factory=dict)
    gates: dict[str, str] = Field(default_factory=dict)  # step key -> gate id, while WAITING
    status: RunStatus | None = None
    turn: str = ""  # step key of the USER_INPUT that opened the current turn
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    model: str = ""
    #: the conversation's real trajectory id, once seen (steps from agy's current transcript name
    #: none: their placeholder trajectory is mapped to it)
    trajectory_id: str = ""
