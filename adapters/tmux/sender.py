"""TurnSender over tmux: paste a user turn into agy's TUI composer and verify the turn started.

The flow of :meth:`TmuxTurnSender.send`:

1. wait until the pane's composer is *ready* (a predicate over the captured screen; by default it
   recognises the simulated TUI's footer ``agy <version> · idle`` and, heuristically, agy's real TUI);
2. strip control characters from the text (``\\n`` and ``\\t`` are kept; CR/CRLF become ``\\n``), load it
   into a private tmux buffer (``set-buffer`` in chunks, so any length works) and paste it with
   ``paste-buffer -p -d -r``: bracketed paste, so a multi-line text is one turn, not one per line;
3. press Enter;
4. verify the turn started: with a ``step_reader`` a new USER_INPUT step carrying the same text appears
   (compared with the USER_INPUT keys present before the paste); without one, the footer leaves idle
   (or, on the simulated TUI, the composer empties and the text shows up in the conversation);
5. retry within ``start_timeout``, never double-submitting: a retry presses Enter again when the
   composer still holds the text, re-pastes only when the composer is known to be empty, and a
   USER_INPUT with the same text ends the send as a success whenever it is seen.
"""

from __future__ import annotations

import asyncio
import logging
import re
import unicodedata
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import libtmux

from agy_harness.core.steps import parse_step, user_text
from agy_harness.ports.protocols import StepSnapshot

log = logging.getLogger(__name__)

ScreenPredicate = Callable[[Sequence[str]], bool]
ComposerReader = Callable[[Sequence[str]], str | None]

# tmux refuses a command line above ~16 KiB ("command too long"): load the buffer in chunks.
_CHUNK_BYTES = 8000


# ---------------------------------------------------------------------------------------------
# Errors


class TmuxError(Exception):
    """Base of the tmux adapter's errors."""


class TmuxCommandFailed(TmuxError):
    def __init__(self, command: str, stderr: str) -> None:
        super().__init__(f"tmux {command} failed: {stderr or 'no error text'}")
        self.command = command
        self.stderr = stderr


class PaneNotFound(TmuxError):
    """The target pane (or the tmux server) does not exist."""

    def __init__(self, target: str, detail: str = "") -> None:
        super().__init__(f"tmux pane {target!r} not found" + (f": {detail}" if detail else ""))
        self.target = target


class ComposerNotReady(TmuxError):
    """The composer did not become ready (idle, empty) before the deadline; nothing was typed."""

    def __init__(self, target: str, reason: str, screen_tail: Sequence[str] = ()) -> None:
        tail = " | ".join(line for line in screen_tail if line.strip())
        super().__init__(
            f"composer of pane {target!r} not ready: {reason}" + (f" [screen: {tail}]" if tail else "")
        )
        self.target = target
        self.reason = reason
        self.screen_tail = list(screen_tail)


class TurnNotStarted(TmuxError):
    """The text was typed but no turn was seen starting within the deadline (after the retries)."""

    def __init__(self, target: str, reason: str, attempts: int, screen_tail: Sequence[str] = ()) -> None:
        tail = " | ".join(line for line in screen_tail if line.strip())
        super().__init__(
            f"turn in pane {target!r} not started after {attempts} attempt(s): {reason}"
            + (f" [screen: {tail}]" if tail else "")
        )
        self.target = target
        self.reason = reason
        self.attempts = attempts
        self.screen_tail = list(screen_tail)


class TurnUnconfirmed(TmuxError):
    """The pane shows a submitted turn but the step reader never saw a USER_INPUT with the text.

    The sender stops typing (a retry could submit twice). Usually the pane serves another cascade
    than the one asked for (a ``/clear`` happened, or the wrong pane).
    """

    def __init__(self, target: str, cascade_id: str, screen_tail: Sequence[str] = ()) -> None:
        tail = " | ".join(line for line in screen_tail if line.strip())
        super().__init__(
            f"pane {target!r} shows a submitted turn but no USER_INPUT with its text appeared on cascade "
            f"{cascade_id!r} (does the pane serve another cascade?)" + (f" [screen: {tail}]" if tail else "")
        )
        self.target = target
        self.cascade_id = cascade_id
        self.screen_tail = list(screen_tail)


# ---------------------------------------------------------------------------------------------
# Text


