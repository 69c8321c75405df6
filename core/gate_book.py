"""The reconciler's open gates: a WAITING step's gate opened, replaced when its request changes
under its card, withdrawn when agy stops waiting. Pure; the gates themselves (which are open) live in
the mapper state, so a restarted harness knows them.
"""

from __future__ import annotations

from typing import Any

from agy_harness.ports.events import Event, GateWithdrawn, built

from . import steps as S
from .binding import digest_and_clean, frozen
from .gates import gate_events, pending_request
from .steps import Step


def gate_id_for(cascade_id: str, key: S.StepKey, digest: str) -> str:
    """A gate's id names its step AND its request: another request at the same step is another gate."""
    return f"{cascade_id}/{key.trajectory_id}/{key.step_index}/{digest[:GATE_DIGEST]}"


GATE_DIGEST = 12  # digest characters in a gate id
#: why a gate is withdrawn when the request of its step changed while it waited
CHANGED = "changed: agy now asks something else"


class GateBook:
    """One conversation's gate edges, with the digest of each open gate's request (memoised)."""

    def __init__(self, cascade_id: str) -> None:
        self.cascade_id = cascade_id
        #: step key -> (what its WAITING request was made of, its digest, nothing to clean): a WAITING
        #: step is re-fed on every frame and poll that carries it; its digest is computed again only
        #: when it changed
        self._digests: dict[str, tuple[tuple[Any, ...], str, bool]] = {}

    def events(self, step: Step, sk: str, gates: dict[str, str]) -> list[Event]:
        """The gate events of ``step`` (key ``sk``): opened when it waits, withdrawn when it stops
        waiting or asks something else; ``gates`` (the mapper state's) says which are open."""
        pending = pending_request(step)
        gate_id = gates.get(sk)
        if pending is None:
            if gate_id is None:
                return []
            del gates[sk]
            self._digests.pop(sk, None)
            if S.interaction_response(step) is not None or step.status in ("RUNNING", "DONE"):
                reason = "answered"
            elif step.status == "ERROR":
                reason = "timed out"
            else:
                reason = step.status.lower() or "gone"
            return [self._withdrawn(sk, gate_id, reason)]
        digest, clean = self._digest(step, sk, pending)
        current = gate_id_for(self.cascade_id, step.key, digest)
        if gate_id == current:
            return []
        # a new gate; or the step's request changed under its card: that card is withdrawn first
        out = [self._withdrawn(sk, gate_id, CHANGED)] if gate_id is not None else []
        gates[sk] = current
        base = {"id": f"{sk}/gate/{digest[:GATE_DIGEST]}", "cascade_id": self.cascade_id, "step_key": sk}
        return out + gate_events(step, base, current, pending, digest, clean)

    def _digest(self, step: Step, sk: str, pending: tuple[str, str, dict[str, Any]]) -> tuple[str, bool]:
        """The request's digest, and whether the request needs no cleaning, computed once per request
        (a comparison of its exact content when it is re-fed: :func:`~.binding.frozen`, where ``1``,
        ``1.0`` and ``true`` differ as in the digest -- a plain ``==`` took them for one request)."""
        made_of = frozen(
            [
                [pending[0], pending[1], pending[2]],
                step.body,
                step.raw.get("runCommand"),
                step.metadata.get("executionId"),
                step.type,
            ]
        )
        cached = self._digests.get(sk)
        if made_of is not None and cached is not None and cached[0] == made_of:
            return cached[1], cached[2]
        digest, clean = digest_and_clean(step, *pending)
        if made_of is not None:
            self._digests[sk] = (made_of, digest, clean)
        else:
            self._digests.pop(sk, None)
        return digest, clean

    def _withdrawn(self, sk: str, gate_id: str, reason: str) -> GateWithdrawn:
        tag = gate_id.rsplit("/", 1)[-1]
        values: dict[str, Any] = {
            "id": f"{sk}/gate/{tag}/withdrawn",
            "cascade_id": self.cascade_id,
            "step_key": sk,
        }
        values["type"], values["gate_id"], values["reason"] = "gate_withdrawn", gate_id, reason
        values["decided_by"] = None  # (who decided: the gate bridge adds it, GateWithdrawn.decided_by)
        return built(GateWithdrawn, values, _WITHDRAWN_SET)


_WITHDRAWN_SET = {"id", "cascade_id", "step_key", "gate_id", "reason"}
