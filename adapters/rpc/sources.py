"""Step sources over RPC: the live stream (StreamAgentStateUpdates) and the poll (GetCascadeTrajectorySteps)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from agy_harness.core.steps import parse_step, steps_from_update
from agy_harness.core.turns import RunStatus
from agy_harness.ports.errors import ConversationUnreadable
from agy_harness.ports.protocols import Clock, RawStep, StepBatch

from .client import RpcClient, StreamProgress
from .codec import BadFrame, Frame, unwrap_update
from .errors import RpcBadResponse, StreamIdle

log = logging.getLogger(__name__)

STREAM_METHOD = "StreamAgentStateUpdates"
STEPS_METHOD = "GetCascadeTrajectorySteps"
RUNNING = "CASCADE_RUN_STATUS_RUNNING"
#: string cuts (bytes) a poll answer over the body limit is read again with, in turn (issue #35 case 3)
HARDER_CUTS = (1 << 20, 256 << 10, 64 << 10, 16 << 10, 4 << 10)


def object_steps(raw_steps: list[Any], *, source: str, cascade_id: str) -> tuple[dict[str, Any], ...]:
    """Keep the JSON-object steps; log and drop anything else."""
    kept = tuple(s for s in raw_steps if isinstance(s, dict))
    if len(kept) != len(raw_steps):
        log.warning("%s %s: skipped %d non-object step(s)", source, cascade_id, len(raw_steps) - len(kept))
    return kept


class RpcStreamSource:
    """``StreamAgentStateUpdates {conversationId}``: one StepBatch per frame, the first a snapshot.

    Ends with StopAsyncIteration on a clean trailer, raises MethodMissing on 404/unimplemented,
    RpcError/StreamBroken on transport trouble, and StreamIdle when no byte arrived for
    ``idle_timeout`` seconds while ``is_running()`` says the cascade runs (default: the last
    update's ``status`` was RUNNING, or IDLE but not ``fullyIdle`` where agy sends that field); the
    bytes of a big frame still arriving are not idleness. Each batch carries agy's word on the run
    (``run_idle``, :class:`~agy_harness.core.turns.RunStatus`).
    """

    name = "stream"
    live = True

    def __init__(
        self,
        client: RpcClient,
        *,
        idle_timeout: float = 20.0,
        is_running: Callable[[], bool] | None = None,
    ) -> None:
        self._client = client
        self._idle = idle_timeout
        self.last_status = ""
        self.run = RunStatus()  # agy's word on the run: status, and fullyIdle where agy sends it
        self._is_running = is_running or (lambda: self.run.running)
        self.frames_seen = 0
        self.bad_frames = 0

    def batches(self, cascade_id: str) -> AsyncIterator[StepBatch]:
        return self._batches(cascade_id)

    async def _batches(self, cascade_id: str) -> AsyncIterator[StepBatch]:
        progress = StreamProgress()
        frames = self._client.stream(STREAM_METHOD, {"conversationId": cascade_id}, progress)
        watch = _IdleWatch(self._idle, progress, self._is_running)
        first = True
        try:
            while True:
                watch.begin()  # the next frame, awaited in place (no task per frame), watched
                try:
                    frame = await anext(frames)
                except StopAsyncIteration:
                    return
                except asyncio.CancelledError:
                    task = asyncio.current_task()
                    if not watch.fired or task is None or task.uncancel() > 0:
                        raise  # (cancelled from outside too: that wins)
                    self._client.reset_pool()  # the connection may be half-open: dial afresh
                    raise StreamIdle(cascade_id, self._idle) from None
                finally:
                    watch.task = None
                batch = self._batch(cascade_id, frame, snapshot=first)
                if batch is None:
                    continue
                first = False
                if batch.steps or batch.snapshot or batch.run_idle:
                    yield batch
        finally:
            watch.close()
            await frames.aclose()

    def _batch(self, cascade_id: str, frame: Frame, *, snapshot: bool) -> StepBatch | None:
        self.frames_seen += 1
        update = unwrap_update(frame.payload)
        if frame.bad is not None or update is None:
            self.bad_frames += 1
            why = frame.bad.value if frame.bad is not None else "no update object"
            (log.error if frame.bad is BadFrame.TOO_LARGE else log.warning)(
                "stream %s: skipping a bad frame (%s) %s", cascade_id, why, frame.detail
            )
            return None
        status = update.get("status")
        if isinstance(status, str) and status:
            self.last_status = status
        idle = self.run.read(update)
        steps = object_steps(steps_from_update(update), source="stream", cascade_id=cascade_id)
        return StepBatch(cascade_id=cascade_id, steps=steps, snapshot=snapshot, source=self.name, run_idle=idle)


TICKS = 4  # looks at the stream's silence per idle timeout
LATE = 1.5  # a look later than this many ticks' time: the loop was held, not agy silent


class _IdleWatch:
    """The stream's idle watchdog: one timer for the whole stream, not one per frame (a timer armed
    and cancelled per frame, with its closure, was a good part of the loop's garbage at 300
    streaming sessions). A wait for the next frame is cancelled (``fired`` then says so) once no byte
    arrived for ``idle`` seconds *while the loop was free to read them*, and ``is_running()`` said the
    cascade runs all along; bytes arriving (a big frame on its way) or an idle cascade start the count
    again.

    The silence is counted in ticks of ``idle / TICKS`` s: a tick that comes late by more than
    :data:`LATE` ticks' time means the loop was held (a big snapshot decoded, a loaded machine), and
    bytes agy sent meanwhile may wait unread in the socket; that gap counts as :data:`LATE` ticks, not
    as silence. (Before, a loop held past the timeout made the first look after it fire: StreamIdle
    with agy's frame waiting to be read.)"""

    __slots__ = ("_idle", "_is_running", "_last", "_progress", "_quiet", "_seen", "_step", "_timer", "fired", "task")

    def __init__(self, idle: float, progress: StreamProgress, is_running: Callable[[], bool]) -> None:
        self._idle = idle
        self._step = idle / TICKS
        self._progress = progress
        self._is_running = is_running
        self._timer: asyncio.TimerHandle | None = None
        self._last = 0.0  # when the silence was last counted (or the current wait began)
        self._quiet = 0.0  # seconds of silence counted in the current wait, with the loop free
        self._seen = 0  # bytes received by then
        self.task: asyncio.Task[Any] | None = None  # the task waiting, while one waits
        self.fired = False

    def begin(self) -> None:
        """The current task starts waiting for a frame (it sets ``task`` back to None when done)."""
        loop = asyncio.get_running_loop()
        self._last, self._quiet, self._seen = loop.time(), 0.0, self._progress.received
        self.task = asyncio.current_task()
        if self._timer is None:
            self._timer = loop.call_at(self._last + self._step, self._check)

    def _check(self) -> None:
        loop = asyncio.get_running_loop()
        now, task = loop.time(), self.task
        self._timer = None
        if task is None:  # nobody waits: the next wait arms the timer again
            return
        if self._progress.received != self._seen or not self._is_running():  # a big frame arriving, or idle
            self._last, self._quiet, self._seen = now, 0.0, self._progress.received
        else:
            self._quiet += min(now - self._last, self._step * LATE)  # a held loop is not agy's silence
            self._last = now
            if self._quiet >= self._idle:
                self.fired = True
                task.cancel()
                return
        self._timer = loop.call_at(now + self._step, self._check)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


FULL_EVERY = 240  # polls between two whole reads (a backstop: 60 s at the default 250 ms)
REMEMBERED = 8  # conversations whose last snapshot the poll keeps between readers
QUIET_POLLS = 4  # unchanged polls before the poll slows down
#: the highest step offset the poll tries when no read of a conversation fits (:meth:`RpcPollSource._readable_from`)
MAX_OFFSET = 1 << 20
MAX_SLOWDOWN = 8  # the interval grows (doubling every QUIET_POLLS unchanged polls) up to this factor


def slowdown(unchanged: int) -> int:
    """The factor of the poll interval after ``unchanged`` polls in a row that changed nothing: 1 for
    the first :data:`QUIET_POLLS`, then doubling every :data:`QUIET_POLLS` up to :data:`MAX_SLOWDOWN`
    (2 s at 250 ms): an idle conversation whose unsettled steps are large (a gate asking to run a
    4.5 MiB command, re-read each poll) costs an eighth of what it did; any change resets it."""
    if unchanged < QUIET_POLLS:
        return 1
    return int(min(MAX_SLOWDOWN, 2 ** (unchanged // QUIET_POLLS)))


def settled_prefix(steps: list[RawStep]) -> int:
    """How many leading steps are settled (DONE, ERROR, CANCELED, a user's input): they no longer change."""
    n = 0
    for raw in steps:
        step = parse_step(raw)
        if step is None or not step.settled:
            break
        n += 1
    return n


def _key(raw: RawStep | None) -> object:
    step = parse_step(raw) if raw is not None else None
    return step.key if step is not None else None


class RpcPollSource:
    """``GetCascadeTrajectorySteps {cascadeId}`` every ``interval`` s; yields a snapshot when it changed."""

    name = "poll"
    live = False

    def __init__(self, client: RpcClient, *, interval: float = 0.25, clock: Clock | None = None) -> None:
        self._client = client
        self.interval = interval
        self._clock = clock
        self.polls = 0
        self._cuts: dict[str, int] = {}  # cascade id -> the harder string cut its answers need
        self.offset_reads = True  # poll only past the settled steps (False: agy ignores stepOffset)
        #: cascade id -> (the step its last snapshot starts at, that snapshot, polls in a row that
        #: changed nothing): kept across the harness's returns to the stream, so a fallback poll goes
        #: on where the last one stopped
        self._seen: dict[str, tuple[int, list[RawStep], int]] = {}

    async def read_steps(self, cascade_id: str, *, offset: int = 0) -> list[RawStep]:
        """agy's steps of ``cascade_id`` (from step ``offset`` on: ``stepOffset``)."""
        answer = await self._read(cascade_id, offset)
        raw = answer.get("steps")
        if raw is None:
            return []
        if not isinstance(raw, list):
            log.warning("poll %s: 'steps' is a %s, not a list", cascade_id, type(raw).__name__)
            return []
        return list(object_steps(raw, source="poll", cascade_id=cascade_id))

    async def read_steps_from(self, cascade_id: str, offset: int) -> list[RawStep]:
        """:class:`~agy_harness.ports.protocols.StepSnapshotFrom`: the steps from ``offset`` on."""
        return await self.read_steps(cascade_id, offset=offset)

    async def _read(self, cascade_id: str, offset: int = 0) -> dict[str, Any]:
        """The answer, its long strings cut as hard as it takes to fit the body limit (issue #35
        case 3: a 4.5 MiB command agy repeats in several fields made every poll refuse the whole
        conversation for good). Once a harder cut was needed for a conversation it is kept (one read
        a poll, not one per cut). Still over the limit at the hardest cut: ConversationUnreadable."""
        cut = self._cuts.get(cascade_id)
        while True:
            try:
                body: dict[str, Any] = {"cascadeId": cascade_id}
                if offset:
                    body["stepOffset"] = offset
                return await self._client.call(STEPS_METHOD, body, max_string=cut)
            except RpcBadResponse as exc:
                if exc.code != "resource_exhausted":
                    raise
                current = cut if cut is not None else self._client.max_string
                harder = next((c for c in HARDER_CUTS if c < current), None)
                if harder is None:
                    raise ConversationUnreadable(
                        f"agy's steps of {cascade_id} are over {self._client.max_body} bytes even with every "
                        f"string cut at {current} bytes: this conversation cannot be read by polling"
                    ) from exc
                log.warning(
                    "poll %s: over the body limit with strings cut at %d bytes; reading it with strings cut at %d",
                    cascade_id,
                    current,
                    harder,
                )
                cut = self._cuts[cascade_id] = harder

    def batches(self, cascade_id: str) -> AsyncIterator[StepBatch]:
        return self._batches(cascade_id)

    async def _batches(self, cascade_id: str) -> AsyncIterator[StepBatch]:
        """Each poll asks agy only for the steps past the settled prefix of the last snapshot
        (``stepOffset``, issue #35 case 9: an idle conversation holding a 33 MB step re-read and
        re-decoded it every poll). A settled step (DONE, ERROR, CANCELED, a user's input: every step
        before it settled too) no longer changes; every step from the first unsettled one on is read
        again, each poll. Every ``FULL_EVERY`` polls, and whenever agy's answer does not start where it
        was asked to (an agy that ignores ``stepOffset``), the whole list is read. While polls change
        nothing the interval grows (:func:`slowdown`, up to 8x); the first change resets it. The last
        snapshot and the count of quiet polls outlive the reader: the harness retries the stream
        now and then, and the next fallback reader goes on from them (it read the whole list anew,
        at the first interval, each time).

        A read that cannot fit the body limit even cut as hard as the reader cuts (thousands of
        finished steps: no string to cut) is not refused for good: the poll follows the conversation
        from the first step offset whose read fits (:meth:`_readable_from`), and the batch names the
        steps it could not read (``unread``: said once, as a notice); a snapshot then holds the steps
        from that offset on (its ``base``), "the whole list" is the list from there."""
        base, last, unchanged = self._seen.get(cascade_id, (0, None, 0))
        since_full, fresh = 0, True  # a new reader gets the snapshot first, changed or not
        while True:
            unread: tuple[int, int] | None = None
            settled = base + settled_prefix(last) if last is not None and self.offset_reads else base
            offset = settled
            if since_full >= FULL_EVERY:
                offset, since_full = base, 0
            steps = await self._fits(cascade_id, offset)
            if steps is None and offset != settled:  # the list from its base outgrew the limit
                offset = settled
                steps = await self._fits(cascade_id, offset)
            if steps is None:  # no read from here fits: follow from the first offset whose read does
                start, steps = await self._readable_from(cascade_id, offset)
                unread, base, last, offset = (offset, start), start, None, start
            if offset > base:
                assert last is not None
                since_full += 1
                first = _key(steps[0]) if steps else None
                at = offset - base
                expected = _key(last[at]) if at < len(last) else first
                if not base and first is not None and first == _key(last[0]):  # agy ignored the offset
                    log.info("poll %s: agy ignores stepOffset; reading whole lists", cascade_id)
                    self.offset_reads, offset = False, 0
                elif first != expected:  # not where it was asked to start: read it whole
                    base, steps, unread = await self._whole(cascade_id, base)
                    last, offset = None, base
                steps = [*last[:at], *steps] if offset > base and last is not None else steps
            self.polls += 1
            changed = steps != last  # parsed-JSON equality: exact, and short-circuits on the step count
            last, unchanged = steps, 0 if changed else unchanged + 1
            self._remember(cascade_id, base, last, unchanged)
            if changed or fresh or unread:
                fresh = False
                yield StepBatch(
                    cascade_id=cascade_id, steps=tuple(steps), snapshot=True, source=self.name, unread=unread
                )
            await self._sleep(self.interval * slowdown(unchanged))

    async def _fits(self, cascade_id: str, offset: int) -> list[RawStep] | None:
        """The steps from ``offset`` on; None when that read cannot fit the body limit."""
        try:
            return await self.read_steps(cascade_id, offset=offset)
        except ConversationUnreadable:
            return None

    async def _whole(self, cascade_id: str, base: int) -> tuple[int, list[RawStep], tuple[int, int] | None]:
        """The list from ``base`` on, or from the first offset past it whose read fits."""
        steps = await self._fits(cascade_id, base)
        if steps is not None:
            return base, steps, None
        start, steps = await self._readable_from(cascade_id, base)
        return start, steps, (base, start)

    async def _readable_from(self, cascade_id: str, unreadable: int) -> tuple[int, list[RawStep]]:
        """The first step offset past ``unreadable`` (whose read did not fit) whose read fits, and
        its steps: offsets grow by doubling until one fits, then are bisected (a read from a later
        step is never larger). An agy that ignores ``stepOffset``, or no offset up to
        :data:`MAX_OFFSET` that fits: ConversationUnreadable, as before (said once)."""
        lo, hi, found, jump = unreadable, -1, list[RawStep](), 1
        while hi < 0:
            probe = lo + jump
            if not self.offset_reads or probe > MAX_OFFSET:
                raise ConversationUnreadable(
                    f"agy's steps of {cascade_id} from step {unreadable} on are over {self._client.max_body} "
                    f"bytes even with every string cut as hard as the reader cuts: this conversation cannot be "
                    f"read by polling"
                )
            steps = await self._fits(cascade_id, probe)
            if steps is None:
                lo, jump = probe, jump * 2
            else:
                found, hi = steps, probe
        while hi - lo > 1:
            mid = (lo + hi) // 2
            steps = await self._fits(cascade_id, mid)
            if steps is None:
                lo = mid
            else:
                found, hi = steps, mid
        if self._cuts.pop(cascade_id, None) is not None:  # strings cut harder did not make the list fit:
            found = await self.read_steps(cascade_id, offset=hi)  # from here, the mildest cut that fits
        log.warning(
            "poll %s: steps %d-%d cannot be read by polling (over the body limit); following from step %d",
            cascade_id,
            unreadable,
            hi - 1,
            hi,
        )
        return hi, found

    def _remember(self, cascade_id: str, base: int, steps: list[RawStep], unchanged: int) -> None:
        self._seen.pop(cascade_id, None)
        self._seen[cascade_id] = (base, steps, unchanged)
        while len(self._seen) > REMEMBERED:  # the oldest conversation read goes first
            del self._seen[next(iter(self._seen))]

    async def _sleep(self, seconds: float) -> None:
        if self._clock is not None:
            await self._clock.sleep(seconds)
        else:
            await asyncio.sleep(seconds)
