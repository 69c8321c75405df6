"""Lasting grants on the simulator's side: what agy keeps when an allow carries a PermissionScope.

A ``permission`` allowed with ``PERMISSION_SCOPE_CONVERSATION`` covers the same request (the same
resource action and agy's suggested pattern: for a command, commands whose first word is the pattern)
in that conversation; ``_WORKSPACE``, ``_PROJECT`` and ``_GLOBAL`` cover it in every conversation (the
simulator has one workspace and one project). A covered request runs without asking. What agy does
with a scope is read from the descriptors only (docs/conventions.md): this is the simulator's
model of it, and ``Faults.forget_grants`` models an agy that does not keep them (it asks again).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

LASTING = {
    "PERMISSION_SCOPE_CONVERSATION": "conversation",
    "PERMISSION_SCOPE_WORKSPACE": "workspace",
    "PERMISSION_SCOPE_PROJECT": "project",
    "PERMISSION_SCOPE_GLOBAL": "global",
}


@dataclass(frozen=True)
class Grant:
    scope: str  # conversation / workspace / project / global
    cascade_id: str
    action: str
    pattern: str


@dataclass
class Grants:
    kept: list[Grant] = field(default_factory=list)

    def take(self, cascade_id: str, request: dict[str, Any], response: dict[str, Any]) -> Grant | None:
        """Record the grant an answer carries (an allow with a lasting scope), if any."""
        perm = response.get("permission")
        if not isinstance(perm, dict) or perm.get("allow") is not True:
            return None
        scope = LASTING.get(str(perm.get("scope") or ""))
        asked = request.get("permission") if isinstance(request.get("permission"), dict) else None
        if scope is None or asked is None:
            return None
        resource = asked.get("resource") or {}
        pattern = str(asked.get("suggestedPersistPattern") or resource.get("target") or "")
        grant = Grant(scope, cascade_id, str(resource.get("action") or ""), pattern)
        self.kept.append(grant)
        return grant

    def covers(self, cascade_id: str, action: str, target: str) -> Grant | None:
        """The grant that covers ``action`` on ``target`` in ``cascade_id``, if one does."""
        words = target.split()
        for grant in self.kept:
            if grant.action != action:
                continue
            if grant.scope == "conversation" and grant.cascade_id != cascade_id:
                continue
            if target == grant.pattern or (action == "command" and words and words[0] == grant.pattern):
                return grant
        return None
