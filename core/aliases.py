"""One step, several sources: the other keys a turn has where another source reads it. Pure.

The RPC keys a USER_INPUT by its ``executionId``; agy's transcript has none and keys it by its
``createdAt`` (``t:<time>``), under a placeholder trajectory until the real one is known. Any other
step of the known trajectory has one other key, its placeholder's, which the reconciler checks
itself; a step of another trajectory aliases nothing.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from . import stamps
from . import steps as S
from .steps import Step

NONE: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())  # no other keys


def other_keys(
    step: Step, sk: str, placeholder: str, known: str
) -> tuple[AbstractSet[str], AbstractSet[str]]:
    """The keys a step (key ``sk``) may have been committed under by another source, and those to
    commit with its own, as ``(to check, to commit)``; ``placeholder`` is the cascade's placeholder
    trajectory and ``known`` the real one ("" until seen). A turn (USER_INPUT) of this cascade is also
    known by its createdAt: an RPC turn commits ``u:r:<createdAt>`` and checks the transcript's
    ``u:t:<createdAt>``, and the other way round, so two RPC turns never alias."""
    own = step.key.trajectory_id
    if step.type != "USER_INPUT" or (own != placeholder and own != known):
        return NONE  # (a step of the placeholder trajectory here: no real one is known yet)
    created = S.as_str(step.metadata.get("createdAt"))
    if not created:
        return NONE
    trajectories = {own, placeholder}
    if known:
        trajectories.add(known)
    stamp = stamps.time_key(created)
    from_transcript = step.key.execution_id.startswith("t:")
    mine, theirs = ("t", "r") if from_transcript else ("r", "t")
    check = {f"{t}/u:{theirs}:{stamp}" for t in trajectories} | {
        f"{t}/u:{mine}:{stamp}" for t in trajectories
    }
    check = check - {sk} if from_transcript else {f"{t}/u:t:{stamp}" for t in trajectories}
    commit = {f"{t}/u:{mine}:{stamp}" for t in trajectories} - {sk}
    return check, commit
