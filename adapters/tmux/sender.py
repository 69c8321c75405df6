"""TurnSender over tmux: paste a user turn into agy's TUI composer and verify the turn started.

The flow of :meth:`TmuxTurnSender.send`:

1. wait until the pane's composer is *ready* (a predicate over the captured screen; by default it
   recognises the simulated TUI's footer ``agy <version> · idle`` and, heuristically, agy's real TUI);
2. check the text (:func:`~.text.turn_text`: CR/CRLF become ``\\n``; a control character, a lone
   surrogate or an empty turn is refused with ValueError before anything is typed), load it byte
   for byte into a private tmux buffer (``load-buffer`` from a private temp file: ``;``, ``\\;`` and
   any length survive) and paste it with ``paste-buffer -p -d -r``: bracketed paste, so a
   multi-line text is one turn, not one per line;
3. press Enter;
4. verify the turn started: with a ``step_reader`` a new USER_INPUT step carrying the same text appears
   (compared with the USER_INPUT keys present before the paste); without one, the footer leaves idle
   (or, on the simulated TUI, the composer empties and the text shows up in the conversation);
5. retry within ``start_timeout``, never double-submitting: a retry presses Enter again when the
   composer still holds the text, re-pastes only when the composer is known to be empty, and a
   USER_INPUT with the same text ends the send as a success whenever it is seen.

Errors come before typing (:class:`ComposerNotReady`, :class:`PaneNotFound`, ValueError for text that
cannot be typed exactly) or when the text provably never left the composer (:class:`TurnNotStarted`).
Once the pane shows the turn submitted, ``send`` returns: a turn the step reader does not confirm
is logged and counted in :attr:`TmuxTurnSender.unconfirmed`, never raised (a caller's retry would
submit it twice). The module is split along its seams: ``errors``, ``text``, ``screen`` (reading the
TUI), ``plumbing`` (tmux commands).
"""

from __future__ import annotations

import asyncio
import logging
import uuid

import libtmux

from agy_harness.core.steps import parse_step, user_text
from agy_harness.ports.protocols import StepSnapshot

from .errors import (
    ComposerNotReady,
    TmuxError,
    TurnNotStarted,
    TurnUnconfirmed,
)
from .plumbing import _check, load_buffer
from .screen import (
    ComposerReader,
    ScreenPredicate,
    _collapsed,
    _echo_count,
    _holds,
    _norm,
    default_composer,
    default_ready,
)
from .text import turn_text

log = logging.getLogger(__name__)


