"""Where the ACP agent finds agy, bound once per ACP session.

:class:`AgyTarget` holds what the command line says (``--port``, ``--tmux``, the simulator's port,
the agy it started in tmux) and builds each session's container from the composition root. An ACP
session binds agy exactly once: :meth:`AgyTarget.bind` binds the container's endpoint, the session
uses that container's client for ``StartCascade`` / its first read, then opens the harness on the
same container (``session_from(..., discovered=...)``, which does not bind again).

A failure to bind is answered with the JSON-RPC errors of :mod:`.errors`. A conversation id that no
agy serves is told apart from "no agy at all" by what discovery found (a live agy that hosts other
conversations: ``NoAgyFound.wrong_cascade``), without binding again.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from acp import RequestError

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.errors import AmbiguousAgy, NoAgyFound

from ...root.container import AgyContainer, bind_endpoint, make_container
from . import errors

log = logging.getLogger("agy_harness.acp.binding")

START_SOURCE = "CORTEX_TRAJECTORY_SOURCE_CLI"  # StartCascade's required field (agy 1.0.10, see omnigent)


@dataclass
class AgyTarget:
    """Where sessions find agy: a fixed port (``--port``, the simulator's), agy's tmux pane
    (``--tmux``: discovery looks under that pane's process only), or discovery."""

    port: int | None = None
    version_text: str | None = None
    tmux_target: str | None = None
    pane_pid: int | None = None

    def container(self, cascade_id: str | None) -> AgyContainer:
        return make_container(
            port=self.port,
            cascade_id=cascade_id,
            pane_pid=self.pane_pid,
            tmux_target=self.tmux_target,
            version_text=self.version_text,
        )

    async def bind(self, cascade_id: str | None) -> tuple[AgyContainer, bool]:
        """A container for ``cascade_id`` (None: any live agy) with its endpoint bound, and whether it
        was discovered (so the session follows agy across restarts). Raises the ACP errors."""
        container = self.container(cascade_id)
        try:
            discovered = await bind_endpoint(container)
        except AmbiguousAgy as exc:
            raise errors.ambiguous_agy(exc) from exc
        except NoAgyFound as exc:
            if cascade_id is not None and exc.wrong_cascade:  # a live agy, without this conversation
                raise errors.conversation_gone(cascade_id, str(exc)) from exc
            raise errors.no_agy(exc) from exc
        except RequestError:
            raise
        except Exception as exc:
            raise errors.agy_unreachable(exc) from exc
        return container, discovered


async def close_client(container: AgyContainer) -> None:
    """Close the client of a container that was bound but never opened as a session."""
    if container.config.base_url() is not None:
        await container.client().aclose()


async def start_cascade(client: RpcClient) -> str:
    """``StartCascade``: a new conversation; agy echoes the id we propose (or mints one)."""
    proposed = str(uuid.uuid4())
    answer: dict[str, Any] = await client.call(
        "StartCascade", {"cascadeId": proposed, "source": START_SOURCE}
    )
    minted = answer.get("cascadeId")
    return minted if isinstance(minted, str) and minted else proposed


__all__ = ["AgyTarget", "close_client", "start_cascade"]
