"""The public Python API: one agy conversation as an async session.

    from agy_harness.composition import open_session

    async with open_session(port=agy_port) as s:        # or base_url=..., or discovery by cascade id
        await s.send("Say hello in one short sentence.")
        async for event in s.events():
            if event.type == "gate_opened":
                await s.answer(event.gate_id, True)         # approve a command / pick option "1" ...
            if event.type == "status" and event.status == "idle":
                break

``open_session`` binds agy's loopback port (discovery, or the ``port``/``base_url`` you give), runs the
version gate to pick adapters (stream or poll or transcript tail; RPC or tmux turn-send), and starts a
:class:`~agy_harness.composition.service.harness.Harness`, all built by the composition root
(:mod:`agy_harness.composition.root.container`; :func:`session_from` runs a container you configured).
Events arrive on ``s.events()`` unless you pass your own ``sink`` (the terminal renderer, the
omnigent sink).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.discovery import Resolver
from agy_harness.adapters.sinks.queue import QueueSink
from agy_harness.core.answers import CheckedAnswer, parse_answer
from agy_harness.ports.errors import (
    AgyCallFailed,
    AgyNotFound,
    AgyUnreachable,
    AnswerNotDelivered,
    UnknownGate,
)
from agy_harness.ports.events import Event, GateOpened
from agy_harness.ports.policy import GatePolicy
from agy_harness.ports.protocols import CursorStore, DecisionLedger, EventSink, GateAnswer, ModelCatalog
from agy_harness.ports.tasks import reap

from ..service.harness import Harness, HarnessOptions, InterruptReport
from .container import AgyContainer, bind_conversation, bind_endpoint, make_container
from .version_gate import Capabilities

__all__ = ["AnswerLike", "QueueSink", "Session", "open_session", "session_from", "to_answer"]

log = logging.getLogger("agy_harness.session")

AnswerLike = GateAnswer | bool | str | Sequence[str] | Sequence[Sequence[str]]


def to_answer(gate: GateOpened, value: AnswerLike) -> CheckedAnswer:
    """A checked answer (:class:`~agy_harness.core.answers.CheckedAnswer`, bound to ``gate``) from a
    convenient value; fails closed (see :mod:`agy_harness.core.answers`).

    Permission: ``True`` / ``"allow"`` / ``"yes"`` / ``"y"`` allow; ``False`` / ``"deny"`` / ``"no"`` /
    ``"n"`` deny. Question: ``"2"`` or a label picks one option (other text is the write-in);
    ``["1", "3"]`` several (or one per question when the gate has several questions);
    ``[["1"], ["2", "3"]]`` one list per question. ``"decline"``/``"cancel"`` refuse. A lasting grant:
    ``"allow conversation"`` / ``"allow workspace"`` / ``"allow project"`` / ``"allow always"`` or
    ``GateAnswer(allow=True, scope=...)``, only a scope in ``gate.scopes``; an edited command:
    ``"edit: <command>"`` or ``GateAnswer(allow=True, edited_command=...)``, only where
    ``gate.editable``. Each kind agy's descriptors answer (issue 45: a browser action, an MCP tool, a
    file outside the workspace, a deploy...) is a permission: allow / deny as above (a deploy's deny is
    its cancel). An MCP server's request for input: ``'accept: {"field": ...}'`` or
    ``GateAnswer(allow=True, content=...)`` accepts with that content (checked against what it asks);
    ``"decline"`` / ``"cancel"`` as said. ``GateAnswer(allow=True, sandbox_override=True)`` runs a
    command outside agy's sandbox. Anything else raises :class:`~agy_harness.core.answers.AnswerError`
    (a ValueError) and sends nothing.
    """
    return parse_answer(gate, value)


@dataclass
class Session:
    harness: Harness
    capabilities: Capabilities
    sink: EventSink
    _gates: dict[str, GateOpened]
    _models: ModelCatalog | None = None
    _endpoint: Callable[[], str] = str

    @property
    def cascade_id(self) -> str:
        """The bound cascade (it moves on ``/clear``)."""
        return self.harness.cascade_id

    @property
    def base_url(self) -> str:
        """Where agy's language server is bound (it follows agy to a new port after a restart)."""
        return self._endpoint()

    async def model_names(self) -> dict[str, str]:
        """agy's model ids -> display names, from its catalog (empty when agy does not say: a display
        nicety never fails the session)."""
        if self._models is None:
            return {}
        try:
            return {m.model: m.label for m in await self._models.models() if m.label}
        except Exception as exc:
            log.info("no model catalog: %s", exc)
            return {}

    async def events(self) -> AsyncIterator[Event]:
        """Every event, in order, as it happens. Only with the default sink."""
        if not isinstance(self.sink, QueueSink):
            raise RuntimeError(
                "events() needs the default sink; this session delivers to " + type(self.sink).__name__
            )
        while True:
            event = await self.sink.queue.get()
            if isinstance(event, GateOpened):
                self._gates[event.gate_id] = event
            yield event

    async def send(self, text: str) -> str:
        """Start a user turn; returns which turn sender served it ("rpc" or "tmux")."""
        return await self.harness.send(text)

    async def answer(self, gate_id: str, value: AnswerLike, *, surface: str = "api") -> None:
        """Answer a gate (see :func:`to_answer` for the accepted values). ``surface`` names the front
        end the human answered on (board, acp, omnigent, attach, demo; api by default): the decision
        ledger records it.

        Returns once agy took it. Raises UnknownGate (a KeyError) for a gate this session never saw,
        :class:`~agy_harness.core.answers.AnswerError` (a ValueError) for an answer that is not an
        unambiguous answer to this gate (nothing is sent), AnswerNotDelivered (a RuntimeError) when
        agy took no answer: the gate already took one, it closed, or agy now asks something else (a
        notice event says which). All three are :class:`~agy_harness.ports.errors.AgyHarnessError`.
        """
        gate = self._gates.get(gate_id)
        if gate is None and isinstance(self.sink, QueueSink):
            gate = self.sink.pending_gate(gate_id)
        if gate is None:
            raise UnknownGate(f"unknown gate {gate_id!r}")
        answer = to_answer(gate, value)
        # the harness delivers it to exactly this gate's request (or to agy's re-ask of it after a
        # timeout), ends the pending ask, and refuses a second answer or a request that changed
        by = self.harness.gates.decisions.by(surface=surface)
        if not await self.harness.answer(gate, answer, decided_by=by):
            raise AnswerNotDelivered(f"gate {gate_id} could not be answered (see the notice events)")

    async def interrupt(self) -> InterruptReport:
        """Stop agy's current work (a parked gate is denied)."""
        return await self.harness.interrupt()


