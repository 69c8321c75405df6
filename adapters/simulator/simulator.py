"""The agy simulator: a loopback agy language server with a scripted model (see ``scenarios``).

    async with Simulator(profile="1.0.10", gate_timeout=None) as sim:
        await sim.submit_user_turn("run: pwd")
        await sim.wait_idle()
        sim.steps()   # poll projection

All state lives in the caller's event loop; callbacks (``subscribe``) run on it, synchronously.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agy_harness.ports.tasks import reap

from . import code_review, interactions, unary
from . import steps as st
from .catalog import DEFAULT_MODEL, MODELS
from .faults import Faults
from .grants import Grants
from .host import CascadeHost, StepCallback
from .profiles import DEFAULT_PROFILE, Profile, get_profile
from .server import App, Listener
from .state import (
    IDLE,
    RUNNING,
    Cascade,
    RpcFailure,
    Watcher,
)
from .views import announce, summary_of

__all__ = ["IDLE", "MODELS", "RUNNING", "Cascade", "RpcFailure", "Simulator", "Watcher"]

log = logging.getLogger("agy_harness.simulator")

DEFAULT_WORKSPACE = "/home/agy/.gemini/antigravity-cli/scratch"
DEFAULT_HOME = "/home/agy"


class Simulator(CascadeHost):
    def __init__(
        self,
        profile: str = DEFAULT_PROFILE,
        *,
        gate_timeout: float | None = None,
        gate_reasks: int = 3,
        pace: float = 0.05,
        workspace: str = DEFAULT_WORKSPACE,
        home: str = DEFAULT_HOME,
        model: str = DEFAULT_MODEL,
        host: str = "127.0.0.1",
        log_file: str | Path | None = None,
    ) -> None:
        self.profile: Profile = get_profile(profile)
        self.version = self.profile.version
        self.gate_timeout = gate_timeout
        self.gate_reasks = gate_reasks
        self.pace = pace
        self.workspace = workspace
        self.home = home
        self.model = model
        #: the models this agy lists (GetAvailableModels): a test may add one, as agy does after an update
        self.models: dict[str, dict[str, Any]] = copy.deepcopy(MODELS)
        self.faults = Faults()
        self.session_id = st.session_id()
        #: summaries of trajectories that are not this simulator's conversations (tests: a
        #: non-CASCADE sibling), listed by GetAllCascadeTrajectories as given
        self.extra_summaries: dict[str, dict[str, Any]] = {}
        #: every RPC method called, in order (tests may assert on it)
        self.calls: list[str] = []
        #: every command agy "ran" (it was allowed, or needed no approval): (command line, cwd) as
        #: the step held them at that moment; nothing is ever executed
        self.executed: list[tuple[str, str]] = []
        #: every HandleCascadeUserInteraction received, in order: (cascadeId, interaction as sent),
        #: refused ones too -- what agy was told (tests read it as "what the human's answer became")
        self.received: list[tuple[str, dict[str, Any]]] = []
        #: every AcknowledgeCodeActionStep received, in order, as sent (refused ones too): what agy was
        #: told of its file-edit reviews
        self.acknowledged: list[dict[str, Any]] = []
        #: each reviewed file as agy leaves it (the new text if the edit was accepted, else the old):
        #: what the user finds on disk (nothing is written)
        self.files: dict[str, str] = {}
        #: the lasting grants agy keeps (``permission.scope``): a covered request runs without asking
        self.grants = Grants()
        self._host = host
        self.log_file = Path(log_file) if log_file is not None else None
        self._cascades: dict[str, Cascade] = {}
        self._subscribers: list[StepCallback] = []
        self._tick = asyncio.Event()
        self._app = App(self)
        self._listener: Listener | None = None
        self._started = False
        first = self._new_cascade()
        self.cascade_id = first.id

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._listener.port if self._listener else 0

    @property
    def plain_port(self) -> int:
        return self._listener.plain_port if self._listener else 0

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    async def start(self) -> Simulator:
        if self._started:
            return self
        self._tick = asyncio.Event()
        for c in self._cascades.values():
            c.cancel = asyncio.Event()
        listener = Listener(self._app, self._host)
        listener.bind()
        await listener.start()
        self._listener = listener
        self._started = True
        self._announce()
        return self

    def _announce(self) -> None:  # agy's port lines, in its log
        if self.log_file is not None and self._listener is not None:
            announce(self.log_file, self._listener.port, self._listener.plain_port)

    async def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        await self._close_streams("trailer")
        if self._listener is not None:
            await self._listener.stop()
        workers = [c.worker for c in self._cascades.values() if c.worker is not None]
        for task in workers:
            task.cancel()
        await reap(*workers)

    async def restart(self) -> None:
        """agy restarted: the same conversations on a NEW port; open streams die without a trailer."""
        old = self._listener
        new = Listener(self._app, self._host)
        new.bind()  # bound before the old sockets close: the port is guaranteed to differ
        await self._close_streams("abrupt")
        if old is not None:
            await old.stop()
        await new.start()
        self._listener = new
        self._announce()

    async def _close_streams(self, how: str) -> None:
        watchers = [w for c in self._cascades.values() for w in c.watchers]
        for w in watchers:
            w.closed = how
            w.event.set()
        # let the stream handlers write their last frame
        for _ in range(50):
            if not any(c.watchers for c in self._cascades.values()):
                break
            await asyncio.sleep(0.01)

    async def __aenter__(self) -> Simulator:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- the public surface -----------------------------------------------------------------
    def steps(self, cascade_id: str | None = None) -> list[dict[str, Any]]:
        """The poll projection of every step of ``cascade_id`` (default: the current cascade)."""
        return copy.deepcopy(self._cascade(cascade_id).steps)

    def stream_steps(self, cascade_id: str | None = None) -> list[dict[str, Any]]:
        """The stream projection of every step (what a replay frame carries)."""
        return [st.stream_projection(s) for s in self._cascade(cascade_id).steps]

    def subscribe(self, callback: StepCallback) -> Callable[[], None]:
        """``callback(cascade_id, step)`` on every step change (poll projection); returns unsubscribe."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._subscribers.remove(callback)

        return unsubscribe

    def is_running(self, cascade_id: str | None = None) -> bool:
        return self._cascade(cascade_id).busy

    def cascade_ids(self) -> list[str]:
        return list(self._cascades)

    def children(self, cascade_id: str | None = None) -> list[str]:
        parent = self._cascade(cascade_id).id
        return [c.id for c in self._cascades.values() if c.parent_id == parent]

    async def submit_user_turn(
        self, text: str, *, cascade_id: str | None = None, model: str | None = None
    ) -> str:
        """As if typed in agy's TUI: record USER_INPUT and run the scripted model (queued while a
        turn runs). ``/clear`` mints a new cascade instead. Returns the turn's executionId (or, for
        ``/clear``, the new cascade id)."""
        if text.strip() == "/clear":
            return await self.clear()
        return self._submit(self._cascade(cascade_id), text, model or self.model)

    async def clear(self) -> str:
        """``/clear``: a new (empty, stepCount 0) root cascade becomes the current one."""
        c = self._new_cascade()
        self.cascade_id = c.id
        self._bump()
        return c.id

    async def start_cascade(self) -> str:
        """``StartCascade``: a new root cascade (the current one stays current)."""
        return self._new_cascade().id

    async def cancel(self, cascade_id: str | None = None) -> bool:
        """``CancelCascadeSteps``: stops a generating turn; a turn parked on a gate is NOT freed."""
        c = self._cascade(cascade_id)
        if not c.busy or c.parked:
            return False
        c.cancel.set()
        return True

    async def handle_interaction(
        self, cascade_id: str, interaction: dict[str, Any], *, terminal: bool = False
    ) -> None:
        """``HandleCascadeUserInteraction``; raises RpcFailure(500, "input not registered for step N").
        ``terminal``: the answer comes from agy's own terminal (:meth:`resolve_in_terminal`), not over
        RPC (a file permission is taken only from there)."""
        self.received.append((cascade_id, copy.deepcopy(interaction)))
        c = self._cascades.get(cascade_id)
        if c is None:  # agy's words for an interaction with no run behind it
            raise RpcFailure(500, "unknown", f"run state not found ({cascade_id})")
        perm = interaction.get("permission") if isinstance(interaction, dict) else None
        if self.faults.refuse_scope and isinstance(perm, dict) and "scope" in perm:
            raise RpcFailure(400, "invalid_argument", 'proto: unknown field "scope"')
        refused = self.faults.refuse_kinds & set(interaction) if isinstance(interaction, dict) else set()
        if refused and not terminal:  # an agy that takes no such answer over RPC
            index = interaction.get("stepIndex")
            raise RpcFailure(500, "unknown", f"input not registered for step {index}")
        index, response = interactions.apply(c, interaction, terminal=terminal)
        self.grants.take(c.id, c.steps[index].get("requestedInteraction") or {}, response)
        gate = c.gates[index]
        del c.gates[index]
        gate.future.set_result(response)
        self._changed(c, index)

    async def acknowledge_code_action(self, request: dict[str, Any]) -> None:
        """``AcknowledgeCodeActionStep``: accept or reject the waiting file-edit reviews it names (see
        :mod:`.code_review`); raises RpcFailure for any other shape."""
        self.acknowledged.append(copy.deepcopy(request))
        c = self._cascades.get(str(request.get("cascadeId") or ""))
        if c is None:
            raise RpcFailure(500, "unknown", f"run state not found ({request.get('cascadeId')})")
        for index, answer in code_review.check(c, request):
            gate = c.gates.pop(index)
            gate.future.set_result(answer)
            self._changed(c, index)

    async def resolve_in_terminal(
        self, cascade_id: str | None = None, *, accept: bool = True, kind: str = "other", **how: Any
    ) -> int:
        """A human answers the waiting gate of ``kind`` in agy's own terminal (see
        :func:`.interactions.terminal_answer`; ``kind="review"``: a file-edit review, accepted or
        rejected there). Returns the step index; KeyError if none waits."""
        c = self._cascade(cascade_id)
        if kind == code_review.GATE_KIND:
            index = next(i for i, g in sorted(c.gates.items()) if g.kind == kind and not g.future.done())
            answer = {"accept": accept, "writtenFeedback": "", "stepIndices": [index]}
            c.gates.pop(index).future.set_result(answer)
            self._changed(c, index)
            return index
        interaction = interactions.terminal_answer(c, accept, kind=kind, **how)
        await self.handle_interaction(c.id, interaction, terminal=True)
        return int(interaction["stepIndex"])

    def time_out_gate(self, cascade_id: str | None = None) -> int:
        """The waiting gate times out now, as it does after ``gate_timeout`` seconds (its step goes
        ERROR and it is re-asked, at most ``gate_reasks`` times): a test's timeout that does not race a
        busy machine. Returns the step index; KeyError if none waits."""
        c = self._cascade(cascade_id)
        for index, gate in sorted(c.gates.items()):
            if not gate.future.done():
                gate.future.set_exception(TimeoutError())
                return index
        raise KeyError("no gate waits")

    async def send_agent_message(self, cascade_id: str, text: str) -> None:
        """``SendAgentMessage``: a SYSTEM_MESSAGE step (not a user turn; the model does not run)."""
        c = self._cascade(cascade_id)
        where = st.Where(c.id, c.trajectory_id, len(c.steps), c.planner_calls, str(uuid.uuid4()))
        self._append(c, st.system_message(where, text))

    async def wait_idle(self, timeout: float = 5.0) -> None:
        """Until every cascade's turn finished or is parked on a gate (TimeoutError otherwise)."""
        async with asyncio.timeout(timeout):
            while not self._quiet():
                tick = self._tick
                await tick.wait()

    def trajectory_summaries(self) -> dict[str, dict[str, Any]]:
        """What GetAllCascadeTrajectories lists (see :mod:`.summaries`)."""
        out = {c.id: summary_of(c, self.workspace) for c in self._cascades.values()}
        out.update(copy.deepcopy(self.extra_summaries))
        return out

    # -- RPC ---------------------------------------------------------------------------------
    async def _rpc(self, method: str, request: dict[str, Any]) -> dict[str, Any]:
        """Unary methods (see :mod:`.unary`)."""
        return await unary.handle(self, method, request)
