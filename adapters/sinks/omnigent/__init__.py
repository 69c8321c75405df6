"""The omnigent event sink, on omnigent 0.19.1's real wire (``pip install omnigent==0.19.1``).

* :mod:`.wire`: events -> ``POST /v1/sessions/{id}/events`` bodies (the mapping table is there);
* :mod:`.gates`: elicitation ids, the params omnigent's web UI renders, reading its answers fail-closed;
* :mod:`.transport`: retries and what each HTTP answer means;
* :mod:`.sink`: :class:`OmnigentSink` (ordering, batching, sub-agent child sessions, the gate hook).
"""

from .gates import OmnigentProtocolError, answer_from_result, elicitation_id, gate_params
from .hook import HOOK_NAME, OmnigentRejected
from .sink import OmnigentSink
from .transport import OmnigentStats, RetryPolicy
from .wire import source_id, to_wire, usage_data

__all__ = [
    "HOOK_NAME",
    "OmnigentProtocolError",
    "OmnigentRejected",
    "OmnigentSink",
    "OmnigentStats",
    "RetryPolicy",
    "answer_from_result",
    "elicitation_id",
    "gate_params",
    "source_id",
    "to_wire",
    "usage_data",
]
