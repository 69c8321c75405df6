"""The legacy agy transcript (``transcript_full.jsonl``): its line format and a tailing step source."""

from .format import is_completed, line_to_step, step_identity, step_to_line, transcript_path
from .tail import ReadResult, TranscriptFollower, TranscriptTailSource

__all__ = [
    "ReadResult",
    "TranscriptFollower",
    "TranscriptTailSource",
    "is_completed",
    "line_to_step",
    "step_identity",
    "step_to_line",
    "transcript_path",
]
