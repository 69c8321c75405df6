"""Usage reports omnigent would count twice are not posted (a part of :class:`~.sink.OmnigentSink`).

omnigent adds each ``external_session_usage`` report's growth to the model's bucket: a total below
what it already holds (a re-delivery) would be counted twice when the totals grow again. So only
growing totals go out. What omnigent holds for a session is read once (its view sums the session's
sub-agents in, which are taken out again) and raised as omnigent accepts reports; it is not kept when
the read fails.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from agy_harness.core import safejson
from agy_harness.core.turns import UsageTotals
from agy_harness.ports.events import Usage

from .transport import log

Totals = tuple[int, int]  # (input with cache reads, output)


def totals(usage: Usage) -> Totals:
    reported = UsageTotals.of(usage)  # omnigent's input counts cache reads
    return reported.prompt, reported.output


class UsageFloors:
    def __init__(
        self, client: httpx.AsyncClient, url: Callable[[str, str], str], headers: dict[str, str]
    ) -> None:
        self._client = client
        self._url = url
        self._headers = headers
        self._floors: dict[str, Totals] = {}

    async def grows(self, usage: Usage, session: str) -> bool:
        """Whether ``usage`` has totals above what omnigent holds for ``session`` (module doc)."""
        floor = self._floors.get(session)
        if floor is None:
            floor = await self._stored(session)
            if floor is None:
                return True
            self._floors[session] = floor  # raised by accepted() once omnigent took a report
        now = totals(usage)
        return not (now[0] <= floor[0] and now[1] <= floor[1])

    def accepted(self, usage: Usage, session: str) -> None:
        """omnigent took ``usage`` for ``session``: what it holds is at least that."""
        floor = self._floors.get(session, (0, 0))
        now = totals(usage)
        self._floors[session] = (max(now[0], floor[0]), max(now[1], floor[1]))

    async def _subtree(self, session: str) -> Totals:
        """omnigent's usage of ``session`` and its sub-agents (input with cache reads, output)."""
        response = await self._client.get(self._url(session, "")[:-1], headers=self._headers)
        response.raise_for_status()
        buckets = safejson.loads(response.content).get("usage_by_model")
        total_in = total_out = 0
        for bucket in buckets.values() if isinstance(buckets, dict) else ():
            if isinstance(bucket, dict):
                total_in += int(bucket.get("input_tokens") or 0) + int(
                    bucket.get("cache_read_input_tokens") or 0
                )
                total_out += int(bucket.get("output_tokens") or 0)
        return total_in, total_out

    async def _stored(self, session: str) -> Totals | None:
        """The totals omnigent holds for ``session`` itself; None if unknown."""
        try:
            total_in, total_out = await self._subtree(session)
            response = await self._client.get(
                self._url(session, "child_sessions"), params={"limit": 1000}, headers=self._headers
            )
            response.raise_for_status()
            children = safejson.loads(response.content).get("data", [])
            for child in children:
                child_in, child_out = await self._subtree(str(child["id"]))
                total_in, total_out = total_in - child_in, total_out - child_out
        except (httpx.HTTPError, ValueError, AttributeError, KeyError, TypeError) as exc:
            log.info("could not read omnigent's usage of %s (%s); posting this report", session, exc)
            return None
        return max(0, total_in), max(0, total_out)
