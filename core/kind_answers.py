"""Each evidenced kind's answer message, built from the verdict alone (:mod:`.kinds` gives the shapes,
their source and level). Pure.

* ``{confirm}`` kinds: allow ``{confirm: true}``, deny ``{confirm: false}``;
* filePermission: ``{allow, scope, absolutePathUri}`` -- the path is the request's, always sent;
* deploy: allow ``{cancel: false}`` (with ``deployTarget``: the one target the request offers, as it
  offers it); deny ``{cancel: true}`` -- never the empty message, which proceeds;
* elicitation: accept ``{action: "accept", contentJson}`` (the content the human gave; ``{}`` only
  where the requested schema asks for nothing), decline ``{action: "decline"}``, cancel
  ``{action: "cancel"}``.

``permission``, ``runCommand`` and ``askQuestion`` are built in :mod:`.elicitation`.
"""

from __future__ import annotations

from typing import Any, assert_never

from agy_harness.ports.events import GateOpened

from .scopes import CONFIRM_KINDS, PERMISSION_SCOPE
from .verdicts import Allow, Choose, Deny, Refuse, Verdict

BUILT_HERE = CONFIRM_KINDS | {"filePermission", "deploy", "elicitation"}


def kind_answer(gate: GateOpened, verdict: Verdict) -> dict[str, Any]:
    """The answer message of ``gate``'s kind (one of :data:`BUILT_HERE`) for ``verdict``; anything but
    an :class:`Allow` denies, with the kind's own deny."""
    field = gate.interaction
    allowed = isinstance(verdict, Allow)
    if field in CONFIRM_KINDS:
        return {"confirm": allowed}
    if field == "filePermission":
        path = gate.request.get("absolutePathUri")
        message: dict[str, Any] = {"allow": allowed}
        if isinstance(verdict, Allow):
            message["scope"] = PERMISSION_SCOPE[verdict.scope or "once"]
        message["absolutePathUri"] = path if isinstance(path, str) else ""
        return message
    if field == "deploy":
        if not allowed:
            return {"cancel": True}  # the deny: an empty deploy {} would proceed
        out: dict[str, Any] = {"cancel": False}
        options = gate.request.get("deployTargetOptions")
        if isinstance(options, list) and len(options) == 1:
            out["deployTarget"] = options[0]
        return out
    if field == "elicitation":
        return _elicitation(verdict)
    raise ValueError(f"no answer message is built here for {field!r}")


def _elicitation(verdict: Verdict) -> dict[str, Any]:
    match verdict:
        case Allow(content=content):
            return {"action": "accept", "contentJson": content if content is not None else "{}"}
        case Deny(how="cancel") | Refuse(action="cancel"):
            return {"action": "cancel"}
        case Deny() | Refuse() | Choose():
            return {"action": "decline"}
        case other:
            assert_never(other)