class TmuxTurnSender:
    """TurnSender typing into agy's TUI in a tmux pane (see the module docstring for the flow).

    ``ready`` tells from the captured screen (one string per row) that the composer accepts a turn;
    ``composer`` returns what the composer holds (``""`` empty, ``None`` unknown). Both default to
    the simulated TUI when its footer is on screen and to a heuristic for agy's real TUI otherwise.
    """

    name = "tmux"

    def __init__(
        self,
        pane_id_or_target: str,
        *,
        server: libtmux.Server | None = None,
        step_reader: StepSnapshot | None = None,
        ready_timeout: float = 10.0,
        start_timeout: float = 10.0,
        retries: int = 2,
        ready: ScreenPredicate = default_ready,
        composer: ComposerReader = default_composer,
        poll_interval: float = 0.05,
    ) -> None:
        self.target = pane_id_or_target
        self._server = server if server is not None else libtmux.Server()
        self._reader = step_reader
        self._ready_timeout = ready_timeout
        self._start_timeout = start_timeout
        self._retries = max(0, retries)
        self._ready = ready
        self._composer = composer
        self._poll = poll_interval
        #: Turns the pane showed submitted but the step reader never confirmed (see TurnUnconfirmed).
        self.unconfirmed: list[str] = []

    # -- tmux ------------------------------------------------------------------------------

    async def _tmux(self, command: str, *args: str) -> list[str]:
        result = await asyncio.to_thread(self._server.cmd, command, *args)
        return _check(self.target, command, result)

    async def capture(self) -> list[str]:
        """The pane's visible screen, one string per row (wrapped rows joined, trailing spaces cut)."""
        rows = await self._tmux("capture-pane", "-p", "-J", "-t", self.target)
        return [row.rstrip() for row in rows]

    async def _paste(self, text: str) -> None:
        buffer = f"agy-harness-{uuid.uuid4().hex[:12]}"
        try:
            await load_buffer(self._server, self.target, buffer, text)
            # -p: bracketed paste (when the application asked for it); -r: keep LF (do not turn it
            # into CR, which an application without bracketed paste would take as Enter); -d: delete.
            await self._tmux("paste-buffer", "-p", "-d", "-r", "-b", buffer, "-t", self.target)
        except TmuxError:
            await asyncio.to_thread(self._server.cmd, "delete-buffer", "-b", buffer)
            raise

    async def _enter(self) -> None:
        await self._tmux("send-keys", "-t", self.target, "Enter")

    # -- steps -----------------------------------------------------------------------------

    async def _user_inputs(self, cascade_id: str) -> dict[str, str] | None:
        """USER_INPUT key -> text; None when there is no reader or the read failed."""
        if self._reader is None:
            return None
        try:
            raws = await self._reader.read_steps(cascade_id)
        except Exception as exc:  # a failed poll is retried until the deadline
            log.warning("tmux turn-send: reading the steps of %s failed: %s", cascade_id, exc)
            return None
        out: dict[str, str] = {}
        for raw in raws:
            step = parse_step(raw)
            if step is not None and step.type == "USER_INPUT":
                out[str(step.key)] = user_text(step)
        return out

    def _ours(self, inputs: dict[str, str] | None, baseline: dict[str, str], text: str) -> bool:
        if inputs is None:
            return False
        wanted = _norm(text)
        wanted_flat = _collapsed(text)
        for key, got in inputs.items():
            if key not in baseline and (_norm(got) == wanted or _collapsed(got) == wanted_flat):
                return True
        return False

    # -- the flow --------------------------------------------------------------------------

    async def wait_ready(self, timeout: float | None = None) -> list[str]:
        """Wait until the composer is ready and empty; returns the screen. Raises ComposerNotReady."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self._ready_timeout if timeout is None else timeout)
        lines: list[str] = []
        reason = "never seen idle"
        while True:
            lines = await self.capture()
            if self._ready(lines):
                held = self._composer(lines)
                if not held:
                    return lines
                reason = f"the composer holds unsent text {held[:60]!r}"
            else:
                reason = "the TUI stayed busy (not idle)"
            if loop.time() >= deadline:
                raise ComposerNotReady(self.target, reason, lines[-6:])
            await asyncio.sleep(self._poll)

    async def send(self, cascade_id: str, text: str) -> None:
        cleaned = turn_text(text)  # ValueError before anything is typed
        loop = asyncio.get_running_loop()

        lines = await self.wait_ready()
        baseline: dict[str, str] = {}
        if self._reader is not None:
            # Before anything is typed: a failure here is safe to surface as is.
            baseline_read = await self._reader.read_steps(cascade_id)
            for raw in baseline_read:
                step = parse_step(raw)
                if step is not None and step.type == "USER_INPUT":
                    baseline[str(step.key)] = user_text(step)
        echo_before = _echo_count(lines, cleaned)

        await self._paste(cleaned)
        await self._enter()

        deadline = loop.time() + self._start_timeout
        window = self._start_timeout / (self._retries + 1)
        attempts = 1
        started_on_screen = False  # the pane shows a turn that the step reader does not (yet) confirm
        while True:
            attempt_deadline = min(loop.time() + window, deadline)
            verified, seen, lines = await self._verify(
                cascade_id, cleaned, baseline, echo_before, attempt_deadline
            )
            if verified:
                log.debug("tmux turn-send: turn started in %s after %d attempt(s)", self.target, attempts)
                return
            started_on_screen = started_on_screen or seen
            if loop.time() >= deadline or (attempts > self._retries and not started_on_screen):
                if started_on_screen:
                    # Submitted: never a failure now (a caller's retry would submit it twice).
                    unconfirmed = TurnUnconfirmed(self.target, cascade_id, lines[-6:])
                    self.unconfirmed.append(str(unconfirmed))
                    log.warning("tmux turn-send: %s", unconfirmed)
                    return
                raise TurnNotStarted(self.target, "no new turn was seen", attempts, lines[-6:])
            if started_on_screen:
                continue  # typing again could submit twice: only wait for the reader until the deadline
            attempts += 1
            held = self._composer(lines)
            if held is None or _holds(held, cleaned):
                # The text is (or may be) in the composer: Enter was lost. Pressing it again is safe.
                log.info("tmux turn-send: retry %d: pressing Enter again in %s", attempts, self.target)
                await self._enter()
            elif held == "":
                if not self._ready(lines):
                    continue  # busy with something: keep watching, type nothing
                echo = _echo_count(lines, cleaned)
                if echo is None or echo_before is None:
                    continue  # cannot prove the paste was lost: never re-paste blind
                if echo > echo_before:
                    started_on_screen = True
                    continue
                log.info(
                    "tmux turn-send: retry %d: composer empty, pasting again in %s", attempts, self.target
                )
                await self._paste(cleaned)
                await self._enter()
            else:
                raise TurnNotStarted(
                    self.target, f"the composer holds other text {held[:60]!r}", attempts, lines[-6:]
                )

    async def _verify(
        self,
        cascade_id: str,
        text: str,
        baseline: dict[str, str],
        echo_before: int | None,
        deadline: float,
    ) -> tuple[bool, bool, list[str]]:
        """Poll until the turn is confirmed or ``deadline``: ``(confirmed, seen_on_screen, screen)``.

        With a step reader only a matching new USER_INPUT confirms; the screen (footer left idle, the
        text echoed in the conversation) is then just evidence that something was submitted.
        """
        loop = asyncio.get_running_loop()
        seen = False
        while True:
            if self._reader is not None and self._ours(await self._user_inputs(cascade_id), baseline, text):
                return True, True, await self.capture()
            lines = await self.capture()
            held = self._composer(lines)
            echo = _echo_count(lines, text)
            on_screen = not self._ready(lines) or (
                held == "" and echo is not None and echo_before is not None and echo > echo_before
            )
            if on_screen and self._reader is None:
                return True, True, lines
            seen = seen or on_screen
            if loop.time() >= deadline:
                if self._reader is not None and self._ours(
                    await self._user_inputs(cascade_id), baseline, text
                ):
                    return True, True, lines
                return False, seen, lines
            await asyncio.sleep(self._poll)
