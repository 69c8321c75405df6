"""Which route this agy honours for a lasting grant (issue 34), read from a conversation's steps: the one
source of the ``scopes:`` line of ``agy-harness doctor`` and ``agy-harness record``. Pure.

The harness sends a lasting grant as the RPC ``permission.scope`` field (agy's descriptors); the scope
fields are not yet known from a recording of agy's CLI, so what agy did with them is read back:

* agy recorded a lasting ``PermissionScope`` in an answer (``completedInteractions[].response.
  permission.scope``) and asked nothing a grant covers afterwards: the RPC route holds;
* a later step asks again for a request such a grant covers (:func:`agy_harness.core.approvals.covers`,
  the gate watch's rule): agy did not keep the grant -- the route is the fallback, agy's own menu keys,
  and the harness stops offering that scope by RPC (what every surface says at that gate);
* neither: the RPC route, from the descriptors, not yet seen recorded by this agy.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from . import steps as S
from .approvals import Grant, covers, not_kept, request_subject
from .gates import asked, permission_request
from .scopes import PERMISSION_SCOPE

RPC = "RPC permission.scope"
FALLBACK = "agy's own menu keys (attach --tmux, GateAnswer.persist)"
_SCOPE_OF = {name: scope for scope, name in PERMISSION_SCOPE.items()}


@dataclass(frozen=True, slots=True)
class NotKept:
    """A lasting grant given at step ``granted`` that agy asked again for at step ``asked_again``."""

    grant: Grant
    granted: int
    asked_again: int

    def text(self, *, redacting: bool = False) -> str:
        """Its words; ``redacting``: the grant's pattern (what agy or a human wrote) as
        ``<redacted N chars>``, as ``record --redact`` writes text."""
        grant = self.grant
        if redacting and grant.pattern:
            grant = replace(grant, pattern=f"<redacted {len(grant.pattern)} chars>")
        return f"{not_kept(grant)} (given at step {self.granted}, asked again at step {self.asked_again})"


@dataclass(frozen=True, slots=True)
class ScopeRoute:
    #: the PermissionScope names agy recorded in this conversation's answers, in order
    recorded: tuple[str, ...]
    #: the lasting grants agy asked again for
    not_kept: tuple[NotKept, ...]

    def text(self, *, redacting: bool = False) -> str:
        """The route, in the words ``doctor`` and ``record`` print after ``scopes:`` (``redacting``: see
        :meth:`NotKept.text`)."""
        if self.not_kept:
            return (
                f"{FALLBACK}, the fallback: "
                + "; ".join(n.text(redacting=redacting) for n in self.not_kept)
                + f"; the harness no longer offers that scope by {RPC} once agy asks again"
            )
        if self.recorded:
            return f"{RPC}: this agy recorded {', '.join(self.recorded)} in this conversation's answers"
        return (
            f"{RPC} (agy's descriptors); not yet seen recorded by this agy: where agy asks again for a "
            "request a lasting grant covered, the harness says so and stops offering that scope; the "
            f"fallback is {FALLBACK}"
        )


def scope_route(raws: list[Any], cascade_id: str = "") -> ScopeRoute:
    """What ``raws`` (one conversation's steps, in order) show of agy and lasting grants."""
    recorded: list[str] = []
    grants: list[tuple[Grant, int]] = []
    dropped: list[NotKept] = []
    for raw in raws:
        step = S.parse_step(raw)
        if step is None:
            continue
        request = asked(step)
        subject = (
            request_subject(request[1], permission_request(step, request[2], request[1]))
            if request is not None and request[0] == "permission"
            else None
        )
        index = step.key.step_index
        if subject is not None:
            for grant, at in grants:
                if at < index and covers(grant, subject, cascade_id):
                    grants.remove((grant, at))  # said once, as the gate watch says it once
                    dropped.append(NotKept(grant, at, index))
                    break
        for done in S.as_list(step.raw.get("completedInteractions")):
            permission = S.as_dict(S.as_dict(S.as_dict(done).get("response")).get("permission"))
            name = S.as_str(permission.get("scope"))
            if name and name not in recorded:
                recorded.append(name)
            scope = _SCOPE_OF.get(name)
            if subject is not None and permission.get("allow") is True and scope not in (None, "once"):
                grants.append((Grant(str(scope), cascade_id, *subject), index))
    return ScopeRoute(tuple(recorded), tuple(dropped))
