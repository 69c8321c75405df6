"""agy_harness.composition: the composition root, the version gate and the public API.

from agy_harness.composition import open_session
"""

from .container import AgyContainer, make_container
from .harness import Harness, HarnessOptions, InterruptReport
from .session import QueueSink, Session, open_session, session_from, to_answer

__all__ = [
    "AgyContainer",
    "Harness",
    "HarnessOptions",
    "InterruptReport",
    "QueueSink",
    "Session",
    "make_container",
    "open_session",
    "session_from",
    "to_answer",
]
