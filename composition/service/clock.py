"""The event loop's clock: what the roles wait on in a running session (the container gives it to
them; a unit test gives them a virtual one instead, so that nothing there really sleeps)."""

from __future__ import annotations

import asyncio


class LoopClock:
    """:class:`~agy_harness.ports.protocols.SessionClock` on the running event loop."""

    def monotonic(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def wait(self, event: asyncio.Event, timeout: float) -> bool:
        if event.is_set():
            return True
        try:
            async with asyncio.timeout(max(0.0, timeout)):  # (wait_for can swallow a cancel on 3.11)
                await event.wait()
        except TimeoutError:
            return event.is_set()
        return True
