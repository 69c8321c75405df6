"""One ``agy-harness acp`` process for many tests, as an editor runs one agent for many sessions.

An editor starts ONE ``agy-harness acp`` and opens a session per conversation: a test whose subject is
a session (its turns, gates, cards, load/resume/close, errors) gets the same observation from a shared
agent as from one of its own, as long as it has its own session, its own recorder and asserts only
its own session's updates. Starting the agent costs ~1.3 CPU-seconds (its Python imports: the ACP
SDK's pydantic schema, the composition root) before it serves anything; the tests sharing one pay
it once.

:class:`SharedAgent` is such a process: ``async with agent.editor(RecordingClient(...)) as conn`` gives
a test the SDK connection, with every session the test opens (``session/new``) or names
(``session/load``, ``session/resume``) routed to the test's own :class:`RecordingClient`: its updates,
permission requests, reads and forms, with the test's own policies. The sessions a test opened are
closed when it ends (an editor closing its tabs: agy keeps the conversations).

Tests about the process itself (its flags, stdin/stdout/stderr, environment, exit, cold start, peers,
the client capabilities it was initialized with) keep a process of their own
(:func:`.helpers.acp_agent`). The package's shared agents are fixtures of this package's
``conftest.py`` (``@SHARED``); a module may share one of its own (``@SHARED_IN_MODULE``, a
module-scoped fixture). tests/parallel.py keeps the tests sharing one on one xdist worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
from acp import RequestError

from .helpers import RecordingClient, acp_agent


class SessionRouter:
    """The SDK ``Client`` of a shared agent: each session's callbacks go to the recorder of the test
    that claimed it. Updates sent before a session was claimed (between the agent's
    ``session/new`` and its answer reaching the test) are kept and given to it, in order, when
    claimed; a request for an unclaimed session waits for its claim."""

    files = None  # the shared agent is not offered fs/read_text_file (a test with files has its own)

    def __init__(self) -> None:
        self.owners: dict[str, RecordingClient] = {}
        self.early: dict[str, list[tuple[Any, dict[str, Any]]]] = {}
        self.claimed: dict[str, asyncio.Event] = {}

    async def claim(self, session_id: str, client: RecordingClient) -> None:
        self.owners[session_id] = client
        for update, kw in self.early.pop(session_id, []):
            await client.session_update(session_id, update, **kw)
        self.claimed.setdefault(session_id, asyncio.Event()).set()

    async def _owner(self, session_id: str) -> RecordingClient:
        await self.claimed.setdefault(session_id, asyncio.Event()).wait()
        return self.owners[session_id]

    # -- the SDK's Client protocol -------------------------------------------------------------
    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        owner = self.owners.get(session_id)
        if owner is None:
            self.early.setdefault(session_id, []).append((update, kw))
        else:
            await owner.session_update(session_id, update, **kw)

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kw: Any) -> Any:
        owner = await self._owner(session_id)
        return await owner.request_permission(session_id, tool_call, options, **kw)

    async def read_text_file(self, path: str, session_id: str, **kw: Any) -> Any:
        raise RequestError.resource_not_found(path)  # (never offered: see ``files``)

    async def create_elicitation(self, message: str, mode: Any, **kw: Any) -> Any:
        session_id = getattr(mode, "session_id", None)  # (the agent asks session-scoped forms)
        if session_id is None:
            raise RequestError.invalid_params({"details": "a shared test agent routes forms by session"})
        owner = await self._owner(session_id)
        return await owner.create_elicitation(message, mode, **kw)


class ConnectionOfATest:
    """The shared SDK connection as one test sees it: the sessions it opens or names are its own."""

    def __init__(self, conn: Any, router: SessionRouter, client: RecordingClient) -> None:
        self._conn_, self._router, self._client = conn, router, client
        self.opened: list[str] = []

    def __getattr__(self, name: str) -> Any:  # prompt, cancel, list_sessions, close_session, ...
        return getattr(self._conn_, name)

    async def new_session(self, **params: Any) -> Any:
        response = await self._conn_.new_session(**params)
        await self._router.claim(response.session_id, self._client)
        self.opened.append(response.session_id)
        return response

    async def load_session(self, *, session_id: str, **params: Any) -> Any:
        await self._router.claim(session_id, self._client)
        self.opened.append(session_id)
        return await self._conn_.load_session(session_id=session_id, **params)

    async def resume_session(self, *, session_id: str, **params: Any) -> Any:
        await self._router.claim(session_id, self._client)
        self.opened.append(session_id)
        return await self._conn_.resume_session(session_id=session_id, **params)


class SharedAgent:
    """One ``agy-harness acp`` (``args``: its flags) serving one test at a time (:meth:`editor`)."""

    def __init__(self, conn: Any, router: SessionRouter, stderr: Any, observed: list[Any]) -> None:
        self.conn, self.router, self._stderr = conn, router, stderr
        self.observed = observed  # every message the editor read and wrote (the SDK's StreamEvents)

    @contextlib.asynccontextmanager
    async def editor(self, client: RecordingClient) -> AsyncIterator[Any]:
        """The connection for one test, its sessions routed to ``client``; they are closed after."""
        view = ConnectionOfATest(self.conn, self.router, client)
        try:
            yield view
        except BaseException:
            fd = self._stderr.fileno()  # (read where it is: the agent writes at the file's offset)
            tail = os.pread(fd, 6000, max(0, os.fstat(fd).st_size - 6000)).decode(errors="replace")
            print("---- the shared agy-harness acp's stderr ----\n" + tail, file=sys.stderr)
            raise
        finally:
            for session_id in dict.fromkeys(view.opened):
                with contextlib.suppress(RequestError):  # (one the test never got open: a refused load)
                    await self.conn.close_session(session_id=session_id)


@contextlib.asynccontextmanager
async def shared_agent(
    *args: str, forms: bool = False, where: tuple[str, ...] = ("--sim",)
) -> AsyncIterator[SharedAgent]:
    """``agy-harness acp`` with ``args`` (``where``: ``--sim`` or ``--port N``), initialized by an
    editor without fs (``forms``: with forms)."""
    router, stderr, observed = SessionRouter(), [], []
    async with acp_agent(
        router,  # type: ignore[arg-type]
        *args,
        forms=forms,
        where=where,
        observe=observed,
        stderr=stderr,
    ) as conn:
        yield SharedAgent(conn, router, stderr[0], observed)


#: the mark of a test using the package's shared agent (conftest.py): it runs in the package's event
#: loop, the agent's
SHARED = pytest.mark.asyncio(loop_scope="package")
#: the same for a module's own shared agent (a module-scoped fixture of its own)
SHARED_IN_MODULE = pytest.mark.asyncio(loop_scope="module")
