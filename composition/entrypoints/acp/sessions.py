"""One ACP session = one agy conversation (cascade), built from the composition root like every entry
point: a container bound once (:meth:`.binding.AgyTarget.bind`), with this session's sink, a memory
cursor store and the client's model choice overriding the root's providers, then ``session_from``.

* ``session/new``: bind an agy (the embedded simulator, ``--port``, ``--tmux``'s pane, discovery),
  mint a fresh cascade with ``StartCascade`` on that binding and open a harness session on it. The
  ACP session id is the cascade id.
* ``session/load``: read the cascade's steps once, map them with the core reconciler, replay them to
  the client as ``session/update``s, then open the live session with that reconciler's state as its
  cursor, so the live stream continues exactly where the replay ended (nothing twice, nothing lost;
  a gate still waiting is left out of the cursor so that it is asked live).
* ``session/resume``: the same read and cursor, nothing replayed.
* ``session/prompt``: send the turn, stream updates until agy's turn ends (status idle / failed); a
  harness command (:mod:`.commands`) is answered without a turn. The prompt's turn is the first user
  message agy records after the send (``SendUserCascadeMessage`` answers ``{}``: no execution id to
  tie it by), never found by comparing texts: agy's echo of a prompt over 4 MiB is cut.
* ``session/cancel``: the harness's interrupt (cancels agy's steps and denies a parked gate).
* ``session/close``: the harness session stops; agy keeps the conversation.
* ``session_info_update``: agy's title and last activity (:mod:`.session_info`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

from acp import RequestError
from acp import helpers as h
from acp.schema import ConfigOptionUpdate, PromptResponse, SessionConfigOptionSelect, StopReason, Usage

from agy_harness.adapters.sinks.asks import PendingAsks
from agy_harness.core.reconciler import Reconciler
from agy_harness.core.turns import TurnEnded, Turns, TurnStarted, UsageTotals, spent
from agy_harness.ports.events import Event, GateOpened, ModelChanged, Rotation, StatusChanged, UserMessage
from agy_harness.ports.protocols import Cursor, GateAnswer, StepSnapshot

from ...root.container import AgyContainer, resuming_from
from ...root.dependency_injection import providers
from ...root.session import Session, session_from
from ...service.run_status import run_over
from . import commands
from .changes import gate_change
from .gates import CancelOutgoing, GateAsker
from .mapping import TERMINAL_ONLY, UpdateMapper
from .models import ModelOption
from .session_info import SessionInfoFollower
from .terminal_cards import TerminalCards

log = logging.getLogger("agy_harness.acp.sessions")

CANCEL_GRACE = 10.0  # seconds a cancelled prompt waits for agy to report the turn over


@dataclass
class Turn:
    text: str
    usage_at_start: UsageTotals
    done: asyncio.Future[tuple[str, str]] = field(  # (agy's status, reason) when the turn is over
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    started: bool = False
    echoed: bool = False
    cancelled: bool = False


class AcpSink:
    """The harness's EventSink for one ACP session: events -> ``session/update``, gates -> the client."""

    surface = "acp"  # where its human decides (the decision ledger)

    def __init__(self, owner: AcpSession) -> None:
        self.owner = owner
        self._asks = PendingAsks()

    async def deliver(self, events: Sequence[Event]) -> int:
        for event in events:
            await self.owner.on_event(event)
        return len(events)

    async def ask(self, gate: GateOpened) -> GateAnswer:
        return await self._asks.run(gate.gate_id, self.owner.asker.ask(gate), f"acp-ask-{gate.gate_id}")

    async def withdraw(self, gate_id: str) -> None:
        self._asks.cancel(gate_id)  # withdraw alone ends the ask; GateAsker cancels the client's request


