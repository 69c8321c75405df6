"""Fault injection for the simulator: a mutable set of switches on ``sim.faults``, flipped per test.

    sim.faults.cut_stream_once = True       # the next stream frame is cut mid-frame, then the stream ends
    sim.faults.malformed_frame_once = True  # the next stream frame's payload is not JSON (then carries on)
    sim.faults.non_dict_step_once = True    # the next update carries a non-object step beside the real ones
    sim.faults.fail("GetCascadeTrajectorySteps", status=503, times=2)   # next 2 calls answer 503
    sim.faults.delay = 0.2                  # every response (unary, and each stream frame) waits 0.2 s
    sim.faults.delay_methods = {"Heartbeat"}  # ... only for these methods (None = all)
    sim.faults.stall_stream = True          # streams send nothing (no frames, no trailer) until cleared
    sim.faults.forget_grants = True         # agy does not keep lasting grants: a covered request is asked again
    sim.faults.refuse_scope = True          # agy refuses the RPC permission.scope field (400), still waiting
    sim.faults.refuse_kinds = {"deploy"}    # this agy takes no RPC answer of these kinds ("input not
                                            # registered"), the step still waiting (an agy whose build
                                            # differs from the IDE's descriptors)
    sim.faults.rewrite_command_once = "rm -rf /tmp/x"  # a hook rewrites the next allowed command (overwrite.CommandLine)
    sim.faults.replay_listing(answer, times=2, delay=0.3)  # the next 2 GetAllCascadeTrajectories
                                            # answer ``answer`` (a listing taken earlier), each 0.3 s late
    await sim.restart()                     # the server moves to a new port (streams end without trailer)

``*_once`` switches reset themselves when they fire. ``reset()`` clears everything.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class MethodFailure:
    status: int
    times: int
    message: str


@dataclass
class Faults:
    cut_stream_once: bool = False
    malformed_frame_once: bool = False
    non_dict_step_once: bool = False
    stall_stream: bool = False
    #: drift, for ``agy-harness doctor``'s test: a field agy might add in a later version appears in
    #: every step (``metadata.futureField``), every model entry (``futureFlag``) and every frame
    drift: bool = False
    #: agy does not keep a lasting grant (``permission.scope``): a request the grant covers is asked again
    forget_grants: bool = False
    #: a hook rewrites the next allowed command before it runs (rtk-ai/rtk#3959 ``overwrite.CommandLine``):
    #: the step's ``runCommand.commandLine`` becomes this text; "" = off
    rewrite_command_once: str = ""
    #: an agy that does not take the RPC ``permission.scope`` field: an answer carrying it is refused
    #: (400 invalid_argument) and the step keeps waiting
    refuse_scope: bool = False
    #: interaction fields this agy takes no RPC answer of: "input not registered", the step still waiting
    refuse_kinds: set[str] = field(default_factory=set)
    delay: float = 0.0
    delay_methods: set[str] | None = None
    failures: dict[str, MethodFailure] = field(default_factory=dict)
    #: a listing taken earlier, answered again (late) for the next ``stale_listings`` listings: what
    #: a network that delays answers does (issue #35 case 5)
    stale_listing: dict[str, object] | None = None
    stale_listings: int = 0
    stale_listing_delay: float = 0.0
    #: What fired, in order (e.g. ``"cut_stream"``, ``"fail:Heartbeat:503"``): tests can assert on it.
    fired: list[str] = field(default_factory=list)

    def fail(self, method: str, *, status: int = 500, times: int = 1, message: str = "") -> None:
        """Answer the next ``times`` calls of ``method`` with HTTP ``status`` (500 or 503 typically)."""
        self.failures[method] = MethodFailure(status, times, message or f"injected fault ({status})")

    def take_failure(self, method: str) -> MethodFailure | None:
        failure = self.failures.get(method)
        if failure is None or failure.times <= 0:
            return None
        failure.times -= 1
        if failure.times <= 0:
            del self.failures[method]
        self.fired.append(f"fail:{method}:{failure.status}")
        return failure

    def replay_listing(self, answer: dict[str, object], *, times: int = 1, delay: float = 0.0) -> None:
        """Answer the next ``times`` GetAllCascadeTrajectories calls with ``answer``, ``delay`` late."""
        self.stale_listing, self.stale_listings, self.stale_listing_delay = answer, times, delay

    def take_stale_listing(self) -> tuple[dict[str, object], float] | None:
        if self.stale_listing is None or self.stale_listings <= 0:
            return None
        self.stale_listings -= 1
        self.fired.append("stale_listing")
        return self.stale_listing, self.stale_listing_delay

    def delay_for(self, method: str) -> float:
        if self.delay <= 0:
            return 0.0
        if self.delay_methods is not None and method not in self.delay_methods:
            return 0.0
        return self.delay

    def take(self, name: str) -> bool:
        """Consume a ``<name>_once`` switch: True (and reset it) if it was set."""
        attr = f"{name}_once"
        if getattr(self, attr):
            setattr(self, attr, False)
            self.fired.append(name)
            return True
        return False

    def reset(self) -> None:
        self.cut_stream_once = self.malformed_frame_once = self.non_dict_step_once = False
        self.stall_stream = False
        self.forget_grants = False
        self.rewrite_command_once = ""
        self.refuse_scope = False
        self.refuse_kinds = set()
        self.drift = False
        self.delay = 0.0
        self.delay_methods = None
        self.failures.clear()
        self.stale_listing, self.stale_listings = None, 0


def with_drift(value: dict[str, object], kind: str) -> dict[str, object]:
    """``value`` (a copy) with the drift fields of ``kind`` ("step", "model", "frame")."""
    out = dict(value)
    if kind == "step":
        metadata = dict(out.get("metadata") or {})  # type: ignore[call-overload]
        metadata["futureField"] = "from a newer agy"
        out["metadata"] = metadata
    elif kind == "model":
        out["futureFlag"] = True
    else:
        out["futureFrameField"] = 1
    return out
