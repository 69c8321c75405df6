"""The mapper's fast paths give exactly what the careful ones give.

* Events are built without pydantic validating them again (``ports.events.built``): every event the
  reconciler makes, over every recording in both projections, streamed, gated, withdrawn and
  mutated, must be the very model the validating constructor makes of its fields (same values of
  the same types, same ``model_fields_set``, same repr and JSON).
* ``safejson.dumps`` / ``loads_clean`` skip the copy that ``clean`` makes when there is nothing to
  clean: their results must equal the careful ``clean`` route for any JSON value, surrogates and
  deep nesting included.
* ``stamps.time_key`` reads agy's own UTC spelling without a datetime round trip: the same key as
  the round trip for any such text (invalid dates included).
"""

from __future__ import annotations

import codecs
import contextlib
import copy
import gc
import hashlib
import json
import random
import re
from collections.abc import Iterator
from datetime import UTC
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from agy_harness.adapters.simulator.steps import stream_projection
from agy_harness.core import safejson, stamps
from agy_harness.core import steps as S
from agy_harness.core.arguments import file_uri_path
from agy_harness.core.binding import DIGEST_CHARS, request_digest, request_fields
from agy_harness.core.gates import pending_request
from agy_harness.core.reconciler import Reconciler
from agy_harness.ports.events import Event, GateOpened, StatusChanged, built
from tests.safety.test_fuzz_recordings import VALUES, mutate, to_text

from .fixtures import fixture, names


def assert_as_validated(model: BaseModel) -> None:
    """``model`` equals what its class's validating constructor makes of the fields it set."""
    cls = type(model)
    again = cls(**{name: getattr(model, name) for name in model.model_fields_set})
    assert again == model
    assert repr(again) == repr(model)
    assert again.model_fields_set == model.model_fields_set
    assert again.model_dump_json() == model.model_dump_json()
    for name in cls.model_fields:
        mine, theirs = getattr(model, name), getattr(again, name)
        assert type(mine) is type(theirs), (cls.__name__, name, type(mine), type(theirs))
        if isinstance(mine, BaseModel):
            assert_as_validated(mine)
        if isinstance(mine, tuple):
            for item in mine:
                if isinstance(item, BaseModel):
                    assert_as_validated(item)


def every_event(events: list[Event]) -> list[Event]:
    for event in events:
        assert_as_validated(event)
    return events


def test_every_event_of_every_recording_is_the_validated_model() -> None:
    seen: set[str] = set()
    for name in names():
        for step in (fixture(name), stream_projection(fixture(name))):
            r = Reconciler("c")
            seen |= {e.type for e in every_event(r.feed(step))}
            seen |= {e.type for e in every_event(r.observe_idle())}
    # a streamed reply (thinking and text deltas, the final delta), then an error ending
    r = Reconciler("c")
    done = fixture("stream_planner_text_done")
    for k in range(1, 6):
        frame = copy.deepcopy(done)
        frame["plannerResponse"]["modifiedResponse"] = "lorem ipsum " * k
        frame["plannerResponse"]["thinking"] = "hmm " * k
        frame["status"] = "CORTEX_STEP_STATUS_GENERATING"
        seen |= {e.type for e in every_event(r.feed(frame))}
    done["status"] = "CORTEX_STEP_STATUS_ERROR"
    seen |= {e.type for e in every_event(r.feed(done))}
    # gates: opened (question, permission, other), then withdrawn
    for name in ("ask_question_waiting", "run_command_waiting"):
        r = Reconciler("c")
        seen |= {e.type for e in every_event(r.feed(fixture(name)))}
        other = fixture(name)
        other["requestedInteraction"] = {"fileReview": {"path": "a\ud800"}}
        other["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = 99
        seen |= {e.type for e in every_event(r.feed(other))}
        answered = fixture(name)
        answered["status"] = "CORTEX_STEP_STATUS_DONE"
        seen |= {e.type for e in every_event(r.feed(answered))}
    assert seen >= {
        "status", "user_message", "assistant_message", "tool_call", "tool_result", "text_delta",
        "reasoning_delta", "usage", "model_change", "gate_opened", "gate_withdrawn", "notice",
    }  # fmt: skip


@pytest.mark.parametrize("seed", range(40))
def test_mutated_recordings_give_validated_models(seed: int) -> None:
    rnd = random.Random(seed)
    raws = []
    for _ in range(rnd.randint(1, 6)):
        step = fixture(rnd.choice(names()))
        for _ in range(rnd.randint(0, 3)):
            step = mutate(step, rnd.randint(0, 10_000), rnd.choice(VALUES), rnd.random() < 0.5)
        raws.append(step)
    r = Reconciler("fuzz")
    for raw in safejson.loads("[" + ",".join(to_text(s) for s in raws) + "]"):
        every_event(r.feed(raw))


@pytest.mark.parametrize("seed", range(40))
def test_a_step_is_known_committed_by_its_parsed_key_only(seed: int) -> None:
    """The reconciler's dedup before parsing (``parse_new_step`` with the committed keys) names a step
    committed only when its parsed key is: never hides a step that is not (mutated recordings, both
    projections, placeholder trajectories)."""
    rnd = random.Random(seed)
    committed: set[str] = set()
    for _ in range(30):
        raw = fixture(rnd.choice(names()))
        if rnd.random() < 0.5:
            raw = stream_projection(raw)
        if rnd.random() < 0.2:
            raw["metadata"]["sourceTrajectoryStepInfo"]["trajectoryId"] = stamps.placeholder_trajectory("c")
        raw = mutate(raw, rnd.randint(0, 10_000), rnd.choice(VALUES), rnd.random() < 0.5)
        parsed = S.parse_step(raw)
        decided = S.parse_new_step(raw, committed)
        if parsed is None:
            assert decided is None
            continue
        if decided is S.COMMITTED:
            assert str(parsed.key) in committed and not stamps.is_placeholder(parsed.key.trajectory_id)
        else:
            assert isinstance(decided, S.Step) and decided.name == str(parsed.key) == str(decided.key)
        if rnd.random() < 0.6:
            committed.add(str(parsed.key))
        if rnd.random() < 0.3:
            committed.add(f"{parsed.key.trajectory_id}/{parsed.key.step_index + 1}")


def test_built_goes_through_validation_when_the_fields_do_not_match() -> None:
    with pytest.raises(ValidationError):  # a required field missing: the validating constructor says so
        built(StatusChanged, {"id": "x", "cascade_id": "c", "step_key": "", "type": "status"}, {"id"})
    event = built(
        StatusChanged, {"id": "x", "cascade_id": "c", "status": "idle"}, {"id", "cascade_id", "status"}
    )
    assert event == StatusChanged(id="x", cascade_id="c", status="idle")  # a default left out: validated


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(alphabet=st.sampled_from(["a", "é", "\ud800", "\udfff", "\\", '"', "{", "["])),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(alphabet=st.sampled_from(["k", "\ud83d", "é"]), max_size=3), children, max_size=4),
    max_leaves=30,
)  # fmt: skip


