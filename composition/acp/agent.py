"""The ACP agent: the SDK's ``Agent`` protocol over agy-harness sessions.

Requests that come out of order get a JSON-RPC error, never a crash: anything before ``initialize``
is ``-32600``; an unknown session id is ``-32602``; a second prompt while one runs is ``-32600``. The
SDK answers unknown methods (``-32601``) and parameters its schema rejects (``-32602``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SetSessionConfigOptionResponse,
)

from agy_harness.adapters.rpc.errors import AmbiguousAgy, NoAgyFound

from .sessions import AcpSession, AgyTarget, prompt_text, start_cascade
from .transport import StdioTransport

log = logging.getLogger("agy_harness.acp")

try:
    from importlib.metadata import version as _dist_version

    VERSION = _dist_version("agy-harness")
except Exception:  # running from a checkout that is not installed
    VERSION = "0"


class AgyAcpAgent:
    """One ACP connection. ``target()`` says where agy is (started lazily: the simulator's port)."""

    def __init__(
        self, transport: StdioTransport, *, sim: dict[str, Any] | None = None, target: AgyTarget
    ) -> None:
        self.transport = transport
        self.conn: Any = None
        self.sessions: dict[str, AcpSession] = {}
        self._initialized = False
        self._forms = False
        self._target = target
        self._sim_options = sim
        self._sim: Any = None
        self._sim_lock = asyncio.Lock()

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
            raise RequestError.invalid_params({"details": f"unknown session {session_id!r}"})
        return session

    async def target(self) -> AgyTarget:
        if self._sim_options is None:
            return self._target
        async with self._sim_lock:
            if self._sim is None:
                from agy_harness.adapters.simulator import Simulator

                self._sim = await Simulator(**self._sim_options).start()
                self._target.port, self._target.version_text = self._sim.port, self._sim.version
                log.info("agy simulator %s on 127.0.0.1:%d", self._sim.version, self._sim.port)
        return self._target

    def _new(self, session_id: str) -> AcpSession:
        return AcpSession(
            self.conn, session_id, cancel_outgoing=self.transport.cancel_outgoing, forms=self._forms
        )

    # -- the ACP methods ---------------------------------------------------------------------

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **_: Any
    ) -> InitializeResponse:
        elicitation = getattr(client_capabilities, "elicitation", None)
        self._forms = getattr(elicitation, "form", None) is not None
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
            ),
            auth_methods=[],
            agent_info=Implementation(
                name="agy-harness", title="agy (Antigravity) via agy-harness", version=VERSION
            ),
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **_: Any) -> NewSessionResponse:
        self._require_init()
        if mcp_servers:
            log.warning(
                "agy brings its own tools; the client's %d MCP server(s) are not passed on", len(mcp_servers)
            )
        target = await self.target()
        probe = await _probe(target, None)
        try:
            cascade_id = await start_cascade(probe.client())
        except Exception as exc:
            raise RequestError.internal_error(
                {"details": f"agy could not start a conversation: {exc}"}
            ) from exc
        finally:
            await probe.client().aclose()
        session = self._new(cascade_id)
        await _open(session, target)
        self.sessions[cascade_id] = session
        log.info(
            "session %s: new conversation (cwd %s is agy's own choice, not the client's)", cascade_id, cwd
        )
        return NewSessionResponse(session_id=cascade_id, config_options=session.config_options() or None)

    async def load_session(self, cwd: str, session_id: str, **_: Any) -> LoadSessionResponse:
        self._require_init()
        old = self.sessions.get(session_id)
        if old is not None:
            if old.turn is not None:
                raise RequestError.invalid_request({"details": "a prompt is running in this session"})
            del self.sessions[session_id]
            await old.close()
        target = await self.target()
        probe = await _probe(target, session_id)
        session = self._new(session_id)
        try:
            cursor = await session.replay_history(probe.snapshot())
        except Exception as exc:
            raise RequestError.internal_error(
                {"details": f"could not read conversation {session_id}: {exc}"}
            ) from exc
        finally:
            await probe.client().aclose()
        await _open(session, target, cursor)
        self.sessions[session_id] = session
        return LoadSessionResponse(config_options=session.config_options() or None)

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


async def _probe(target: AgyTarget, cascade_id: str | None) -> Any:
    try:
        return await target.probe(cascade_id)
    except NoAgyFound as exc:
        if cascade_id is not None:
            raise RequestError(
                -32002, "Resource not found", {"sessionId": cascade_id, "details": str(exc)}
            ) from exc
        raise RequestError.internal_error({"details": f"no agy to talk to: {exc}"}) from exc
    except AmbiguousAgy as exc:
        raise RequestError.internal_error({"details": f"{exc}; start agy-harness acp with --port"}) from exc
    except Exception as exc:
        raise RequestError.internal_error({"details": f"could not reach agy: {exc}"}) from exc


async def _open(session: AcpSession, target: AgyTarget, cursor: Any = None) -> None:
    try:
        await session.open(target, cursor)
    except Exception as exc:
        await session.close()
        raise RequestError.internal_error({"details": f"could not open the agy session: {exc}"}) from exc
