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
    the careful one."""
    # The canonical text of the fields as agy sent them is the cleaned fields' text whenever nothing
    # in it needs cleaning (no lone surrogate, nothing nested past clean's depth): one encode instead
    # of two copies and an encode. Anything else takes the careful way.
    try:
        fields = request_fields(step, kind, key, request, cleaned=False)
        canonical = safejson.canonical(fields)
    except (TypeError, ValueError, RecursionError):
        fields, canonical = None, ""
    clean = bool(canonical) and safejson.needs_no_cleaning(canonical, fields)
    if not clean:
        canonical = safejson.canonical(request_fields(step, kind, key, request))
    if LEAD in canonical:  # a string the reader cut: its whole string's identity, not the part kept
        canonical = safejson.canonical(identities(request_fields(step, kind, key, request)))
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST_CHARS], clean


def timed_out(step: Step) -> bool:
    """The step's gate ended by agy's timeout: ERROR with no recorded answer (an answer -- a denial in
    agy's terminal too -- is recorded in ``completedInteractions``)."""
    return step.status == "ERROR" and S.interaction_response(step) is None
