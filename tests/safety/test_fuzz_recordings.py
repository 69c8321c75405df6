"""Property test over mutated recordings (hypothesis): agy's recorded steps, each mutated the ways
agy (or a corrupted recording) could -- a value replaced by nesting thousands of levels deep, a
5,000-digit integer, a lone surrogate, control sequences, wrong types, keys dropped, statuses and
indices changed -- go through the codec, replay, the reconciler (two projections, any order, a
restart from a saved cursor), the sinks and the cursor store.

Properties: no exception escapes any of them; replay exits 0 with JSON lines or 2 with one line and
nothing printed; every event id names exactly one content across the poll run, a re-feed and a restart from the
cursor store. The stream projection and a shuffled order are checked for exceptions only: a
mutation can make a step's typed body disagree with its argumentsJson (agy's never do; the
simulator's projections are compared in test_stable_ids), and cumulative usage totals depend on the
order steps arrive in.
"""

from __future__ import annotations

import copy
import io
import json
import struct
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from agy_harness.adapters.rpc.codec import EnvelopeDecoder
from agy_harness.adapters.simulator.steps import stream_projection
from agy_harness.adapters.sinks.jsonl import JsonlSink
from agy_harness.adapters.sinks.terminal import TerminalSink
from agy_harness.adapters.store.cursor_file import FileCursorStore
from agy_harness.composition.entrypoints.replay import run as replay_run
from agy_harness.core import safejson
from agy_harness.core.reconciler import MapperState, Reconciler
from agy_harness.core.steps import steps_from_update
from agy_harness.ports.events import Event
from agy_harness.ports.protocols import Cursor
from tests.core.fixtures import fixture, names

DEEP = "[" * 3000 + "]" * 3000
POISON_TEXT = {
    "@DEEP@": DEEP,
    "@BIGINT@": "9" * 5000,
    "@NEGBIGINT@": "-" + "8" * 4500,
}
VALUES: list[Any] = [
    "@DEEP@",
    "@BIGINT@",
    "@NEGBIGINT@",
    "lone \ud800 surrogate",
    "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\r",
    None,
    True,
    0,
    -1,
    2**63,
    1.5e308,
    "",
    [],
    {},
    ["x", {"y": None}],
    "CORTEX_STEP_STATUS_WAITING",
    "CORTEX_STEP_STATUS_GENERATING",
    "CORTEX_STEP_STATUS_DONE",
    "not json {",
    '{"deep": ' + "[" * 1500 + "]" * 1500 + "}",
]


def paths_of(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths_of(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:4]):
            out += paths_of(v, (*prefix, i))
    return out


def mutate(step: dict[str, Any], choice: int, value: Any, drop: bool) -> dict[str, Any]:
    paths = paths_of(step)
    path = paths[choice % len(paths)]
    parent: Any = step
    for key in path[:-1]:
        parent = parent[key]
    if drop and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        # a copy: VALUES' containers are shared by every example, and one put inside itself by a
        # later mutation made a cycle (RecursionError in paths_of, in about one run in a few)
        parent[path[-1]] = copy.deepcopy(value)
    return step


def to_text(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    for marker, raw in POISON_TEXT.items():
        text = text.replace(json.dumps(marker), raw)
    return text


@st.composite
def recordings(draw: st.DrawFn) -> list[str]:
    chosen = draw(st.lists(st.sampled_from(names()), min_size=1, max_size=6))
    steps: list[str] = []
    for name in chosen:
        step = fixture(name)
        for _ in range(draw(st.integers(0, 3))):
            step = mutate(
                step, draw(st.integers(0, 10_000)), draw(st.sampled_from(VALUES)), draw(st.booleans())
            )
        steps.append(to_text(step))
    return steps


def record(seen: dict[str, str], events: list[Event]) -> None:
    for event in events:
        content = event.model_dump_json()
        assert seen.setdefault(event.id, content) == content, f"{event.id} names two contents"


def frame(data: bytes) -> bytes:
    return struct.pack(">BI", 0, len(data)) + data


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(recordings(), st.randoms(use_true_random=False), st.integers(1, 64))
def test_no_mutated_recording_escapes_and_ids_name_one_content(
    tmp_path_factory: Any, steps: list[str], rnd: Any, chunk: int
) -> None:
    tmp: Path = tmp_path_factory.mktemp("fuzz")
    document = "[" + ",".join(steps) + "]"

    # replay: exit 0 with JSON lines, or 2 with one line and nothing printed
    path = tmp / "recording.json"
    path.write_text(document, encoding="utf-8", errors="surrogatepass")
    out, err = io.StringIO(), io.StringIO()
    code = replay_run([str(path)], out, err)
    if code == 0:
        assert err.getvalue() == ""
        for line in out.getvalue().splitlines():
            json.loads(line)
    else:
        assert code == 2 and out.getvalue() == "" and err.getvalue().count("\n") == 1

    # the codec: the poll body and one stream frame per step, fed in arbitrary chunks
    raws: list[Any] = safejson.loads(document)
    wire = frame(('{"steps": ' + document + "}").encode("utf-8", "surrogatepass"))
    for text in steps:
        wire += frame(
            ('{"update": {"mainTrajectoryUpdate": {"stepsUpdate": {"steps": [' + text + "]}}}}").encode(
                "utf-8", "surrogatepass"
            )
        )
    decoder = EnvelopeDecoder()
    frames = []
    for i in range(0, len(wire), chunk * 997):
        frames += decoder.feed(wire[i : i + chunk * 997])
    decoder.close()
    assert len(frames) == 1 + len(steps)
    streamed: list[Any] = []
    for f in frames[1:]:
        streamed += steps_from_update(f.payload) if f.payload is not None else []

    # the reconciler: poll order, stream projection, shuffled, and a restart from a saved cursor
    seen: dict[str, str] = {}
    poll = Reconciler("fuzz")
    events = poll.feed_all(raws)
    record(seen, events)
    record(seen, poll.feed_all(raws))  # re-seeing: nothing new under an old id
    projected = []
    for raw in streamed:
        try:
            projected.append(stream_projection(json.loads(json.dumps(raw))))
        except (TypeError, AttributeError, KeyError, ValueError, RecursionError):
            projected.append(raw)  # the projection helper is the simulator's, not under test
    Reconciler("fuzz").feed_all(projected)  # no exception (a mutated typed body and argumentsJson disagree)
    shuffled = list(raws)
    rnd.shuffle(shuffled)
    Reconciler("fuzz").feed_all(shuffled)  # any order: no exception (usage totals are order-bound)
    half = len(raws) // 2
    first = Reconciler("fuzz")
    record(seen, first.feed_all(raws[:half]))
    store = FileCursorStore(tmp / "cursors")
    store.save(
        Cursor(
            cascade_id="fuzz",
            committed=sorted(first.state.committed),
            state=first.state.model_dump(mode="json"),
        )
    )
    loaded = store.load("fuzz")
    assert loaded is not None
    second = Reconciler("fuzz", MapperState.model_validate(loaded.state))
    record(seen, second.feed_all(raws[half:]))

    # the sinks take every event
    import asyncio

    async def sinks() -> None:
        lines = io.StringIO()
        assert await JsonlSink(lines).deliver(events) == len(events)
        for line in lines.getvalue().splitlines():
            json.loads(line)
        screen = io.StringIO()
        console = Console(file=screen, width=120, color_system=None, force_terminal=False)
        assert await TerminalSink(console).deliver(events) == len(events)
        assert "\x1b" not in screen.getvalue()

    asyncio.run(sinks())
