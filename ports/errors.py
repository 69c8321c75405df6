"""The library's one error vocabulary: a root type, and one subclass for each thing a caller acts on.

An adapter says what went wrong once, where it sees it (an HTTP status, a connect code, a process
table), by raising one of these (or a subclass of its own); the core, the harness's roles and the
entry points read only these types and their fields, never a status code or agy's error text::

    AgyHarnessError                 everything this library raises on purpose
    ├── AgyNotBound                 no agy to bind
    │   ├── AgyNotFound             none serves the conversation (``wrong_cascade``: agy runs, the id is wrong)
    │   └── AgyAmbiguous            more than one answers: the library does not guess
    ├── AgyCallFailed               a call to agy failed (``message``: agy's own words, if any)
    │   ├── AgyUnreachable          no answer at all (refused, reset, TLS, timeout): try again later
    │   ├── MethodMissing           this agy does not serve the method: the adapter needing it is demoted
    │   └── InteractionRejected     agy refused an answer; ``reason`` says what to do
    ├── SourceIdle                  a live step source was silent while agy works: re-open it
    ├── NoTurnSender (RuntimeError) nothing can start a turn on this agy
    ├── UnknownGate (KeyError)      an answer names a gate this session never saw
    ├── AnswerNotDelivered          agy took no answer (closed, answered, asks something else)
    ├── NoConversation              agy has no conversation to bind yet
    ├── UnsafeState                 a state location other users could touch: refused
    ├── EventRefused                a sink refuses an event for its content: quarantine it
    ├── LedgerUnavailable (OSError) the decision ledger could not record: the answer is not sent
    ├── RulesInvalid (ValueError)   a rules file (or a proposal) that cannot be used: the rules say why
    └── (core) AnswerError          an answer that is not an unambiguous answer to its gate
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal


class AgyHarnessError(Exception):
    """The root of every error this library raises on purpose."""


# -- binding agy -------------------------------------------------------------------------------


class AgyNotBound(AgyHarnessError):
    """No agy could be bound."""


class AgyNotFound(AgyNotBound):
    """No agy serves the conversation: none runs, none answers, or (``wrong_cascade``) a live agy
    answers but hosts other conversations, so the conversation id is the problem. ``others``: ports
    found whose socket is another user's (nothing was sent to them)."""

    wrong_cascade = False
    others: tuple[int, ...] = ()


class AgyAmbiguous(AgyNotBound):
    """More than one agy answers (on ``ports``); the library refuses to guess."""

    ports: Sequence[int] = ()


class NoConversation(AgyHarnessError, RuntimeError):
    """agy has no conversation yet (name one, or start one)."""


# -- calls to agy ------------------------------------------------------------------------------


class AgyCallFailed(AgyHarnessError):
    """A call to agy failed. ``message`` is agy's own words (or the transport's), when there are any."""

    message = ""


class AgyUnreachable(AgyCallFailed):
    """No answer at all: connection refused or reset, TLS failure, timeout. Worth trying again."""


class ConversationUnreadable(AgyCallFailed):
    """agy's answer for the conversation is over the size limit even with every long string cut as
    hard as the reader cuts: it cannot be followed by this source (said once, as a notice)."""


class MethodMissing(AgyCallFailed):
    """This agy does not serve the method (an older or newer agy): the adapter that needs it is
    demoted (stream -> poll -> transcript tail; RPC turn-send -> tmux), never retried."""


#: What agy's refusal of an answer means for the one delivering it:
#: ``not_registered``: agy has no input registered for that step -- a step that went stale (agy timed
#: it out and re-asked) or an answer of the wrong shape; re-reading the step tells which;
#: ``transient``: agy failed, not the answer (5xx, overloaded, timed out): retry while the step waits;
#: ``final``: agy says the request is wrong: do not retry.
RejectionReason = Literal["not_registered", "transient", "final"]

_TRANSIENT_CODES = frozenset({"unavailable", "deadline_exceeded", "resource_exhausted", "aborted"})


class InteractionRejected(AgyCallFailed):
    """agy refused an answer (``HandleCascadeUserInteraction``); ``reason`` says what to do about it.

    Classified once, here, when it is made: agy overloads HTTP 500 "input not registered for step
    N" for a stale step and a wrong shape (``not_registered``); any other 5xx, a timeout, unavailable
    or overload code, or no status at all is ``transient``; a 4xx other than 408/429 is ``final``.
    ``status`` and ``code`` stay for the logs; nothing decides on them but this classification.
    """

    def __init__(
        self, message: str, *, status: int = 0, code: str = "", reason: RejectionReason | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.reason: RejectionReason = reason or self.classify(status, code, message)

    @property
    def detail(self) -> str:
        """What agy said, as a notice quotes it (``HTTP 500: input not registered for step 6``)."""
        return f"HTTP {self.status}: {self.message}" if self.status else self.message

    @staticmethod
    def classify(status: int, code: str, message: str) -> RejectionReason:
        if "input not registered" in message.lower():
            return "not_registered"
        if code in _TRANSIENT_CODES or status == 0 or status >= 500 or status in (408, 429):
            return "transient"
        return "final"


# -- reading, sending, state -------------------------------------------------------------------


class SourceIdle(AgyHarnessError):
    """A live step source was silent past its idle deadline while agy should be producing (a turn
    runs, no gate waits): the connection may be half-open; re-open the source."""


class NoTurnSender(AgyHarnessError, RuntimeError):
    """No turn sender can reach this agy (an agy without RPC turn-send, and no tmux pane to type into)."""


class UnknownGate(AgyHarnessError, KeyError):
    """An answer names a gate this session never saw."""


class AnswerNotDelivered(AgyHarnessError, RuntimeError):
    """agy took no answer: the gate already took one, it closed, or agy now asks something else (a
    notice event says which). Nothing reached agy."""


class UnsafeState(AgyHarnessError, OSError):
    """A state location another local user could read, replace or write: the library refuses it."""


class LedgerUnavailable(AgyHarnessError, OSError):
    """The decision ledger could not record a decision (a write failed, its location is unsafe): the
    answer it records is not sent to agy, and a notice says why."""


class EventRefused(AgyHarnessError, ValueError):
    """What a sink raises when its consumer refuses an event for its content, for good (not because
    it is down): the harness quarantines that event with a notice instead of retrying it."""


class RulesInvalid(AgyHarnessError, ValueError):
    """A rules file that cannot be used (its text, a rule, an example), or a request no rule can pin
    down: the message says where and why. Rules that fail to load are off: every gate is asked."""


__all__ = [
    "AgyAmbiguous",
    "AgyCallFailed",
    "AgyHarnessError",
    "AgyNotBound",
    "AgyNotFound",
    "AgyUnreachable",
    "AnswerNotDelivered",
    "EventRefused",
    "InteractionRejected",
    "LedgerUnavailable",
    "MethodMissing",
    "NoConversation",
    "NoTurnSender",
    "RejectionReason",
    "RulesInvalid",
    "SourceIdle",
    "UnknownGate",
    "UnsafeState",
]
