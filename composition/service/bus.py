"""What the roles of one session tell each other, in process: the one way they are connected after
they are built.

The emitter publishes; the gate bridge, the directory watcher and the sub-agent mirrors subscribe when
they are built (the container builds one bus per session and hands it to each role):

* :meth:`SessionBus.delivered`: events the sink acknowledged, in order (gates to ask or withdraw,
  sub-agent results naming a child, anything of ours waking the directory watcher);
* :meth:`SessionBus.foreign_step`: a step of another conversation found on ours (agy >= 1.1.1 relays
  sub-agents' updates on the root's stream): the role that mirrors that conversation takes it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from agy_harness.ports.events import Event
from agy_harness.ports.protocols import RawStep

#: told what the sink acknowledged (synchronously, in delivery order)
DeliveredListener = Callable[[Sequence[Event]], None]
#: takes a step of another conversation (its cascade id, the raw step)
ForeignStepHandler = Callable[[str, RawStep], Awaitable[None]]


class SessionBus:
    def __init__(self) -> None:
        self._delivered: list[DeliveredListener] = []
        self._foreign: ForeignStepHandler | None = None

    def on_delivered(self, listener: DeliveredListener) -> None:
        self._delivered.append(listener)

    def on_foreign_step(self, handler: ForeignStepHandler) -> None:
        """The one role that takes steps of other conversations (the sub-agent mirrors)."""
        self._foreign = handler

    @property
    def takes_foreign_steps(self) -> bool:
        """Whether a role takes steps of other conversations (else they are fed to ours, as agy sent)."""
        return self._foreign is not None

    def delivered(self, events: Sequence[Event]) -> None:
        for listener in self._delivered:
            listener(events)

    async def foreign_step(self, cascade_id: str, raw: RawStep) -> None:
        if self._foreign is not None:
            await self._foreign(cascade_id, raw)