def nest(value: Any, depth: int) -> Any:
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


@settings(max_examples=300, deadline=None)
@given(json_values, st.sampled_from([0, 1, 60, 63, 64, 65, 70]), st.booleans())
@example(["\udfff", {"k": "\udc00"}], 0, False)  # low surrogates (\udc00-\udfff) escaped too
def test_safejson_fast_paths_equal_the_clean_route(value: Any, depth: int, sort_keys: bool) -> None:
    value = nest(value, depth)
    for encode, options in ((safejson.encode, {}), (safejson.encode_sorted, {"sort_keys": True}),
                            (safejson.canonical, {"sort_keys": True, "separators": (",", ":")})):  # fmt: skip
        try:  # json's C encoder made once: json.dumps's text, or an error both ways
            text = json.dumps(value, ensure_ascii=False, **options)  # type: ignore[arg-type]
        except (ValueError, RecursionError):
            with pytest.raises((ValueError, RecursionError)):
                encode(value)
        else:
            assert encode(value) == text
    careful = json.dumps(safejson.clean(value), ensure_ascii=False, sort_keys=sort_keys)
    assert safejson.dumps(value, sort_keys=sort_keys) == careful
    text = json.dumps(value)  # \ud800 as an escape
    assert safejson.loads_clean(text) == safejson.clean(safejson.loads(text))
    raw = json.dumps(value, ensure_ascii=False)  # \ud800 as a character
    assert safejson.loads_clean(raw) == safejson.clean(safejson.loads(raw))


@settings(max_examples=300, deadline=None)
@given(json_values, st.sampled_from(["", " ", "\n", "x", "]", "1", ",{}"]), st.sampled_from(["", " "]))
@example([1e400, -1e400], "", "")
def test_loads_fast_path_equals_the_careful_route(value: Any, tail: str, head: str) -> None:
    """safejson.loads takes json's C scanner straight, bytes read as UTF-8 first: the same value as
    json.loads, or a ValueError both ways, for a str and for bytes in any encoding json.loads takes
    (UTF-8 with or without a BOM, UTF-16 and UTF-32: not UTF-8, they take json.loads's own route)."""
    with no_collection_while_deep():
        _fast_path_equals_careful(value, tail, head)