def clean_text(text: str) -> str:
    """The text with control characters removed: CRLF/CR become LF; LF and TAB are kept.

    Removing ESC also makes it impossible to end the bracketed paste early (``ESC[201~``).
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch) != "Cc")


def _norm(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().replace("\r\n", "\n").split("\n"))


def _collapsed(text: str) -> str:
    return " ".join(text.split())


def _holds(composer: str, text: str) -> bool:
    """The composer shows (the start of) ``text``."""
    shown = _collapsed(composer)
    wanted = _collapsed(text)
    if not shown:
        return False
    probe = shown[:30]
    return wanted.startswith(probe) or probe in wanted


# ---------------------------------------------------------------------------------------------
# Screen predicates: the simulated TUI (exact) and agy's real TUI (heuristic)

SIM_FOOTER = re.compile(r"^agy (\S+) · (idle|working|waiting for approval)\s*$")
_SEPARATOR = re.compile(r"^─{3,}$")


def _last_nonblank(lines: Sequence[str]) -> int:
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].strip():
            return i
    return -1


def _sim_footer(lines: Sequence[str]) -> tuple[int, str] | None:
    i = _last_nonblank(lines)
    if i < 0:
        return None
    m = SIM_FOOTER.match(lines[i].strip())
    return (i, m.group(2)) if m else None


def sim_ready(lines: Sequence[str]) -> bool:
    """The simulated TUI: its footer (the last line) says ``agy <version> · idle``."""
    footer = _sim_footer(lines)
    return footer is not None and footer[1] == "idle"


def _sim_composer_region(lines: Sequence[str]) -> tuple[int, int] | None:
    footer = _sim_footer(lines)
    if footer is None:
        return None
    end = footer[0]
    for i in range(end - 1, -1, -1):
        if _SEPARATOR.match(lines[i].strip()):
            return i, end
    return None


def sim_composer(lines: Sequence[str]) -> str | None:
    """What the simulated TUI's composer holds (between the last ``───`` rule and the footer)."""
    region = _sim_composer_region(lines)
    if region is None:
        return None
    rows = list(lines[region[0] + 1 : region[1]])
    if not rows or not rows[0].startswith(">"):
        return None
    parts = [rows[0][2:] if rows[0].startswith("> ") else rows[0][1:]]
    parts += [row[2:] if row.startswith("  ") else row for row in rows[1:]]
    return "\n".join(parts).rstrip()


# agy's real TUI is not recorded: these markers are a conservative heuristic (an Ink-style composer
# line starting with ">" and no "working"/approval marker on screen). Pass your own predicates to
# TmuxTurnSender when they do not fit the agy version in use.
AGY_BUSY_MARKERS = (
    "esc to cancel",
    "esc to interrupt",
    "ctrl+c to interrupt",
    "waiting for approval",
    "waiting for user",
    "allow execution",
    "do you want to",
)
_BOX = "│┃║╭╮╰╯ \t"
_AGY_PROMPT = re.compile(r"^(>|❯|›)( |$)")
_AGY_PLACEHOLDERS = ("type your message", "ask anything", "send a message")


def _agy_prompt_line(lines: Sequence[str]) -> str | None:
    for line in reversed(lines):
        content = line.strip(_BOX)
        if _AGY_PROMPT.match(content):
            return content
    return None


def agy_ready(lines: Sequence[str]) -> bool:
    """Heuristic for agy's real TUI: a composer prompt line is visible and nothing says it is busy."""
    tail = "\n".join(lines[-15:]).lower()
    if any(marker in tail for marker in AGY_BUSY_MARKERS):
        return False
    return _agy_prompt_line(lines) is not None


def agy_composer(lines: Sequence[str]) -> str | None:
    """Heuristic: the text after agy's composer prompt (``""`` for a placeholder), ``None`` if unseen."""
    content = _agy_prompt_line(lines)
    if content is None:
        return None
    rest = content[1:].strip()
    if any(rest.lower().startswith(p) for p in _AGY_PLACEHOLDERS):
        return ""
    return rest


def default_ready(lines: Sequence[str]) -> bool:
    """The simulated TUI's footer when it is on screen, else the agy heuristic."""
    if _sim_footer(lines) is not None:
        return sim_ready(lines)
    return agy_ready(lines)


def default_composer(lines: Sequence[str]) -> str | None:
    if _sim_footer(lines) is not None:
        return sim_composer(lines)
    return agy_composer(lines)


def _echo_count(lines: Sequence[str], text: str) -> int | None:
    """How often ``text``'s first line shows above the simulated TUI's composer (None: layout unknown)."""
    region = _sim_composer_region(lines)
    if region is None:
        return None
    first = _collapsed(text.strip().split("\n")[0])[:40]
    if not first:
        return None
    return sum(1 for line in lines[: region[0]] if first in _collapsed(line))


# ---------------------------------------------------------------------------------------------
# tmux plumbing


def _check(target: str, command: str, result: Any) -> list[str]:
    stderr = "\n".join(str(s) for s in (result.stderr or []))
    if result.returncode != 0 or stderr:
        lowered = stderr.lower()
        if (
            "can't find" in lowered
            or "no server running" in lowered
            or "error connecting" in lowered
            or "no such file" in lowered
        ):
            raise PaneNotFound(target, stderr)
        raise TmuxCommandFailed(command, stderr)
    return [str(s) for s in result.stdout]


def find_pane_pid(target: str, server: libtmux.Server | None = None) -> int:
    """The pid of the process running in the pane (its shell or agy): scope port discovery with it."""
    srv = server if server is not None else libtmux.Server()
    out = _check(target, "display-message", srv.cmd("display-message", "-p", "-t", target, "#{pane_pid}"))
    try:
        return int(out[0].strip())
    except (IndexError, ValueError):
        raise TmuxCommandFailed("display-message", f"no pane_pid in {out!r}") from None


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
        chunks: list[str] = []
        current: list[str] = []
        size = 0
        for ch in text:
            n = len(ch.encode("utf-8"))
            if size + n > _CHUNK_BYTES and current:
                chunks.append("".join(current))
                current, size = [], 0
            current.append(ch)
            size += n
        if current:
            chunks.append("".join(current))
        try:
            for i, chunk in enumerate(chunks):
                append = ("-a",) if i else ()
                await self._tmux("set-buffer", *append, "-b", buffer, "--", chunk)
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
        cleaned = clean_text(text)
        if not cleaned.strip():
            raise ValueError(
                "refusing to send an empty turn (nothing left after removing control characters)"
            )
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
                    raise TurnUnconfirmed(self.target, cascade_id, lines[-6:])
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
