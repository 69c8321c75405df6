"""Where the ACP agent finds agy, bound once per ACP session.

:class:`AgyTarget` holds what the command line says (``--port``, ``--tmux``, the simulator's port,
the agy it started in tmux) and builds each session's container from the composition root. An ACP
session binds agy exactly once: :meth:`AgyTarget.bind` binds the container's endpoint, the session
uses that container's conversation starter (``StartCascade``) / its first read, then opens the harness on the
same container (``session_from(..., discovered=...)``, which does not bind again).

A failure to bind is answered with the JSON-RPC errors of :mod:`.errors`. A conversation id that no
agy serves is told apart from "no agy at all" by what discovery found (a live agy that hosts other
conversations: ``AgyNotFound.wrong_cascade``), without binding again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from acp import RequestError

from agy_harness.ports.errors import AgyAmbiguous, AgyNotFound

from ...root.container import AgyContainer, bind_endpoint, make_container
from . import errors

log = logging.getLogger("agy_harness.acp.binding")


@dataclass
class AgyTarget:
    """Where sessions find agy: a fixed port (``--port``, the simulator's), agy's tmux pane
    (``--tmux``: discovery looks under that pane's process only), or discovery."""

    port: int | None = None
    version_text: str | None = None
    tmux_target: str | None = None
    pane_pid: int | None = None
    workspace: str | None = None  # where the agy this agent started works (--start-agy, --sim)
    #: the libtmux.Server of ``tmux_target`` (None: the server tmux itself picks, as the tmux command does)
    tmux_server: Any = None

    def container(self, cascade_id: str | None) -> AgyContainer:
        return make_container(
            port=self.port,
            cascade_id=cascade_id,
            pane_pid=self.pane_pid,
            tmux_target=self.tmux_target,
            tmux_server=self.tmux_server,
            version_text=self.version_text,
        )

    async def bind(self, cascade_id: str | None) -> tuple[AgyContainer, bool]:
        """A container for ``cascade_id`` (None: any live agy) with its endpoint bound, and whether it
        was discovered (so the session follows agy across restarts). Raises the ACP errors."""
        container = self.container(cascade_id)
        try:
            discovered = await bind_endpoint(container)
        except AgyAmbiguous as exc:
            raise errors.ambiguous_agy(exc) from exc
        except AgyNotFound as exc:
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


__all__ = ["AgyTarget", "close_client"]