@contextlib.contextmanager
def no_collection_while_deep() -> Iterator[None]:
    """No garbage collection while json's scanner is near the recursion limit: a collection there ran an
    earlier test's finalizer at that depth, its RecursionError became an unraisable exception that pytest
    could not even format, and the test failed (a full run on a busy machine). It runs after, shallow."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _fast_path_equals_careful(value: Any, tail: str, head: str) -> None:
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False), "[" * 2000 + "]" * 2000):
        text = head + text + tail
        for data in (text, *(codecs.BOM_UTF8 * bom + text.encode(c, "surrogatepass")
                             for c in ("utf-8", "utf-16-le", "utf-32-be") for bom in (0, c == "utf-8"))):  # fmt: skip
            try:
                careful = json.loads(data)
            except RecursionError:  # safejson's markers: test_safejson_survives_nesting and the like
                continue
            except ValueError:
                with pytest.raises(ValueError):
                    safejson.loads(data)
                continue
            assert json.dumps(safejson.loads(data)) == json.dumps(careful)
    with pytest.raises(ValueError):  # as json.loads says of a str
        safejson.loads("\ufeff" + json.dumps(value))


def careful_digest(step: S.Step, kind: str, key: str, request: dict[str, Any]) -> str:
    """The digest as binding.py defines it: the cleaned fields' canonical text, hashed."""
    fields = request_fields(step, kind, key, request)
    text = json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST_CHARS]


@settings(max_examples=200, deadline=None)
@given(json_values, json_values, st.sampled_from([0, 1, 60, 62, 63, 64, 70]))
@example(["\udfff"], {"k": "\ud800"}, 0)
def test_the_digest_fast_path_equals_the_careful_one(request: Any, body: Any, depth: int) -> None:
    for name in ("run_command_waiting", "ask_question_waiting"):
        raw = fixture(name)
        raw["requestedInteraction"]["x"] = nest(request, depth)
        raw[next(k for k in ("runCommand", "askQuestion") if k in raw)]["x"] = nest(body, depth)
        step = S.parse_step(raw)
        assert step is not None
        pending = pending_request(step)
        assert pending is not None
        assert request_digest(step, *pending) == careful_digest(step, *pending)
        # the gate's event carries agy's request as the careful clean copy has it, copied or cleaned
        (opened,) = [e for e in Reconciler("c").feed(raw) if isinstance(e, GateOpened)]
        assert json.dumps(opened.request) == json.dumps(safejson.clean(pending[2]))
        assert opened.request is not pending[2]


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(["/", "a", "é", "%", "2", "0", "?", "#", ";", ":", " ", "\t", "\n", "\x00"])
    )
)
@example("//host/a")
def test_a_file_uri_path_equals_urlparses(rest: str) -> None:
    from urllib.parse import unquote, urlparse

    uri = "file://" + rest
    assert file_uri_path(uri) == unquote(urlparse(uri).path)


def round_trip_key(text: str) -> str:
    parsed = stamps.parse_time(text)
    if parsed == stamps.parse_time(""):
        return text.strip()
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_time_key_fast_path_equals_the_round_trip() -> None:
    rnd = random.Random(7)
    cases = [
        "2026-08-02T04:49:08.449792278Z", "2026-08-02T04:49:08Z", "2026-02-30T04:49:08.1Z",
        "1970-01-01T00:00:00Z", "1970-01-01T00:00:00.000001Z", "0999-01-01T00:00:00Z",
        "2026-08-02T24:00:00Z", "2026-08-02T04:49:08.Z", "2026-08-02T04:49:08.449792278+02:00", "",
    ]  # fmt: skip
    for _ in range(2000):
        cases.append(
            f"{rnd.randint(995, 2100):04d}-{rnd.randint(0, 13):02d}-{rnd.randint(0, 32):02d}T"
            f"{rnd.randint(0, 25):02d}:{rnd.randint(0, 61):02d}:{rnd.randint(0, 61):02d}"
            + rnd.choice(["", ".", ".1", ".1234567", ".123456789"])
            + "Z"
        )
    assert [stamps.time_key(c) for c in cases] == [round_trip_key(c) for c in cases]


SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=())


@settings(max_examples=300, deadline=None)
@given(
    st.text(st.characters() | SURROGATES | st.sampled_from("xé…"), max_size=40),
    st.sampled_from([1, 2, 3, 1 << 20]),
)
@example("é\ud800", 1)  # a surrogate in the second slice
@example("\udfff" + "x" * 10, 4)
def test_the_surrogate_check_equals_the_regex(text: str, chunk: int) -> None:
    """safejson.has_surrogate (the UTF-8 encoder, in slices of ``chunk`` characters) tells a surrogate
    exactly as the regex ``[\\ud800-\\udfff]`` does; clean_text replaces them as before."""
    regex = re.compile("[\ud800-\udfff]")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(safejson, "_CHUNK", chunk)
        assert safejson.has_surrogate(text) == bool(regex.search(text))
        assert safejson.clean_text(text) == regex.sub("\ufffd", text)
