"""Notifications through Apprise (ntfy, Slack, Matrix, Telegram, Pushover, e-mail, a desktop...), when
a gate opens, a turn ends or a turn fails.

Off by default: nothing leaves the machine unless the user names Apprise URLs, in a file only they can
read (``--notify-urls-file``, refused when its group or others may read it) or in the environment
(:data:`ENV`); never in argv, which any local user reads from /proc. A URL carries its secrets (a
token, a password, a topic), so logs name a URL only by its scheme and its place in the list.

What is sent carries **no request content** by default: "agy needs you in <project>", with a link
that opens the board's card once, for a short while, while it asks the same (:mod:`.open_links`; the
board's token never leaves the machine).
The command line, the question or a failure's reason go out only with ``content=True``
(``--notify-content``).

Every send is bounded: each one (one note to one URL) runs in its own child process
(:mod:`.send_note`), with a total deadline after which it is killed, and an address-space limit
that bounds whatever the receiver sends back. At most :data:`PER_URL` sends to one URL run at once,
and at most :data:`QUEUE` notes wait for it; a note past that is dropped with a log line. A slow
receiver holds only its own notes, never another URL's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agy_harness.core.display import one_line
from agy_harness.ports.tasks import reap

from .open_links import OpenLinks

log = logging.getLogger("agy_harness.board")

KINDS = ("gate", "turn", "failed")
ENV = "AGY_HARNESS_NOTIFY_URLS"
DEADLINE = 20.0  # seconds a send may take in all (Apprise's own connect/read timeouts are 4 s each)
PER_URL = 2  # sends to one URL at once
QUEUE = 20  # notes waiting for one URL; more are dropped
MAX_URLS = 16
MAX_FILE = 64 * 1024
MAX_TEXT = 300
MAX_REPLY = 4096
CHILD = str(Path(__file__).with_name("send_note.py"))  # run as a script: the package is not imported
MEMORY = 256 * 1024 * 1024  # a send's child process: its address space (bounds what a receiver sends back)


class NotifySetupError(ValueError):
    """The notification URLs cannot be used as given (the message says why and what to do)."""


def redact(url: str, index: int) -> str:
    """How a log names ``url``: its scheme and its place in the list, nothing of its secrets."""
    scheme = url.split("://", 1)[0] if "://" in url else "?"
    return f"{one_line(scheme[:20])}://… (URL #{index + 1})"


def parse_urls(text: str) -> tuple[str, ...]:
    """URLs separated by whitespace or commas; ``#`` starts a comment line."""
    lines = (line.strip() for line in text.splitlines())
    words = [w for line in lines if not line.startswith("#") for w in line.replace(",", " ").split()]
    if len(words) > MAX_URLS:
        raise NotifySetupError(f"at most {MAX_URLS} notification URLs, got {len(words)}")
    return tuple(words)