class AcpSession:
    def __init__(
        self,
        conn: Any,
        session_id: str,
        *,
        cancel_outgoing: CancelOutgoing,
        forms: bool,
        fs_read: bool = False,
    ) -> None:
        self.conn = conn
        self.id = session_id
        self.mapper = UpdateMapper()
        self.terminal = TerminalCards()  # cards only agy's terminal answers: ended as agy's outcome
        self.turns = Turns()
        #: the client's ``fs/read_text_file`` (its buffers, unsaved edits included), when it offers it
        self.read_text = self._read_text if fs_read else None
        self.asker = GateAsker(
            conn,
            session_id,
            self.mapper,
            cancel_outgoing=cancel_outgoing,
            forms=forms,
            read_text=self.read_text,
        )
        self.session: Session | None = None
        self.cascades = {session_id}  # this conversation's cascades (agy's /clear adds one)
        self.turn: Turn | None = None
        self.model = ModelOption()
        self.info: SessionInfoFollower | None = None  # agy's title and last activity
        self.notices: list[str] = []  # what the editor must be told about this session (announce)
        self._stack = AsyncExitStack()

    # -- lifecycle ---------------------------------------------------------------------------

    async def open(self, container: AgyContainer, discovered: bool, cursor: Cursor | None = None) -> None:
        """Start the harness on ``container`` (its endpoint already bound: not bound again)."""
        store = resuming_from(cursor)
        container.config.cascade_id.from_value(self.id)
        container.sink.override(providers.Object(AcpSink(self)))
        container.cursor_store.override(providers.Object(store))
        # the RPC turn sender asks this session for the model: the client's choice, else agy's own
        container.model_choice.override(providers.Object(lambda: self.model.chosen))
        # the harness's own listings of agy's conversations carry agy's title for this one
        self.info = SessionInfoFollower(container.directory(), self._send_info, self.id)
        container.directory.override(providers.Object(self.info))
        self.session = await self._stack.enter_async_context(session_from(container, discovered=discovered))
        try:
            self.model.models = await container.model_catalog().models()
        except Exception as exc:
            log.warning("session %s: agy's model catalog is unavailable (%s); no model option", self.id, exc)

    async def announce(self) -> None:
        """What the client can do in this session besides prompting, and agy's title for it (sent
        once the client knows the session)."""
        await self.conn.session_update(self.id, commands.available())
        for notice in self.notices:
            await self.conn.session_update(self.id, h.update_agent_message_text(f"> {notice}\n\n"))
        if self.info is not None:
            await self.info.ready()

    async def _read_text(self, path: str) -> str:
        # one line: whether the file has text is all a card needs (a whole file could be any size)
        response = await self.conn.read_text_file(path=path, session_id=self.id, limit=1)
        return str(response.content)

    async def _send_info(self, update: Any) -> None:
        await self.conn.session_update(self.id, update)

    async def close(self) -> None:
        if self.turn is not None and not self.turn.done.done():
            self.turn.cancelled = True
            self.turn.done.cancel()
        await self._stack.aclose()

    async def read_history(self, snapshot: StepSnapshot, *, replay: bool) -> Cursor:
        """Map the conversation so far (sent to the client as ``session/update``s when ``replay``);
        the cursor the live session resumes from."""
        steps = await snapshot.read_steps(self.id)
        reconciler = Reconciler(self.id)
        for event in reconciler.feed_all(steps):
            if isinstance(event, ModelChanged):
                self.mapper.model = self.model.seen = event.model
            self.terminal.observe(event)
            for update in self.mapper.updates(event, history=True):
                if replay:
                    await self.conn.session_update(self.id, update)
        for update in self.terminal.end(self.mapper.decided):  # the conversation so far is past
            if replay:
                await self.conn.session_update(self.id, update)
        state = reconciler.state.model_copy(update={"gates": {}})  # a waiting gate is asked live
        return Cursor(
            cascade_id=self.id, committed=sorted(state.committed), state=state.model_dump(mode="json")
        )

    # -- events ------------------------------------------------------------------------------

    async def on_event(self, event: Event) -> None:
        if isinstance(event, Rotation):  # agy's /clear: the conversation goes on in a new cascade
            self.cascades.add(event.new_cascade_id)
            if self.info is not None:
                self.info.moved(event.new_cascade_id)
            if self.turn is not None and not self.turn.done.done():
                self.turn.done.set_result(("idle", "the conversation was cleared"))
            return
        if event.cascade_id not in self.cascades:
            return  # a sub-agent's own stream: its card is the parent's tool call
        turn = self.turn
        self.terminal.observe(event)
        if isinstance(event, StatusChanged):
            boundary = self.turns.feed(event)  # agy's turns (core/turns.py): running opens, idle/failed ends
            if isinstance(boundary, TurnEnded):  # a card only agy's terminal answered ends as agy's did
                for update in self.terminal.end(self.mapper.decided):
                    await self.conn.session_update(self.id, update)
            if turn is not None:
                if isinstance(boundary, TurnStarted):
                    turn.started = True
                elif isinstance(boundary, TurnEnded) and turn.started and not turn.done.done():
                    turn.done.set_result((boundary.status, boundary.reason))
            return
        if isinstance(event, UserMessage) and turn is not None and not turn.echoed:
            # the first user message agy records after our send is the prompt's (agy queues a message
            # sent while a turn runs): tied by order, never by comparing texts (agy's echo of a long
            # prompt is cut), since agy's send returns nothing to tie it by (no execution id)
            turn.echoed = turn.started = True  # the client shows its own prompt already
            return
        if isinstance(event, GateOpened) and not event.answerable:  # nobody is asked: agy's terminal is
            extra, locations = await gate_change(event, self.read_text)
            card = self.mapper.gate_card(event, TERMINAL_ONLY, extra=extra, locations=locations)
            if card is not None:
                await self.conn.session_update(self.id, card)
            return
        if isinstance(event, ModelChanged):  # agy moved models (e.g. in its TUI): show it as the option
            shown = self.model.current()
            self.mapper.model = self.model.seen = event.model
            if self.model.current() != shown:
                await self.model_changed()
            return
        if self.terminal.said_on_card(event):
            return
        for update in self.mapper.updates(event):
            await self.conn.session_update(self.id, update)

    # -- turns -------------------------------------------------------------------------------

    async def model_changed(self) -> None:
        if self.model.models:
            await self.conn.session_update(
                self.id,
                ConfigOptionUpdate(
                    session_update="config_option_update", config_options=self.config_options()
                ),
            )

    async def prompt(self, text: str) -> PromptResponse:
        assert self.session is not None
        if self.turn is not None:
            raise RequestError.invalid_request({"details": "a prompt is already running in this session"})
        command = commands.parse(text)
        if command is not None:
            await self.conn.session_update(self.id, h.update_agent_message_text(await self._command(command)))
            return PromptResponse(stop_reason="end_turn")
        turn = Turn(text, self.mapper.usage.copy())
        self.turn = turn
        try:
            try:
                await self.session.send(text)
            except Exception as exc:
                raise RequestError.internal_error({"details": f"agy did not take the turn: {exc}"}) from exc
            try:
                status, reason = await turn.done
                if status == "idle" and self.info is not None:
                    # agy's reply is not its run's end (a first turn's checkpoint follows it): the
                    # prompt ends once agy lists the run idle (a cancel ends it at once); asked of the
                    # harness's directory itself, so the session info follows only the harness's listings
                    session = self.session
                    directory = self.info.directory
                    await run_over(directory, lambda: session.cascade_id, stop=lambda: turn.cancelled)
            except asyncio.CancelledError:
                if turn.cancelled:
                    return self._response("cancelled", turn)
                raise
        finally:
            self.turn = None
        if turn.cancelled:
            return self._response("cancelled", turn)
        if status == "failed":
            raise RequestError(
                -32603,
                f"agy's turn failed: {reason or 'agy gave no reason'}",
                {"reason": "turn_failed", "details": reason},
            )
        return self._response("end_turn", turn)

    async def _command(self, command: commands.Command) -> str:
        """Carry out a harness command (only ``/model`` today); the reply the client shows."""
        if not self.model.models:
            return "agy's model catalog is not available, so the model cannot be changed here."
        if not command.argument:
            current = self.model.current()
            rows = [f"- {m.label or m.model} (`{m.model}`){' ← current' if m.model == current else ''}"
                    for m in self.model.models]  # fmt: skip
            return "agy's models:\n" + "\n".join(rows)
        found = self.model.find(command.argument)
        if found is None:
            return f"agy has no model {command.argument!r}; `/model` lists them."
        self.model.choose("model", found.model)
        await self.model_changed()
        return f"The next turns run on {found.label or found.model}."

    def _response(self, reason: StopReason, turn: Turn) -> PromptResponse:
        turn_usage = spent(turn.usage_at_start, self.mapper.usage)
        usage = Usage(
            total_tokens=turn_usage.input + turn_usage.output,
            input_tokens=turn_usage.input,
            output_tokens=turn_usage.output,
            cached_read_tokens=turn_usage.cache_read,
        )
        return PromptResponse(stop_reason=reason, usage=usage)

    async def cancel(self) -> None:
        """``session/cancel``: interrupt agy (a parked gate is denied); the prompt ends ``cancelled``."""
        turn = self.turn
        if turn is not None:
            turn.cancelled = True
        self.asker.refuse_asked()  # the interrupt denies them: the mapper must know before agy says so
        if self.session is not None:
            try:
                report = await self.session.interrupt()
                log.info("session %s: %s", self.id, report.detail)
            except Exception as exc:  # agy unreachable: the prompt still ends, cancelled, after the grace
                log.warning("session %s: agy's interrupt failed (%s)", self.id, exc)
        if turn is not None and not turn.done.done():
            loop = asyncio.get_running_loop()
            handle = loop.call_later(CANCEL_GRACE, lambda: turn.done.done() or turn.done.cancel())
            await asyncio.wait({turn.done})  # its end (a cancel too); our own cancel propagates
            handle.cancel()

    # -- models ------------------------------------------------------------------------------

    def config_options(self) -> list[SessionConfigOptionSelect]:
        return self.model.config_options()

    def choose(self, config_id: str, value: Any) -> None:
        self.model.choose(config_id, value)


def prompt_text(blocks: Sequence[Any]) -> str:
    """The turn's text from ACP content blocks: text as is, a resource link as its URI."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            parts.append(block.uri)
        elif kind == "resource" and hasattr(block.resource, "text"):
            parts.append(f"{block.resource.uri}:\n{block.resource.text}")
        else:
            raise RequestError.invalid_params(
                {"details": f"agy takes text; a {kind or 'non-text'} block was sent"}
            )
    text = "\n".join(p for p in parts if p)
    if not text.strip():
        raise RequestError.invalid_params({"details": "the prompt has no text"})
    return text


__all__ = ["AcpSession", "prompt_text"]
