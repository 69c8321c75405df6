"""One notification, sent through Apprise in a child process of the board (``python -I`` this file:
it imports the standard library and Apprise only).

The board gives the URL, title and body on stdin (never argv: any local user reads argv from /proc),
as one JSON object of at most :data:`MAX_INPUT` bytes. The child caps its own address space
(the order's ``memory``, at most :data:`MEMORY`), so a receiver streaming an endless body ends this process, never the board; the
board kills it at its deadline, so a receiver that trickles or never answers holds nothing else.
It prints one JSON line, ``{"ok": bool, "why": str}``; Apprise's own log (which may name the URL)
is silenced.
"""

from __future__ import annotations

import contextlib
import json
import logging
import resource
import sys

MAX_INPUT = 64 * 1024
MEMORY = 512 * 1024 * 1024  # the child's address space at most (Python and Apprise take ~40 MiB of it)
MIN_MEMORY = 96 * 1024 * 1024


def main() -> int:
    logging.disable(logging.CRITICAL)
    try:
        order = json.loads(sys.stdin.buffer.read(MAX_INPUT + 1)[:MAX_INPUT])
        url, title, body = str(order["url"]), str(order["title"]), str(order["body"])
        memory = min(MEMORY, max(MIN_MEMORY, int(order.get("memory", MEMORY))))
    except (ValueError, KeyError, TypeError, AttributeError):
        return _say(False, "the order is not readable")
    with contextlib.suppress(ValueError, OSError):  # (a lower hard limit already holds)
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    try:
        import apprise
    except ImportError:
        return _say(False, "apprise is not installed (pip install 'agy-harness[board]')")
    try:
        notifier = apprise.Apprise()
        if not notifier.add(url):
            return _say(False, "not a URL Apprise reads")
        ok = bool(notifier.notify(title=title, body=body))
    except MemoryError:
        return _say(False, "the receiver's answer outgrew the memory limit")
    return _say(ok, "" if ok else "the receiver refused it or did not answer well")


def _say(ok: bool, why: str) -> int:
    sys.stdout.write(json.dumps({"ok": ok, "why": why}) + "\n")
    sys.stdout.flush()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