def read_urls_file(path: str) -> tuple[str, ...]:
    """The URLs in ``path``: a regular file of this user that no one else may read (0600)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise NotifySetupError(f"cannot open the notification URLs file {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise NotifySetupError(f"{path} is not a regular file")
        if info.st_uid != os.getuid():
            raise NotifySetupError(f"{path} belongs to another user; the URLs hold your secrets")
        if info.st_mode & 0o077:
            raise NotifySetupError(
                f"{path} may be read by others (mode {stat.S_IMODE(info.st_mode):o}); "
                f"its URLs hold secrets: chmod 600 {path}"
            )
        data = f.read(MAX_FILE + 1)
    if len(data) > MAX_FILE:
        raise NotifySetupError(f"{path} is over {MAX_FILE} bytes")
    try:
        return parse_urls(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise NotifySetupError(f"{path} is not UTF-8 text") from None


def urls_from(path: str | None, environ: Mapping[str, str]) -> tuple[str, ...]:
    """The URLs from ``path`` (when given) and the environment variable :data:`ENV`."""
    urls = read_urls_file(path) if path else ()
    return urls + parse_urls(environ.get(ENV, ""))


def check_urls(urls: tuple[str, ...]) -> None:
    """Each URL is one Apprise reads (NotifySetupError, naming it redacted, if not)."""
    try:
        import apprise
    except ImportError:
        raise NotifySetupError("notifications need Apprise: pip install 'agy-harness[board]'") from None
    # Apprise logs a URL it cannot read, secrets and all: its log is off in the board's process
    logging.getLogger("apprise").disabled = True
    for index, url in enumerate(urls):
        if apprise.Apprise.instantiate(url) is None:
            raise NotifySetupError(
                f"notification {redact(url, index)} is not a URL Apprise reads "
                "(see https://github.com/caronc/apprise/wiki)"
            )


@dataclass(frozen=True)
class Note:
    kind: str
    title: str
    body: str


def _cut(text: str) -> str:
    text = one_line(" ".join(text.split()))
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


class Notifier:
    """Sends a :class:`Note` to every URL for the ``kinds`` asked for (module doc)."""

    def __init__(
        self,
        urls: tuple[str, ...],
        kinds: tuple[str, ...] = KINDS,
        *,
        content: bool = False,
        deadline: float = DEADLINE,
        per_url: int = PER_URL,
        memory: int = MEMORY,
    ) -> None:
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise NotifySetupError(
                f"unknown notification kind(s) {sorted(unknown)}; known: {', '.join(KINDS)}"
            )
        if not urls:
            raise NotifySetupError("no notification URLs")
        self.urls = urls
        self.kinds = kinds
        self.content = content
        self.deadline = deadline
        self.per_url = per_url
        self.memory = memory
        self.link = ""  # the board's address (no token), set once it listens
        self.opens: OpenLinks | None = None  # the board's single-use links to a card, set with link
        self._running: list[set[asyncio.Task[None]]] = [set() for _ in urls]
        self._queues: list[asyncio.Queue[Note]] = [asyncio.Queue(QUEUE) for _ in urls]
        self.sent = 0
        self.failed = 0
        self.dropped = 0

    # -- what is said -------------------------------------------------------------------------
    def note(
        self, kind: str, project: str, *, ask: str = "", reason: str = "", card: str = "", ticket: str = ""
    ) -> Note:
        """The note for ``kind`` in ``project``; ``ask`` / ``reason`` only when content is on; a gate's
        link opens its card with ``ticket`` (:mod:`.open_links`), else names it by its anchor."""
        where = f" in {_cut(project)}" if project else ""
        if kind == "gate":
            title, body = "agy needs you", f"agy needs you{where}."
            if self.content and ask:
                body += f" {_cut(ask)}"
        elif kind == "turn":
            title, body = "agy finished a turn", f"agy finished a turn{where}."
        else:
            title, body = "agy failed", f"agy's turn failed{where}."
            if self.content and reason:
                body += f" {_cut(reason)}"
        if self.link and ticket and kind == "gate":
            body += f"\n{self.link}open/{ticket}"
        elif self.link:
            body += f"\n{self.link}" + (f"#card-{card}" if card and kind == "gate" else "")
        return Note(kind, title, body)

    def notify(
        self,
        kind: str,
        project: str,
        *,
        ask: str = "",
        reason: str = "",
        card: str = "",
        opens: tuple[str, str, str] | None = None,
    ) -> None:
        """Queue the note for every URL; ``opens`` (a gate's conversation, id and digest) gets it a
        single-use link to its card."""
        if kind not in self.kinds:
            return
        ticket = self.opens.mint(*opens) if self.opens is not None and opens is not None else ""
        note = self.note(kind, project, ask=ask, reason=reason, card=card, ticket=ticket)
        for index, url in enumerate(self.urls):
            try:
                self._queues[index].put_nowait(note)
            except asyncio.QueueFull:
                self.dropped += 1
                log.warning(
                    "board: a %s notification to %s is dropped: %d earlier ones still wait for it",
                    kind,
                    redact(url, index),
                    self._queues[index].qsize(),
                )
                continue
            running = self._running[index]
            if len(running) < self.per_url:
                task = asyncio.create_task(self._work(index, url), name=f"agy-board-notify-{index}")
                running.add(task)
                task.add_done_callback(running.discard)

    async def _work(self, index: int, url: str) -> None:
        """Send ``url``'s waiting notes, one at a time, until none waits."""
        queue = self._queues[index]
        while not queue.empty():
            await self._send(index, url, queue.get_nowait())

    @property
    def busy(self) -> bool:
        """A send is still running."""
        return any(self._running) or any(not q.empty() for q in self._queues)

    # -- how it is sent -----------------------------------------------------------------------
    async def _send(self, index: int, url: str, note: Note) -> None:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",  # (isolated: no PYTHON* variables, no user site; the script imports Apprise only)
            CHILD,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,  # (a Ctrl-C at the board's terminal is the board's)
        )
        order = json.dumps(
            {"url": url, "title": note.title, "body": note.body, "memory": self.memory}
        ).encode()
        why = ""
        try:
            async with asyncio.timeout(self.deadline):
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write(order)
                await proc.stdin.drain()
                proc.stdin.close()
                reply = await proc.stdout.read(MAX_REPLY)
                await proc.wait()
            try:
                said = json.loads(reply)
                ok, why = bool(said["ok"]), str(said.get("why", ""))[:200]
            except (ValueError, KeyError, TypeError):
                ok, why = False, "the sender ended without a word"
        except TimeoutError:
            ok, why = False, f"no answer within {self.deadline:g}s; dropped"
        finally:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        if ok:
            self.sent += 1
            log.info("board: %s notification sent to %s", note.kind, redact(url, index))
        else:
            self.failed += 1
            log.warning("board: %s notification to %s failed: %s", note.kind, redact(url, index), why)

    async def aclose(self) -> None:
        """Let running sends finish for a moment, then end them."""
        tasks = [t for running in self._running for t in running]
        if tasks:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(2.0):
                    await asyncio.gather(*(asyncio.shield(t) for t in tasks), return_exceptions=True)
        for t in tasks:
            t.cancel()
        await reap(*tasks)


def link_for(base_url: str) -> str:
    """The board's address without its token (what a notification links to)."""
    return base_url.split("?", 1)[0]


__all__ = ["ENV", "KINDS", "Notifier", "NotifySetupError", "check_urls", "link_for", "urls_from"]
