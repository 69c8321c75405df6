"""The ACP agent: the SDK's ``Agent`` protocol over agy-harness sessions.

Requests that come out of order get a JSON-RPC error, never a crash: anything before ``initialize``
is ``-32600``; an unknown (or closed) session id is ``-32002``, ACP's "resource not found" (a
second ``session/close`` succeeds: closing is idempotent); a second prompt while one runs is ``-32600``. The
SDK answers unknown methods (``-32601``) and parameters its schema rejects (``-32602``). When agy is
not there, the errors of :mod:`.errors` say so in a sentence.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    CloseSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
)

from ...root.container import AgyContainer
from . import errors
from .binding import AgyTarget, close_client
from .listing import process_cwd, session_list
from .sessions import AcpSession, prompt_text
from .transport import StdioTransport
from .workspace import SessionCwds, agy_workspace, same_dir, unknown_workspace_notice

log = logging.getLogger("agy_harness.acp")

try:
    from importlib.metadata import version as _dist_version

    VERSION = _dist_version("agy-harness")
except Exception:  # running from a checkout that is not installed
    VERSION = "0"


def mcp_notice(servers: Any) -> list[str]:
    """The editor's MCP servers are not used: agy has no public way to take them (see docs/acp.md)."""
    if not servers:
        return []
    names = ", ".join(str(getattr(s, "name", "?")) for s in servers)
    log.warning("the client's %d MCP server(s) are not passed to agy: %s", len(servers), names)
    return [
        f"agy-harness: this editor's MCP servers ({names}) are not used: agy takes MCP servers only "
        "from its own mcp_config.json, read when agy starts; a running agy has no way to be handed them."
    ]


