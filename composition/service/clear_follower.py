"""Following agy's ``/clear``: which new conversation, if any, is this session's own terminal's.

agy's ``/clear`` starts a new conversation on the same language server, and nothing agy exposes says
which terminal started it. So :meth:`ClearFollower.target` names one only on positive evidence (the
docs/conventions.md's /clear rule): following is enabled, exactly one new root conversation with fresh user
input appeared since binding (:func:`~agy_harness.core.rotation.rotation_candidates`), no other
session of this library claimed it (the ``Claims`` port), and, when agy's terminal is known
(``screen``), what was typed in it shows there. It never names a conversation the session left.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence

from agy_harness.core.rotation import on_screen, rotation_candidates
from agy_harness.core.steps import parse_step, user_text
from agy_harness.ports.protocols import CascadeSummary, Claims, StepSnapshot, TuiScreen

from .conversation import Conversation, HarnessOptions
from .emitter import Emitter

log = logging.getLogger("agy_harness.harness")


class ClearFollower:
    def __init__(
        self,
        conversation: Conversation,
        *,
        snapshot: StepSnapshot,
        emitter: Emitter,
        options: HarnessOptions | None = None,
        claims: Claims | None = None,
        screen: TuiScreen | None = None,
    ) -> None:
        self.conversation = conversation
        self.snapshot = snapshot
        self.emitter = emitter
        self.options = options or HarnessOptions()
        #: the conversations other sessions of this library are (or were) bound to: never a /clear
        self.claims = claims
        #: agy's own terminal (its tmux pane), when known: a /clear of ours shows the input typed
        #: after it there; another client's new conversation does not (see _typed_here)
        self.screen = screen
        self.known: set[str] | None = None  # cascades listed when the session bound (or left)
        self._ambiguous: tuple[str, ...] = ()
        self._claims_refused = False  # the notice that the claims location is unsafe was given
        self._not_typed_here: set[str] = set()  # candidates already said to be another client's

    def existing(self, cascade_ids: Iterable[str]) -> None:
        """What is listed as the session binds (or at the first listing that works): never a /clear."""
        if self.known is None:
            self.known = set(cascade_ids) - {self.conversation.cascade_id}

    def left(self, old: str) -> None:
        """A rotation away from ``old``: never back to it."""
        self.known = (self.known or set()) | {old}

    async def target(self, summaries: Sequence[CascadeSummary]) -> str | None:
        """Our terminal's ``/clear`` in this listing, on positive evidence only (see the module doc)."""
        cascade_id = self.conversation.cascade_id
        if not self.options.follow_clear:
            return None
        if not rotation_candidates(cascade_id, summaries, self.known or ()):
            return None  # nothing new to judge (the common case): no need to read anybody's claims
        claimed = await self._claimed(cascade_id)
        if claimed is None:
            return None
        candidates = rotation_candidates(cascade_id, summaries, self.known or (), claimed) or []
        if self.screen is not None and candidates:  # agy's terminal known: only what was typed there
            candidates = await self._typed_here(candidates)
        if len(candidates) > 1 and tuple(candidates) != self._ambiguous:
            self._ambiguous = tuple(candidates)
            await self.emitter.notice(
                f"{cascade_id}/rotation/ambiguous/{len(candidates)}",
                f"{len(candidates)} new conversations appeared on this agy ({', '.join(candidates)}); "
                "not following any of them as a /clear",
                "warning",
            )
        return candidates[0] if len(candidates) == 1 else None

    async def _claimed(self, cascade_id: str) -> set[str] | None:
        """The other sessions' conversations; None when they cannot be read safely (said once)."""
        if self.claims is None:
            return set()
        try:  # the claims are files of every session on this machine: read them off the loop
            return await asyncio.to_thread(self.claims.others)
        except OSError as exc:  # an unsafe claims directory: the other sessions' claims are unknown
            if not self._claims_refused:
                self._claims_refused = True
                await self.emitter.notice(
                    f"{cascade_id}/rotation/claims-unsafe",
                    f"not following a /clear: the other sessions' claims cannot be read safely ({exc})",
                    "warning",
                )
            return None

    async def _typed_here(self, candidates: list[str]) -> list[str]:
        """With agy's terminal known: the candidates whose latest user input shows on its screen
        (typed in that terminal after its /clear). A conversation another client started on the
        same agy shows nowhere there: not followed, with a notice (it is checked again later)."""
        try:
            rows = await self.screen.screen() if self.screen is not None else []
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.info("rotation: cannot read agy's screen (%s); not following a /clear yet", exc)
            return []
        typed: list[str] = []
        for target in candidates:
            try:
                raws = await self.snapshot.read_steps(target)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("rotation: cannot read %s (%s); not following it yet", target, exc)
                continue
            steps = [st for st in map(parse_step, raws) if st is not None and st.type == "USER_INPUT"]
            if any(on_screen(user_text(st), rows) for st in steps[-3:]):
                typed.append(target)
            elif target not in self._not_typed_here:
                self._not_typed_here.add(target)
                await self.emitter.notice(
                    f"{self.conversation.cascade_id}/rotation/elsewhere/{target}",
                    f"a new conversation ({target}) appeared on this agy, but what was typed in it is not "
                    "on agy's screen: another client's, not this terminal's /clear; not following it",
                    "warning",
                )
        return typed