@asynccontextmanager
async def session_from(
    container: AgyContainer,
    *,
    discovered: bool | None = None,
    presence: Callable[[str], None] | None = None,
) -> AsyncIterator[Session]:
    """Bind agy through ``container``, build its harness, yield a started :class:`Session`.

    Everything is stopped on exit; the RPC client too, unless it was given (``container.client``
    overridden). See :mod:`agy_harness.composition.root.container` for building the container.
    ``discovered`` (what :func:`bind_endpoint` returned) says the caller bound the endpoint already:
    it is not bound a second time. ``presence`` is told, once per change, when agy goes away and
    comes back (a discovered agy is followed to its new port; see :func:`_follow_restarts`).
    """
    if discovered is None:
        discovered = await bind_endpoint(container)
    client: RpcClient = container.client()
    watcher: asyncio.Task[None] | None = None
    try:
        await bind_conversation(container)
        harness: Harness = container.harness()
        if discovered:
            watcher = asyncio.create_task(
                _follow_restarts(
                    client,
                    container.discovery(),
                    cascade=lambda: harness.conversation.cascade_id,
                    presence=presence,
                ),
                name="agy-harness-port-watch",
            )
        async with harness:
            yield Session(
                harness,
                container.capabilities(),
                container.sink(),
                {},
                container.model_catalog(),
                lambda: client.base_url,
            )
    finally:
        if watcher is not None:
            watcher.cancel()
            await reap(watcher)
        if not container.client.overridden:
            await client.aclose()


