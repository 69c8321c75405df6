"""What binds a human's answer to one request: the digest of a WAITING step. Pure.

A gate carries the digest of what the human is shown and what agy will act on: the kind of gate and
the ``requestedInteraction`` field agy set, the tool and its typed body (``runCommand``, ...), the
exact command line (proposed and final) and its directory, the request itself (a permission's resource, description and
persist offer; a question's text and options) and the turn it belongs to (the step's
``executionId``). Only fields that both projections of a step carry (poll and stream) go in, so the
same request has the same digest whichever one was read; the step index does not, so agy's re-ask of
the same request after a timeout (a new step, same turn, same everything else) has the same digest.
A string the reader cut (:mod:`.cut_marks`) goes in as what identifies the whole string agy sent (its
size and SHA-256), never as the part kept: the same request read with its strings cut at 4 MiB (the
stream) or harder (a poll of a conversation over the answer cap) has the same digest, and two requests
that differ only past the cut have different ones.

An answer is delivered only to a WAITING step with the gate's digest (see
:func:`agy_harness.core.elicitation.delivery_target`), and a request that changes under its card
changes its digest: the reconciler withdraws the old gate and opens a new one.
"""

from __future__ import annotations

import hashlib
from typing import Any

from . import code_review, safejson
from . import steps as S
from .cut_marks import LEAD, identities
from .steps import Step

DIGEST_CHARS = 32  # hex characters kept (128 bits)


def request_fields(
    step: Step, kind: str, key: str, request: dict[str, Any], *, cleaned: bool = True
) -> dict[str, Any]:
    """The fields of a WAITING step that make up its request (see the module doc); ``cleaned=False``
    leaves the request and body as agy sent them (the caller checks they need no cleaning)."""
    clean = safejson.clean if cleaned else _same
    fields: dict[str, Any] = {
        "kind": kind,
        "interaction": key,
        # (a file-edit review: its step type, not the tool -- agy edits files with several tools, and
        # the stream strips the tool call; the body below names the file and the whole diff)
        "tool": step.type if key == code_review.FIELD else S.tool_name(step),
        "turn": S.as_str(step.metadata.get("executionId")),
        "request": clean(request),
        "body": clean(step.body),  # the typed body (runCommand, askQuestion...): what agy acts on
    }
    command = S.as_dict(step.raw.get("runCommand"))
    if command:
        fields["command"] = {
            "proposed": S.as_str(command.get("proposedCommandLine")),
            "final": S.as_str(command.get("commandLine")),
            "cwd": S.as_str(command.get("cwd")),
        }
    return fields


def _same(value: Any) -> Any:
    return value


def request_digest(step: Step, kind: str, key: str, request: dict[str, Any]) -> str:
    """The digest of the request a WAITING ``step`` makes (``kind``, ``key``, ``request`` as
    :func:`agy_harness.core.gates.pending_request` found them)."""
    return digest_and_clean(step, kind, key, request)[0]


def digest_and_clean(step: Step, kind: str, key: str, request: dict[str, Any]) -> tuple[str, bool]:
    """:func:`request_digest`, and whether the fields as agy sent them (``request`` among them) are
    their own ``safejson.clean``: nothing in them to clean, so a copy of ``request`` is as clean as
    the careful one. Computed once per exact content (:func:`frozen`): the same request is digested
    when its gate opens, before it is asked and when it is answered, each time from a fresh read."""
    try:
        fields: dict[str, Any] | None = request_fields(step, kind, key, request, cleaned=False)
    except (TypeError, ValueError, RecursionError):
        fields = None
    content = frozen(fields) if fields is not None else None
    if content is not None:
        for known, digest, clean in _RECENT:
            if known == content:
                return digest, clean
    digest, clean, size = _digest_and_clean(step, kind, key, request, fields)
    if content is not None and size >= REMEMBERED_FROM:
        _RECENT.insert(0, (content, digest, clean))
        del _RECENT[RECENT:]
    return digest, clean


#: digests remembered by content (the newest first), and from what size of canonical text on (a
#: smaller request costs less to digest than to remember)
RECENT = 2
REMEMBERED_FROM = 1 << 16
_RECENT: list[tuple[tuple[Any, ...], str, bool]] = []
FROZEN_NODES = 512  # containers and scalars a request may have to be remembered (a few dozen, usually)


def frozen(value: Any) -> tuple[Any, ...] | None:
    """``value`` (parsed JSON) as an immutable copy that is equal to another's exactly when their
    canonical texts are: every value tagged with its type (in Python ``1 == 1.0 == True``, not in
    JSON), a float by its ``repr`` (``-0.0`` is not ``0.0``; NaN equals itself), a dict's keys in
    their order; strings shared, not copied (immutable). None past :data:`FROZEN_NODES` nodes or
    for anything that is not JSON: never remembered."""
    left = [FROZEN_NODES]

    def walk(v: Any) -> tuple[Any, ...]:
        left[0] -= 1
        if left[0] < 0:
            raise _TooBig
        kind = type(v)
        if kind is str:
            return ("s", v)
        if kind is dict:
            items = []
            for k, item in v.items():
                if type(k) is not str:
                    raise _TooBig
                items.append((k, walk(item)))
            return ("d", tuple(items))
        if kind is list:
            return ("l", tuple(walk(item) for item in v))
        if kind is bool or kind is int or v is None:
            return (kind.__name__, v)
        if kind is float:
            return ("f", repr(v))
        raise _TooBig

    try:
        return walk(value)
    except (_TooBig, RecursionError):
        return None


class _TooBig(Exception):
    """Not remembered (too many nodes, or not JSON)."""


def _digest_and_clean(
    step: Step, kind: str, key: str, request: dict[str, Any], fields: dict[str, Any] | None
) -> tuple[str, bool, int]:
    """:func:`digest_and_clean` computed, and the size of the canonical text."""
    # The canonical text of the fields as agy sent them is the cleaned fields' text whenever nothing
    # in it needs cleaning (no lone surrogate, nothing nested past clean's depth): one encode instead
    # of two copies and an encode. Anything else takes the careful way.
    try:
        canonical = safejson.canonical(fields) if fields is not None else ""
    except (TypeError, ValueError, RecursionError):
        fields, canonical = None, ""
    clean = bool(canonical) and safejson.needs_no_cleaning(canonical, fields)
    if not clean:
        canonical = safejson.canonical(request_fields(step, kind, key, request))
    if LEAD in canonical:  # a string the reader cut: its whole string's identity, not the part kept
        canonical = safejson.canonical(identities(request_fields(step, kind, key, request)))
    digest = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST_CHARS]
    return digest, clean, len(canonical)


def timed_out(step: Step) -> bool:
    """The step's gate ended by agy's timeout: ERROR with no recorded answer (an answer -- a denial in
    agy's terminal too -- is recorded in ``completedInteractions``)."""
    return step.status == "ERROR" and S.interaction_response(step) is None
