"""The editor's project is the session's project: where agy works, told against ``session/new``'s ``cwd``.

agy works in one directory, the one it was started in; an ACP client's ``cwd`` cannot move it. So a
``session/new`` is served only where agy's workspace *is* the client's ``cwd`` (the same directory,
symlinks resolved), and refused otherwise (:func:`.errors.other_workspace`), never silently run
elsewhere. agy's workspace, first found of:

1. the directory the agent itself started agy in (``--start-agy``) or the embedded simulator's;
2. the working directory of the agy process discovery bound (``/proc/PID/cwd``);
3. the workspace folder agy reports for its newest conversation (``workspaceFolderAbsoluteUri``).

When none is known (an agy at ``--port`` with no conversation yet), the session is served and the
editor is shown a notice saying so (:func:`unknown_workspace_notice`).

:class:`~agy_harness.adapters.store.session_cwds.SessionCwds` keeps the client's ``cwd`` of every session this agent made, in the private
state directory (0600 file in a 0700 directory), so that ``session/list {cwd}`` finds them, also
after an editor restart, under the path the editor used.
"""

from __future__ import annotations

import logging
import os

from ...root.container import AgyContainer
from ...root.session_dirs import SessionCwds
from .listing import path_of, process_cwd

log = logging.getLogger("agy_harness.acp.workspace")


def same_dir(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


async def agy_workspace(container: AgyContainer, known: str | None) -> str | None:
    """agy's workspace for a session bound through ``container`` (the module doc's order)."""
    if known:
        return known
    binding = container.discovery().binding if container.config.port() is None else None
    found = process_cwd(binding.pid if binding is not None else None)
    if found:
        return found
    try:
        summaries = await container.directory().list_cascades()
    except Exception as exc:
        log.warning("agy did not list its conversations (%s): its workspace is unknown", exc)
        return None
    for summary in sorted(summaries, key=lambda s: s.last_modified_time, reverse=True):
        for uri in summary.workspace_uris:
            path = path_of(uri)
            if path:
                return path
    return None


def unknown_workspace_notice(cwd: str) -> str:
    return (
        f"agy-harness could not tell which directory this agy works in (it runs at a port given, and "
        f"has no conversation yet): agy works in the directory it was started in, which may not be "
        f"{cwd}."
    )


__all__ = ["SessionCwds", "agy_workspace", "same_dir", "unknown_workspace_notice"]
