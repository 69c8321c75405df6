"""The board's HTTP side (Starlette): the page, the board and session streams (server-sent events),
and the three things a human does: answer a gate, send a turn, interrupt.

    GET  /?token=T                         the page
    GET  /api/board?token=T                the board now (JSON)
    GET  /api/board/events?token=T         the board, again each time it changes (SSE)
    GET  /api/s/{cascade}/events?token=T   one conversation: its history, then live events (SSE)
    GET  /api/s/{cascade}/history?token=T  one conversation's decisions from the ledger, newest first
    GET  /api/s/{cascade}/whole?gate=G&shown=D&token=T
                                           the whole text of a card too large to carry it, and the
                                           ticket an allow of it carries (410: that card no longer waits)
    GET  /open/{ticket}                     a notification's link: once, briefly, while its card asks
                                           the same, to the page with that card named (:mod:`.open_links`)
    POST /api/s/{cascade}/answer           {"gate_id", "shown", ["ticket",] "answer": "allow"|"deny"|"decline"
                                            | {"allow": {"scope": s, "command": edited}}
                                            | {"deny": reason}
                                            | {"accept": content}  (an MCP server's request for input:
                                              the JSON object the human typed, checked by the core)
                                            | {"questions": [{"choices": [ids], "write_in": text}]}}
    POST /api/s/{cascade}/rule             {"gate_id", "rule"}: save a proposed rule the human confirmed
    POST /api/s/{cascade}/send             {"text"}
    POST /api/s/{cascade}/interrupt        {}

POSTs carry ``X-Board-Token`` (see :mod:`.guard`). An answer goes through ``Session.answer`` (the one
fail-closed parser): one it cannot read unambiguously is refused with 400 and nothing is sent; one for
a card that changed since it was shown, 409 ("the request changed"); one for a gate that no longer
waits, 410 ("answered elsewhere ...", or why agy stopped waiting); one agy did not take, 503. Every
refusal says in words what happened and what to do (:mod:`.outcomes`).

"Always" that never widens: a card for a command carries the narrowest rule for it (``proposal``,
:func:`.cards.proposal`); the page offers it, editable, after a lasting allow or after identical
approvals, and only ``/rule`` (the human's "Save as my rule") saves it, into the user tier's
``proposed.toml``, if it loads (its examples hold) and matches the request approved; else 400, the
reason, nothing saved.

A request too large for its card (a command near agy's 4 MiB string cut, :data:`.cards.INLINE_CHARS`):
snapshots carry its preview, size and SHA-256 only; the page fetches the whole text (``/whole``, keyed by
the gate id and the card's ``shown`` digest, behind the same token) and shows it before it offers an
allow. An allow of such a card carries the ``ticket`` only that fetch gives, else 400, nothing sent.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import AsyncIterator
from importlib import resources
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from agy_harness.core import safejson
from agy_harness.core.answers import AnswerError
from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import GateAnswer

from ...root.policy import RuleError, save_proposed
from .guard import BodyTooLarge, Guard
from .hub import Board
from .live import LiveSession
from .open_links import LinkRefused, OpenLinks
from .outcomes import GateGone, NotLoaded, NotTaken, StaleCard, answer_value, unreadable

log = logging.getLogger("agy_harness.board")

KEEPALIVE = 15.0
MAX_TURN = 32 * 1024
MAX_APPROVED = 256  # answered gates remembered for a rule saved after the card closed


def _asset(name: str) -> str:
    return (
        resources.files("agy_harness.composition.entrypoints.board")
        .joinpath("static", name)
        .read_text("utf-8")
    )


def _error(status: int, text: str) -> JSONResponse:
    return JSONResponse({"error": text}, status_code=status)


async def _body(request: Request) -> dict[str, Any]:
    try:
        value = safejson.loads(await request.body())
    except BodyTooLarge:
        raise _Refused(413, "the body is too large") from None
    except ValueError:
        raise _Refused(400, "the body is not JSON") from None
    if not isinstance(value, dict):
        raise _Refused(400, "the body is a JSON object")
    return value


class _Refused(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


def _sse(data: str) -> bytes:
    return b"".join(b"data: " + line.encode() + b"\n" for line in data.split("\n")) + b"\n"


class _Handlers:
    """The board's routes, over one :class:`~.hub.Board`."""

    def __init__(self, board: Board, token: str = "", opens: OpenLinks | None = None) -> None:
        self.board = board
        self.token = token
        self.opens = opens or OpenLinks()
        self.page = _asset("board.html")
        self.script = _asset("board.js")
        self.style = _asset("board.css")
        self.approved: dict[tuple[str, str], GateOpened] = {}  # gates answered here, for /rule

    async def index(self, request: Request) -> Response:
        nonce = secrets.token_urlsafe(16)
        html = (
            self.page.replace("{{NONCE}}", nonce)
            .replace("/*{{STYLE}}*/", self.style)
            .replace("/*{{SCRIPT}}*/", self.script)
        )
        csp = (
            f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
            "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'"
        )
        return HTMLResponse(html, headers={"content-security-policy": csp})

    async def open_card(self, request: Request) -> Response:
        """A notification's link: the page with its card named, once, while that card asks the same
        (:mod:`.open_links`); else a page saying why, granting nothing."""
        try:
            opening = self.opens.redeem(request.path_params["ticket"])
        except LinkRefused as exc:
            return PlainTextResponse(str(exc), status_code=410)
        live = self.board.session(opening.cascade_id)
        try:
            gate = live.gate(opening.gate_id) if live is not None else None
        except (GateGone, StaleCard):
            gate = None
        if gate is None or gate.digest != opening.digest:
            return PlainTextResponse(
                "The request this link was for no longer waits as it was asked (answered, withdrawn or "
                "changed), so the link opens nothing. Open the board from the address it printed in its "
                "terminal.",
                status_code=410,
            )
        return RedirectResponse(f"/?token={quote(self.token)}#card-{gate.digest[:8]}", status_code=303)

    async def board_now(self, request: Request) -> Response:
        return Response(self.board.snapshot_json, media_type="application/json")

    async def board_events(self, request: Request) -> Response:
        async def stream() -> AsyncIterator[bytes]:
            version = -1
            while not self.board.stopping.is_set():
                if self.board.version != version:
                    version = self.board.version
                    yield _sse(self.board.snapshot_json)
                    continue
                try:
                    async with asyncio.timeout(KEEPALIVE):
                        await self.board.changed(version)
                except TimeoutError:
                    yield b": keep-alive\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")

    def _live(self, request: Request) -> LiveSession:
        live = self.board.session(request.path_params["cascade"])
        if live is None:
            raise _Refused(404, "no such conversation on this board")
        return live

    async def session_events(self, request: Request) -> Response:
        try:
            live = self._live(request)
        except _Refused as exc:
            return _error(exc.status, exc.text)
        cascade_id = request.path_params["cascade"]

        async def stream() -> AsyncIterator[bytes]:
            history, queue = live.subscribe()
            try:
                yield _sse(json.dumps({"type": "hello", "root": live.cascade_id, "error": live.error}))
                for view in history:  # this conversation's own (a sub-agent's are under its row)
                    if view.get("cascade_id") == cascade_id:
                        yield _sse(json.dumps(view, ensure_ascii=False))
                yield _sse(json.dumps({"type": "caught_up"}))
                while not self.board.stopping.is_set():
                    try:
                        async with asyncio.timeout(KEEPALIVE):
                            news = await queue.get()
                    except TimeoutError:
                        yield b": keep-alive\n\n"
                        continue
                    if news is None:
                        yield _sse(json.dumps({"type": "ended", "error": live.error}))
                        return
                    if news.get("cascade_id") == cascade_id:
                        yield _sse(json.dumps(news, ensure_ascii=False))
            finally:
                live.subscribers.discard(queue)

        return StreamingResponse(stream(), media_type="text/event-stream")

    async def history(self, request: Request) -> Response:
        """The conversation's decisions (the decision ledger, read through the root), newest first."""
        from ...root.audit_ledger import conversation_history

        cascade_id = request.path_params["cascade"]
        if cascade_id not in self.board.fleet.rows:
            return _error(404, "no such conversation on this board")
        try:
            rows = await asyncio.to_thread(conversation_history, cascade_id)
        except Exception as exc:  # an unreadable ledger: said, never a crash
            log.warning("board: the decision ledger could not be read (%s)", exc)
            return _error(503, f"the decision ledger could not be read: {exc}")
        return JSONResponse({"rows": rows})

    async def answer(self, request: Request) -> Response:
        body: dict[str, Any] = {}
        try:
            live = self._live(request)
            body = await _body(request)
            gate_id, shown = body.get("gate_id"), body.get("shown")
            if not isinstance(gate_id, str) or not isinstance(shown, str):
                raise _Refused(400, "an answer names the gate_id and the card's shown digest")
            gate = live.gate(gate_id)
            words = unreadable(gate, body.get("answer"))
            if words is not None:
                raise _Refused(400, f"not sent: {words}")
            value = answer_value(body.get("answer"))
            ticket = body.get("ticket", "")
            if not isinstance(ticket, str):
                raise _Refused(400, "a ticket is the text the card's whole-text fetch gave")
            await live.answer(gate_id, value, shown, ticket)
            if value is True or (isinstance(value, GateAnswer) and value.allow):
                self.approved[(live.cascade_id, gate_id)] = gate  # a rule is offered for an allow only
            while len(self.approved) > MAX_APPROVED:
                self.approved.pop(next(iter(self.approved)))
        except _Refused as exc:
            return _error(exc.status, exc.text)
        except AnswerError as exc:  # the fail-closed parser's own refusal (the page never sends one)
            if isinstance(body.get("answer"), dict) and "accept" in body["answer"]:  # typed content
                return _error(400, f"not sent: {exc}; correct the content and Accept again, or Decline")
            return _error(
                400, f"not sent: agy could not read this answer ({exc}); reload the page and answer again"
            )
        except StaleCard as exc:
            return _error(409, str(exc))
        except GateGone as exc:
            return _error(410, str(exc))
        except NotLoaded as exc:
            return _error(400, str(exc))
        except NotTaken as exc:
            return _error(503, str(exc))
        except RuntimeError as exc:  # the conversation is not connected (yet)
            return _error(503, f"not sent: {exc}; try again in a moment")
        return JSONResponse({"ok": True})

    async def whole(self, request: Request) -> Response:
        """The whole text of a card too large to carry it: only for the gate that waits now with that
        card (its ``shown`` digest), else 410; a card that carries its text itself, 404."""
        gate_id, shown = request.query_params.get("gate", ""), request.query_params.get("shown", "")
        try:
            live = self._live(request)
            text, ticket = live.whole(gate_id, shown)
        except _Refused as exc:
            return _error(exc.status, exc.text)
        except (GateGone, StaleCard) as exc:  # answered, withdrawn or changed: its text is not given
            return _error(410, f"this request no longer waits here, so its text is not shown ({exc})")
        except KeyError:
            return _error(404, "this card carries its whole request itself")
        return JSONResponse({"gate_id": gate_id, "shown": shown, "full": text, "ticket": ticket})

    async def save_rule(self, request: Request) -> Response:
        """The human confirmed a proposed rule (perhaps edited): saved only if it loads and matches the
        request of the gate it was proposed for."""
        try:
            live = self._live(request)
            body = await _body(request)
            gate_id, text = body.get("gate_id"), body.get("rule")
            if not isinstance(gate_id, str) or not isinstance(text, str) or not text.strip():
                raise _Refused(400, "a rule to save names its gate_id and holds the rule's text")
            gate = self.approved.get((live.cascade_id, gate_id))
            if gate is None:
                try:
                    gate = live.gate(gate_id)
                except (GateGone, StaleCard):
                    raise _Refused(410, "not saved: this request is no longer known here") from None
            path = await asyncio.to_thread(save_proposed, text, gate)
        except _Refused as exc:
            return _error(exc.status, exc.text)
        except RuleError as exc:
            return _error(400, f"not saved: {exc}")
        return JSONResponse({"ok": True, "path": str(path)})

    async def send(self, request: Request) -> Response:
        try:
            live = self._live(request)
            body = await _body(request)
            text = body.get("text")
            if not isinstance(text, str) or not text.strip() or len(text) > MAX_TURN:
                raise _Refused(400, f"a turn is non-empty text of at most {MAX_TURN} characters")
            if request.path_params["cascade"] != live.cascade_id:
                raise _Refused(400, "a sub-agent takes no turns; send to its parent conversation")
            await live.ready.wait()
            via = await live.send(text)
        except _Refused as exc:
            return _error(exc.status, exc.text)
        except Exception as exc:
            log.warning("board: sending a turn failed: %s", exc)
            return _error(502, f"agy did not take the turn: {exc}")
        return JSONResponse({"ok": True, "via": via})

    async def interrupt(self, request: Request) -> Response:
        try:
            live = self._live(request)
            await _body(request)
            await live.ready.wait()
            report = await live.interrupt()
        except _Refused as exc:
            return _error(exc.status, exc.text)
        except Exception as exc:
            return _error(502, f"agy did not take the interrupt: {exc}")
        return JSONResponse({"ok": True, "cancelled": bool(getattr(report, "cancelled", True))})


def build_app(board: Board, token: str, hosts: set[str], opens: OpenLinks | None = None) -> Guard:
    h = _Handlers(board, token, opens)
    app = Starlette(
        routes=[
            Route("/", h.index),
            Route("/open/{ticket}", h.open_card),
            Route("/api/board", h.board_now),
            Route("/api/board/events", h.board_events),
            Route("/api/s/{cascade}/events", h.session_events),
            Route("/api/s/{cascade}/history", h.history),
            Route("/api/s/{cascade}/whole", h.whole),
            Route("/api/s/{cascade}/answer", h.answer, methods=["POST"]),
            Route("/api/s/{cascade}/rule", h.save_rule, methods=["POST"]),
            Route("/api/s/{cascade}/send", h.send, methods=["POST"]),
            Route("/api/s/{cascade}/interrupt", h.interrupt, methods=["POST"]),
        ]
    )
    return Guard(app, token, hosts)
