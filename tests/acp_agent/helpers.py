"""Drive ``agy-harness acp`` as a subprocess through the official ACP SDK's client side.

The client below only implements the SDK's ``Client`` protocol callbacks (record updates, answer
permission requests / forms by a policy the test gives); the connection, framing and schema are the
SDK's own ``spawn_agent_process`` / ``ClientSideConnection``.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.connection import StreamEvent
from acp.schema import (
    AcceptElicitationResponse,
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    FileSystemCapabilities,
    Implementation,
    RequestPermissionResponse,
)

PermissionPolicy = Callable[[Any, list[Any]], Awaitable[str | None]]  # -> option id, None = cancelled
FormPolicy = Callable[[str, Any], Awaitable[dict[str, Any] | None]]


def agy_harness_command() -> list[str]:
    """The installed console script next to this interpreter (else the same entry point via -m)."""
    script = Path(sys.executable).parent / "agy-harness"
    if script.exists():
        return [str(script)]
    found = shutil.which("agy-harness")
    return [found] if found else [sys.executable, "-m", "agy_harness.composition.cli"]


class RecordingClient:
    def __init__(
        self,
        permission: PermissionPolicy | None = None,
        form: FormPolicy | None = None,
        files: dict[str, str] | None = None,
    ) -> None:
        self.files = files  # the editor's buffers, served by fs/read_text_file (None: no fs offered)
        self.reads: list[str] = []
        self.updates: list[tuple[str, Any]] = []
        self.permission_requests: list[tuple[str, Any, list[Any]]] = []
        self.forms: list[tuple[str, Any]] = []
        self.permission = permission
        self.form = form
        self._changed = asyncio.Event()

    # -- the SDK's Client protocol -------------------------------------------------------------
    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append((session_id, update))
        self._changed.set()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **_: Any
    ) -> RequestPermissionResponse:
        self.permission_requests.append((session_id, tool_call, options))
        self._changed.set()
        choice = await self.permission(tool_call, options) if self.permission else None
        if choice is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=choice))

    async def read_text_file(self, path: str, session_id: str, **_: Any) -> Any:
        from acp import RequestError
        from acp.schema import ReadTextFileResponse

        self.reads.append(path)
        if self.files is None or path not in self.files:
            raise RequestError.resource_not_found(path)
        return ReadTextFileResponse(content=self.files[path])

    async def create_elicitation(self, message: str, mode: Any, **_: Any) -> Any:
        self.forms.append((message, mode))
        self._changed.set()
        content = await self.form(message, mode) if self.form else None
        if content is None:
            from acp.schema import CancelElicitationResponse

            return CancelElicitationResponse(action="cancel")
        return AcceptElicitationResponse(action="accept", content=content)

    # -- test helpers -------------------------------------------------------------------------
    def of(self, session_id: str, kind: str | None = None) -> list[Any]:
        return [u for s, u in self.updates if s == session_id and (kind is None or u.session_update == kind)]

    def text(self, session_id: str, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.of(session_id, kind))

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 30.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()


@asynccontextmanager
async def acp_agent(
    client: RecordingClient,
    *args: str,
    forms: bool = False,
    observe: list[StreamEvent] | None = None,
    where: tuple[str, ...] = ("--sim",),
    env: dict[str, str] | None = None,
    wrap: tuple[str, ...] = (),
    log: list[str] | None = None,
    verbose: bool | int = False,
    stderr: list[Any] | None = None,
) -> AsyncIterator[Any]:
    """``agy-harness acp --sim ...`` (or ``where=("--port", N)``) spawned and initialized; yields the
    SDK's ClientSideConnection. ``wrap`` is a command line the agent runs under (``unshare ...``);
    ``log`` gets what the agent wrote to stderr (``verbose``: with ``-v``, 2: ``-vv``), once it has ended;
    ``stderr`` gets the file it writes to (to read while it runs)."""
    command = [*wrap, *agy_harness_command(), *(["-v"] * int(verbose))]
    with tempfile.TemporaryFile("w+") as errors:
        if stderr is not None:
            stderr.append(errors)
        observers = [observe.append] if observe is not None else []
        async with spawn_agent_process(
            client,
            command[0],
            *command[1:],
            "acp",
            *where,
            *args,
            env=env,
            # the SDK waits 2 s by default for the agent to end after stdin's EOF, then terminates it:
            # on a loaded machine the agent's clean stop (its sessions closed) takes longer, and the SDK's
            # terminate() then raced the exit (ProcessLookupError in teardown, seen under xdist)
            transport_kwargs={"stderr": errors.fileno(), "shutdown_timeout": 30.0},
            use_unstable_protocol=forms,
            observers=observers,
        ) as (conn, _process):
            try:
                caps = ClientCapabilities(
                    elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities())
                    if forms
                    else None,
                    fs=FileSystemCapabilities(read_text_file=True) if client.files is not None else None,
                )
                await conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=caps,
                    client_info=Implementation(name="pytest", version="0"),
                )
                yield conn
            except BaseException:
                errors.seek(0)
                print("---- agy-harness acp stderr ----\n" + errors.read()[-6000:], file=sys.stderr)
                raise
        if log is not None:
            errors.seek(0)
            log.append(errors.read())


async def prompt(conn: Any, session_id: str, text: str) -> Any:
    return await conn.prompt(session_id=session_id, prompt=[text_block(text)])
