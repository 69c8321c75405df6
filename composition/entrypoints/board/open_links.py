"""The link in "agy needs you" that opens its card (issue 47): short-lived, single-use, bound to the
card's request digest; never the board's standing token in a push.

A gate's notification carries ``http://HOST:PORT/open/<ticket>``: 192 random bits, minted for that gate
(its conversation, its id and the digest of what it asks) and kept here only. ``GET /open/<ticket>``
needs no token (the Host rule still holds, :mod:`.guard`) and works **once**, within :data:`TTL`
seconds, and only while that gate still waits asking exactly the same (the same digest): then it
redirects to the board with its token, the card named (``#card-<anchor>``), as if the printed URL had
been opened. Anything else -- used, expired, unknown, answered, withdrawn, changed -- is a page saying
so and what to do (open the board from the address it printed), and grants nothing.

What this trades: whoever opens the link first, from this machine (the board listens on loopback), gets
the board as its printed URL gives it; a receiver that keeps the push gets a dead link once it is used
or old. The printed URL's token never leaves the machine.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

TTL = 15 * 60.0  # seconds a link opens its card
MAX_OPEN = 256  # links kept at once; the oldest is dropped first


class LinkRefused(Exception):
    """The link opens nothing (the message says why, in words for the person who opened it)."""


@dataclass(frozen=True)
class Opening:
    cascade_id: str
    gate_id: str
    digest: str  # the request the card showed when the link was made
    expires: float


class OpenLinks:
    """The links minted for notifications, each opened at most once (module doc)."""

    def __init__(self, ttl: float = TTL, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.clock = clock
        self._open: dict[str, Opening] = {}

    def mint(self, cascade_id: str, gate_id: str, digest: str) -> str:
        """A new ticket for that gate's card as it asks now."""
        now = self.clock()
        for ticket in [t for t, o in self._open.items() if o.expires <= now]:
            del self._open[ticket]
        while len(self._open) >= MAX_OPEN:
            del self._open[next(iter(self._open))]
        ticket = secrets.token_urlsafe(24)
        self._open[ticket] = Opening(cascade_id, gate_id, digest, now + self.ttl)
        return ticket

    def redeem(self, ticket: str) -> Opening:
        """The card ``ticket`` opens, once: it is gone after this call whatever the outcome."""
        opening = self._open.pop(ticket, None)
        if opening is None:
            raise LinkRefused(
                "This link has been used already, or is not one this board made: a notification's link "
                "opens its card once. Open the board from the address it printed in its terminal."
            )
        if opening.expires <= self.clock():
            minutes = self.ttl / 60
            raise LinkRefused(
                f"This link is older than {minutes:g} minute{'' if minutes == 1 else 's'} and opens nothing "
                "now. Open the board "
                "from the address it printed in its terminal."
            )
        return opening


__all__ = ["MAX_OPEN", "TTL", "LinkRefused", "OpenLinks", "Opening"]