class AgyAcpAgent:
    """One ACP connection. ``target()`` says where agy is (started lazily: the simulator's port)."""

    def __init__(
        self,
        transport: StdioTransport,
        *,
        sim: dict[str, Any] | None = None,
        target: AgyTarget,
        launcher: Any = None,
    ) -> None:
        self.transport = transport
        self.conn: Any = None
        self.sessions: dict[str, AcpSession] = {}
        self.closed: set[str] = set()  # the sessions this connection closed (a second close succeeds)
        self._initialized = False
        self._forms = False
        self._fs_read = False  # the client offers fs/read_text_file (its buffers)
        self._target = target
        self._sim_options = sim
        self._sim: Any = None
        self._sim_lock = asyncio.Lock()
        self._launcher = launcher  # starts agy in tmux when none runs (``--start-agy``)
        self._tasks: set[asyncio.Task[None]] = set()
        self.cwds = SessionCwds()  # the client's cwd of each session made here (session/list)

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    # -- helpers -----------------------------------------------------------------------------

    def _require_init(self) -> None:
        if not self._initialized:
            raise RequestError.invalid_request({"details": "call initialize first"})

    def _session(self, session_id: str) -> AcpSession:
        self._require_init()
        session = self.sessions.get(session_id)
        if session is None:
            raise errors.unknown_session(session_id)
        return session

    async def target(self, cwd: str | None = None) -> AgyTarget:
        """Where agy is; the embedded simulator starts on first use, working in ``cwd`` when given
        (like an agy started there)."""
        if self._sim_options is None:
            return self._target
        async with self._sim_lock:
            if self._sim is None:
                from agy_harness.adapters.simulator import Simulator

                options = dict(self._sim_options)
                if cwd:
                    options["workspace"] = cwd
                self._sim = await Simulator(**options).start()
                self._target.port, self._target.version_text = self._sim.port, self._sim.version
                self._target.workspace = self._sim.workspace
                log.info("agy simulator %s on 127.0.0.1:%d", self._sim.version, self._sim.port)
        return self._target

    def _new(self, session_id: str) -> AcpSession:
        return AcpSession(
            self.conn,
            session_id,
            cancel_outgoing=self.transport.cancel_outgoing,
            forms=self._forms,
            fs_read=self._fs_read,
        )

    # -- the ACP methods ---------------------------------------------------------------------

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **_: Any
    ) -> InitializeResponse:
        elicitation = getattr(client_capabilities, "elicitation", None)
        self._forms = getattr(elicitation, "form", None) is not None
        self._fs_read = bool(getattr(getattr(client_capabilities, "fs", None), "read_text_file", False))
        self._initialized = True
        log.info(
            "client %s, protocol %s, forms=%s",
            getattr(client_info, "name", "?"),
            protocol_version,
            self._forms,
        )
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,  # the one version this agent speaks; a client on another disconnects
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=False, audio=False, embedded_context=True),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(),
                    resume=SessionResumeCapabilities(),
                    close=SessionCloseCapabilities(),
                ),
            ),
            auth_methods=[],
            agent_info=Implementation(
                name="agy-harness", title="agy (Antigravity) via agy-harness", version=VERSION
            ),
        )

    async def _bind(self, cascade_id: str | None, cwd: str | None = None) -> tuple[AgyContainer, bool]:
        """Bind agy for one session (once); with ``--start-agy``, start agy when none runs."""
        target = await self.target(cwd)
        try:
            return await target.bind(cascade_id)
        except RequestError as exc:
            if self._launcher is None or not isinstance(exc.data, dict) or exc.data.get("reason") != "no_agy":
                raise
        await self._launcher.ensure(target, cwd)  # raises the no-agy error, saying why it could not
        return await target.bind(cascade_id)

    async def _bind_in(
        self, method: str, cwd: str, cascade_id: str | None
    ) -> tuple[AgyContainer, bool, str | None]:
        """Bind agy for a session of ``session/new``, ``/load`` or ``/resume`` in the client's ``cwd``,
        with agy's workspace: the one rule of the three (:mod:`.workspace`). A relative ``cwd`` is
        refused (``-32602``), a directory other than agy's (``-32004``, both paths named)."""
        if not os.path.isabs(cwd):
            raise RequestError.invalid_params({"details": f"cwd must be an absolute path, not {cwd!r}"})
        container, discovered = await self._bind(cascade_id, cwd)
        workspace = await agy_workspace(container, self._target.workspace)
        if workspace is not None and not same_dir(workspace, cwd):
            await close_client(container)
            log.info("session/%s in %s refused: agy works in %s", method, cwd, workspace)
            raise errors.other_workspace(cwd, workspace)
        return container, discovered, workspace

    async def new_session(self, cwd: str, mcp_servers: Any = None, **_: Any) -> NewSessionResponse:
        self._require_init()
        container, discovered, workspace = await self._bind_in("new", cwd, None)
        try:
            cascade_id = await container.starter().start()
        except Exception as exc:
            await close_client(container)
            raise RequestError(
                -32603, f"agy could not start a conversation: {exc}", {"reason": "start_failed"}
            ) from exc
        notices = [] if workspace is not None else [unknown_workspace_notice(cwd)]
        notices += mcp_notice(mcp_servers)
        # kept before the session opens: its first updates follow this request's answer (see _open)
        await asyncio.to_thread(self.cwds.remember, cascade_id, cwd)
        session = await self._open(cascade_id, container, discovered, notices=notices)
        log.info("session %s: new conversation in %s (agy's workspace: %s)", cascade_id, cwd, workspace)
        return NewSessionResponse(session_id=cascade_id, config_options=session.config_options() or None)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **_: Any
    ) -> LoadSessionResponse:
        session = await self._reopen("load", cwd, session_id, replay=True, mcp_servers=mcp_servers)
        return LoadSessionResponse(config_options=session.config_options() or None)

    async def resume_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **_: Any
    ) -> ResumeSessionResponse:
        session = await self._reopen("resume", cwd, session_id, replay=False, mcp_servers=mcp_servers)
        return ResumeSessionResponse(config_options=session.config_options() or None)

    async def _reopen(
        self, method: str, cwd: str, session_id: str, *, replay: bool, mcp_servers: Any
    ) -> AcpSession:
        """``session/load`` (``replay``) and ``session/resume``: the conversation, live from where it
        is, in the client's ``cwd`` under ``session/new``'s rule (a refusal leaves an open session open)."""
        self._require_init()
        busy = RequestError.invalid_request({"details": "a prompt is running in this session"})
        if (old := self.sessions.get(session_id)) is not None and old.turn is not None:
            raise busy
        container, discovered, workspace = await self._bind_in(method, cwd, session_id)
        if (old := self.sessions.get(session_id)) is not None and old.turn is not None:
            await close_client(container)  # a prompt began while agy was bound
            raise busy
        notices = [] if workspace is not None else [unknown_workspace_notice(cwd)]
        notices += mcp_notice(mcp_servers)
        old = self.sessions.pop(session_id, None)
        if old is not None:
            await old.close()
        session = self._new(session_id)
        try:
            cursor = await session.read_history(container.snapshot(), replay=replay)
        except Exception as exc:
            await close_client(container)
            raise RequestError(
                -32603, f"could not read conversation {session_id} from agy: {exc}", {"reason": "read_failed"}
            ) from exc
        return await self._open(
            session_id, container, discovered, session=session, cursor=cursor, notices=notices
        )

    async def _open(
        self, cascade_id: str, container: AgyContainer, discovered: bool, *, session: AcpSession | None = None,
        cursor: Any = None, notices: list[str] | None = None,
    ) -> AcpSession:  # fmt: skip
        session = session or self._new(cascade_id)
        session.notices.extend(notices or ())
        try:
            await session.open(container, discovered, cursor)
        except Exception as exc:
            await session.close()
            raise RequestError(
                -32603, f"could not follow the agy conversation: {exc}", {"reason": "open_failed"}
            ) from exc
        self.sessions[cascade_id] = session
        self.closed.discard(cascade_id)  # loaded again after a close: open once more
        # sent after this request's answer: the handler's task writes the answer before this task runs
        task = asyncio.create_task(self._announce(session))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return session

    async def _announce(self, session: AcpSession) -> None:
        try:
            await session.announce()
        except Exception as exc:
            log.warning("session %s: the available commands were not sent (%s)", session.id, exc)

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **_: Any
    ) -> ListSessionsResponse:
        self._require_init()
        container, _discovered = await self._bind(None)
        try:
            summaries = await container.directory().list_cascades()
        except Exception as exc:
            raise RequestError(
                -32603, f"agy did not list its conversations: {exc}", {"reason": "list_failed"}
            ) from exc
        finally:
            await close_client(container)
        binding = container.discovery().binding if container.config.port() is None else None
        agy_cwd = process_cwd(binding.pid if binding is not None else None) or self._target.workspace
        made = await asyncio.to_thread(self.cwds.all)
        return session_list(summaries, agy_cwd=agy_cwd, cwd=cwd, cursor=cursor, made=made)

    async def close_session(self, session_id: str, **_: Any) -> CloseSessionResponse:
        self._require_init()
        session = self.sessions.pop(session_id, None)
        if session is None:
            if session_id in self.closed:
                return CloseSessionResponse()  # closed already: closing is idempotent
            raise errors.unknown_session(session_id)
        self.closed.add(session_id)
        await session.close()
        log.info("session %s closed (agy keeps the conversation)", session_id)
        return CloseSessionResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: Any, **_: Any
    ) -> SetSessionConfigOptionResponse:
        session = self._session(session_id)
        session.choose(config_id, value)
        return SetSessionConfigOptionResponse(config_options=session.config_options())

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        session = self._session(session_id)
        return await session.prompt(prompt_text(prompt))

    async def cancel(self, session_id: str, **_: Any) -> None:
        session = self.sessions.get(session_id) if self._initialized else None
        if session is None:
            log.warning("session/cancel for unknown session %r ignored", session_id)
            return
        await session.cancel()

    async def close(self) -> None:
        for session in list(self.sessions.values()):
            try:
                await session.close()
            except Exception as exc:
                log.warning("closing session %s: %s", session.id, exc)
        self.sessions.clear()
        if self._sim is not None:
            await self._sim.stop()
