"""agy_harness.composition: the composition root, the version gate and the public API.

from agy_harness.composition import open_session
"""

from .harness import Harness, HarnessOptions, InterruptReport
from .session import QueueSink, Session, open_session, to_answer

__all__ = [
    "Harness",
    "HarnessOptions",
    "InterruptReport",
    "QueueSink",
    "Session",
    "open_session",
    "to_answer",
]
