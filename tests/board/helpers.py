"""What the board tests share: Debian's chromium driven by playwright, notification receivers on
127.0.0.1 (healthy and hostile), and reading/answering the simulator's waiting gate as agy's own
terminal would."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from agy_harness.adapters.simulator import Simulator
from tests.chromium import new_page
from tests.chromium import require_chromium as require_chromium  # (the board tests import it from here)

#: records every browser notification the page raises (the real API is granted, and wrapped)
NOTIFICATION_SPY = """
(() => {
  const Real = window.Notification;
  window.__notes = [];
  class Spy extends Real {
    constructor(title, options) { super(title, options); window.__notes.push({ title, body: (options || {}).body }); }
  }
  Object.defineProperty(Spy, "permission", { get: () => Real.permission });
  Spy.requestPermission = (...a) => Real.requestPermission(...a);
  window.Notification = Spy;
})();
"""


@contextlib.asynccontextmanager
async def browser_page(
    url: str, *, width: int = 1360, height: int = 860, own_context: bool = False, motion: bool = False
) -> AsyncIterator[Any]:
    """A new page of headless chromium at ``url``, notifications granted and recorded: on the worker's
    shared chromium on the session's loop, in a context no earlier page at ``url``'s origin used
    (cookies cleared; storage and permissions are kept per origin: ``tests/chromium.py``), or in a
    context of its own (``own_context``); else on a chromium launched for it.

    The page is for a person who asked for reduced motion unless ``motion``: the board's animations
    (a working row's pulse, a streaming reply's cursor) are off. Headless chromium draws every frame
    of them in software: ~0.3 CPU-seconds for every second a page with a working row is open
    (measured: renderer, browser and GPU processes), and no test but the one about them looks at
    them (test_board_browser.py checks both ways).

    The board tests' ``page.wait_for_function`` calls poll every 100 ms (``polling=100``): playwright's
    default re-runs the predicate on every animation frame, and chromium draws a frame for each for
    as long as the wait lasts (measured on an idle page: 0.22-0.34 CPU-s per 5 s of waiting, 0.03-0.12
    polling every 100 ms)."""
    async with new_page(
        url,
        width=width,
        height=height,
        permissions=["notifications"],
        init_script=NOTIFICATION_SPY,
        own_context=own_context,
        color_scheme="light",
        reduced_motion="no-preference" if motion else "reduce",
    ) as page:
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.errors = errors
        await page.goto(url)
        yield page


@contextlib.asynccontextmanager
async def board_on(sim: Simulator, *, height: int = 860, tick: float = 0.1) -> AsyncIterator[tuple[Any, Any]]:
    """Once every turn sent to ``sim`` finished or is parked on its gate: ``(board, page)``, the board
    on ``sim`` and a chromium page of it."""
    from agy_harness.composition.entrypoints.board.command import running_board

    await sim.wait_idle(timeout=10)
    async with (
        running_board(agy_ports=[sim.port], tick=tick) as board,
        browser_page(board.url, height=height) as page,
    ):
        yield board, page


async def cards_of(page: Any, *kinds: str) -> list[Any]:
    """The page's card of each gate kind, once each is shown."""
    shown = [page.locator(f"#cards .card[data-kind={kind}]") for kind in kinds]
    for card in shown:
        await card.wait_for()
    return shown


@dataclass
class Hostile:
    """One receiver on 127.0.0.1 that behaves as ``mode`` says; what it was sent and what it sent."""

    mode: str  # healthy | endless | trickle | silent
    port: int = 0
    posts: list[dict[str, Any]] = field(default_factory=list)
    connections: int = 0
    sent_bytes: int = 0
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:] if line)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            self.posts.append({"line": head[0], "headers": headers, "body": body.decode("utf-8")})
            self.arrived.set()
            if self.mode == "healthy":
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
                )
                await writer.drain()
            elif self.mode == "endless":
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
                )
                chunk = b"%x\r\n%s\r\n" % (1 << 16, b" " * (1 << 16))
                while True:
                    writer.write(chunk)
                    await writer.drain()
                    self.sent_bytes += 1 << 16
            elif self.mode == "trickle":
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n"
                )
                while True:
                    writer.write(b" ")
                    await writer.drain()
                    self.sent_bytes += 1
                    await asyncio.sleep(2)
            else:  # silent: never a byte
                await asyncio.Event().wait()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def wait_for(self, n: int, timeout: float = 60.0) -> list[dict[str, Any]]:
        async with asyncio.timeout(timeout):
            while len(self.posts) < n:
                self.arrived.clear()
                await self.arrived.wait()
        return self.posts


@contextlib.asynccontextmanager
async def receivers(*modes: str) -> AsyncIterator[list[Hostile]]:
    out = [Hostile(mode) for mode in modes]
    async with contextlib.AsyncExitStack() as stack:
        for r in out:
            server = await asyncio.start_server(r.handle, "127.0.0.1", 0)
            r.port = server.sockets[0].getsockname()[1]
            await stack.enter_async_context(server)
        yield out


def waiting_step(sim: Simulator, cascade_id: str) -> tuple[str, int, dict[str, Any]]:
    """(trajectoryId, stepIndex, step) of the step agy waits on in ``cascade_id``."""
    for index, step in enumerate(sim.steps(cascade_id)):
        if step.get("status", "").endswith("WAITING"):
            info = step["metadata"]["sourceTrajectoryStepInfo"]
            return info["trajectoryId"], index, step
    raise AssertionError(f"no waiting step in {cascade_id}")


async def answer_in_terminal(sim: Simulator, cascade_id: str, allow: bool = True) -> None:
    """agy's own terminal answers the waiting permission first."""
    trajectory, index, _ = waiting_step(sim, cascade_id)
    await sim.handle_interaction(
        cascade_id, {"trajectoryId": trajectory, "stepIndex": index, "permission": {"allow": allow}}
    )


async def until(predicate: Any, timeout: float = 10.0, every: float = 0.05) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(every)


def hold_withdrawals(board: Any) -> tuple[list[Any], Any]:
    """The board's live sessions stop seeing gates withdrawn (held here): the window where agy's
    terminal has answered and the board still shows the card, made to last. Returns the held
    events and a function that lets them through."""
    held: list[tuple[Any, Any]] = []
    for live in board.board.live.values():
        apply = live._apply

        def hold(event: Any, apply: Any = apply) -> None:
            if getattr(event, "type", "") == "gate_withdrawn":
                held.append((apply, event))
            else:
                apply(event)

        live._apply = hold

    def release() -> None:
        for apply, event in held:
            apply(event)

    return held, release