@asynccontextmanager
async def open_session(
    *,
    base_url: str | None = None,
    port: int | None = None,
    cascade_id: str | None = None,
    pids: Sequence[int] | None = None,
    pane_pid: int | None = None,
    tmux_target: str | None = None,
    tmux_server: Any = None,
    csrf_token: str | None = None,
    sink: EventSink | None = None,
    cursor_store: CursorStore | None = None,
    transcript_root: Path | None = None,
    version_text: str | None = None,
    poll_interval: float = 0.25,
    stream_idle_timeout: float = 20.0,
    options: HarnessOptions | None = None,
    ledger: DecisionLedger | Literal["default"] | None = "default",
    policy: GatePolicy | None = None,
) -> AsyncIterator[Session]:
    """Bind a running agy and yield a started :class:`Session`; everything is stopped on exit.

    Give ``base_url`` or ``port`` to skip discovery (the port is still verified), else agy processes
    are scanned (``pids`` / ``pane_pid`` narrow the scan) for the port serving ``cascade_id``.
    ``tmux_target`` (agy's pane; ``tmux_server`` a libtmux.Server when not the default socket)
    enables the tmux turn sender as the fallback for RPC turn-send. ``ledger``: where gate decisions
    are recorded (default: this install's file ledger in the private state directory; None: nowhere).
    """
    container = make_container(
        base_url=base_url,
        port=port,
        cascade_id=cascade_id,
        pids=pids,
        pane_pid=pane_pid,
        tmux_target=tmux_target,
        tmux_server=tmux_server,
        csrf_token=csrf_token,
        sink=sink,
        cursor_store=cursor_store,
        transcript_root=transcript_root,
        version_text=version_text,
        poll_interval=poll_interval,
        stream_idle_timeout=stream_idle_timeout,
        options=options,
        ledger=ledger,
        policy=policy,
    )
    async with session_from(container) as session:
        yield session


#: what a session says about agy's presence (``session_from(..., presence=...)``): once per change
GONE = "agy is gone — waiting; Ctrl-D detaches"
BACK = "agy is back on port {port}"
ELSEWHERE = (
    "agy answers again on port {port} but without conversation {cascade}: not followed; "
    "Ctrl-D detaches, then `agy-harness attach` follows that agy"
)

ELSEWHERE_LEAD = ELSEWHERE.split("{", 1)[0]


async def _follow_restarts(
    client: RpcClient,
    resolver: Resolver,
    interval: float = 0.5,
    *,
    cascade: Callable[[], str | None] = lambda: None,
    presence: Callable[[str], None] | None = None,
) -> None:
    """agy restarted on a new port: find it again and re-point the client. Only an agy that hosts the
    session's conversation (``cascade()``) is bound again: another agy (a new one without it) is said
    once, never re-bound and polled. Each change of agy's presence is said once, through
    ``presence`` (and logged at INFO), never once per attempt."""
    misses = 0
    said = ""

    def say(text: str) -> None:
        nonlocal said
        if text != said:
            said = text
            log.info("%s", text)
            if presence is not None:
                presence(text)

    while True:
        await asyncio.sleep(interval)
        try:
            await client.call("Heartbeat", {}, timeout=2.0)
            misses = 0
            if said == GONE:  # the same port answers again
                say(BACK.format(port=check_port(client.base_url)))
            continue
        except AgyUnreachable:
            misses += 1
        except AgyCallFailed:
            continue
        if misses < 2:
            continue
        if said == "" or said.startswith("agy is back"):  # (after ELSEWHERE it stays said)
            say(GONE)
        current = cascade()
        if current is not None and getattr(resolver, "cascade_id", None) != current:
            resolver.cascade_id = current  # re-bind only the agy that hosts this conversation
        try:
            binding = await resolver.re_resolve(deadline=interval * 4)
        except AgyNotFound as exc:
            # said once per absence: another agy coming and going meanwhile is no news
            if exc.wrong_cascade and not said.startswith(ELSEWHERE_LEAD):
                say(ELSEWHERE.format(port=_port_of(str(exc)), cascade=current))
            log.debug("agy's port is gone and no agy with the conversation answers yet: %s", exc)
            continue
        except Exception as exc:
            log.debug("agy's port is gone and no new one answers yet: %s", exc)
            continue
        if binding.base_url != client.base_url:
            client.rebind(binding.base_url, csrf_token=binding.csrf_token)
        say(BACK.format(port=binding.port))
        misses = 0


def check_port(base_url: str | None) -> str:
    """The port of ``base_url`` as text ("?" when unknown)."""
    tail = (base_url or "").rsplit(":", 1)[-1].split("/", 1)[0]
    return tail if tail.isdigit() else "?"


def _port_of(text: str) -> str:
    """The port(s) a discovery message names ("port 4123", "ports 4123, 4124")."""
    import re

    found = re.search(r"ports? \[?([\d, ]+\d)", text)  # "port 4123", "ports [4123, 4124]"
    return found.group(1) if found else "?"
