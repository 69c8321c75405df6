"""``session/list``: agy's conversations (``GetAllCascadeTrajectories``) as ACP ``SessionInfo``s.

* Only root conversations: a sub-agent's conversation is a tool call of its parent.
* ``title``: agy's own title for the conversation (the summary's ``summary``), when it has one.
* ``updatedAt``: the summary's ``lastModifiedTime``; the list is newest first.
* ``cwd`` (the rule): for a session this agent made, the client's own ``cwd`` of ``session/new``
  (which was agy's workspace, or agy's workspace was unknown and the editor was told so:
  :mod:`.workspace`); else the first of the conversation's workspace folders agy reports
  (``workspaces[].workspaceFolderAbsoluteUri``, a ``file:`` URI made a path); else the working
  directory of the agy process serving it (agy works in the directory it was started in), when the
  harness knows that process; else the conversation is left out (ACP requires a cwd, and none would
  be true). The client's ``cwd`` filter compares normalised absolute paths.
* Pages of :data:`PAGE` sessions; ``nextCursor`` is an opaque token for the next page. A cursor this
  agent did not make is refused (``-32602``).
"""

from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path
from urllib.parse import unquote, urlparse

from acp import RequestError
from acp.schema import ListSessionsResponse, SessionInfo

from agy_harness.core.display import one_line
from agy_harness.ports.protocols import CascadeSummary

PAGE = 50
_CURSOR_PREFIX = "agy-harness:"


def path_of(uri: str) -> str | None:
    """An absolute path from a ``file:`` URI (or an absolute path given as is)."""
    if uri.startswith("/"):
        return os.path.normpath(uri)
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    path = unquote(parsed.path)
    return os.path.normpath(path) if path.startswith("/") else None


def process_cwd(pid: int | None) -> str | None:
    if pid is None:
        return None
    try:
        return str(Path(f"/proc/{pid}/cwd").resolve(strict=True))
    except OSError:
        return None


def cwd_of(summary: CascadeSummary, agy_cwd: str | None) -> str | None:
    for uri in summary.workspace_uris:
        path = path_of(uri)
        if path:
            return path
    return agy_cwd


def title_of(summary: CascadeSummary) -> str | None:
    """agy's title for the conversation, by the core's one rendering rule (it is agy's text: invisible
    and bidi characters, line breaks made visible); None while agy has given none."""
    return one_line(summary.title) if summary.title else None


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"{_CURSOR_PREFIX}{offset}".encode()).decode()


def decode_cursor(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
        if text.startswith(_CURSOR_PREFIX):
            offset = int(text.removeprefix(_CURSOR_PREFIX))
            if offset >= 0:
                return offset
    except (ValueError, binascii.Error, UnicodeDecodeError):
        pass
    raise RequestError.invalid_params({"details": f"{cursor!r} is not a cursor this agent gave"})


def session_list(
    summaries: list[CascadeSummary],
    *,
    agy_cwd: str | None,
    cwd: str | None,
    cursor: str | None,
    made: dict[str, str] | None = None,
) -> ListSessionsResponse:
    offset = decode_cursor(cursor)
    if cwd is not None and not os.path.isabs(cwd):
        raise RequestError.invalid_params({"details": f"cwd must be an absolute path, not {cwd!r}"})
    wanted = os.path.normpath(cwd) if cwd is not None else None
    infos: list[SessionInfo] = []
    roots = sorted(
        (s for s in summaries if not s.parent_id), key=lambda s: s.last_modified_time, reverse=True
    )
    for summary in roots:
        where = (made or {}).get(summary.cascade_id) or cwd_of(summary, agy_cwd)
        if where is None or (wanted is not None and os.path.normpath(where) != wanted):
            continue
        infos.append(
            SessionInfo(
                session_id=summary.cascade_id,
                cwd=where,
                title=title_of(summary),
                updated_at=summary.last_modified_time or None,
            )
        )
    page = infos[offset : offset + PAGE]
    more = offset + PAGE < len(infos)
    return ListSessionsResponse(sessions=page, next_cursor=encode_cursor(offset + PAGE) if more else None)
