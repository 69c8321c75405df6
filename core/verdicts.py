"""What a human's answer to a gate decides, read once (:func:`agy_harness.core.answers.parse_answer`):
the verdicts, and the error of an answer that cannot be read. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agy_harness.ports.errors import AgyHarnessError

ALLOW_WORDS = frozenset({"allow", "allowed", "approve", "approved", "yes", "y", "ok", "true"})
DENY_WORDS = frozenset({"deny", "denied", "reject", "rejected", "no", "n", "false"})
REFUSE_WORDS = frozenset({"decline", "cancel"})
ACCEPT_WORD = "accept"  # "accept" / "accept: <JSON object>": an allow (an elicitation's, with content)


class AnswerError(AgyHarnessError, ValueError):
    """The answer cannot be read unambiguously for this gate; nothing was sent to agy."""


# -- the checked answer: what parse_answer read, bound to its gate ----------------------------------


@dataclass(frozen=True, slots=True)
class Allow:
    """A permission, explicitly allowed. ``scope``: the lasting grant agy keeps (agy's PermissionScope,
    one the gate lists; None: once); ``command``: the edited command line that runs instead of agy's
    proposal (None: as proposed); ``persist``: the TUI-key fallback's "allow always" (typed into agy's
    menu)."""

    persist: Literal["session", "always"] | None = None
    scope: str | None = None
    command: str | None = None
    #: an MCP elicitation's content the human gave (a JSON object's canonical text; None: none given)
    content: str | None = None
    #: run the command outside agy's sandbox: the human chose it (``runCommand.sandboxOverride``)
    sandbox_override: bool = False


@dataclass(frozen=True, slots=True)
class Deny:
    """A permission denied (a deny word, a decline or a cancel); ``reason``: what to tell agy instead;
    ``how``: ``cancel`` where the human dismissed it ("cancel": an elicitation's ``action: cancel``),
    else ``deny`` (a decline)."""

    reason: str = ""
    how: Literal["deny", "cancel"] = "deny"


@dataclass(frozen=True, slots=True)
class Response:
    """One question's answer: the option ids picked (each an option of the question) and the write-in."""

    question: str
    option_ids: tuple[str, ...] = ()
    write_in: str = ""


@dataclass(frozen=True, slots=True)
class Choose:
    """A question gate answered: one :class:`Response` per question, in order."""

    responses: tuple[Response, ...]


@dataclass(frozen=True, slots=True)
class Refuse:
    """A question gate refused (agy's skip: no responses)."""

    action: Literal["decline", "cancel"]


Verdict = Allow | Deny | Choose | Refuse


def fold(text: str) -> str:
    """``text`` compared loosely: whitespace runs as one space, case folded."""
    return " ".join(text.split()).casefold()


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
