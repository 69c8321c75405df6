"""A request's digest (core/binding.py) is computed once per exact content: the same 4 MiB request is
digested when its gate opens, before it is asked and when it is answered, each from a fresh read (a
canonical text of 20 MB and its SHA-256 each time). Exact content: equal in JSON, not merely in
Python, where ``1 == 1.0 == True`` and ``0.0 == -0.0`` -- the reconciler's own memo took a request
whose ``1`` became ``true`` for the same one, kept its gate and its card (its delivery then failed
closed, the digest read anew differing). Pure."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agy_harness.core import binding as B
from agy_harness.core import safejson
from agy_harness.core import steps as S
from agy_harness.core.gates import pending_request
from agy_harness.core.reconciler import CHANGED, Reconciler
from agy_harness.ports.events import GateOpened, GateWithdrawn

from .fixtures import CASCADE, fixture

BIG = "x" * ((4 << 20) - 4096)


def digest_of(raw: dict[str, Any]) -> str:
    step = S.parse_step(raw)
    assert step is not None
    pending = pending_request(step)
    assert pending is not None
    return B.request_digest(step, *pending)


def test_one_contents_digest_is_computed_once_and_any_change_is_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    encoded: list[int] = []
    encode = safejson.canonical

    def counted(value: Any) -> str:
        text = encode(value)
        encoded.append(len(text))
        return text

    monkeypatch.setattr(safejson, "canonical", counted)
    raw = fixture("run_command_waiting")
    raw["runCommand"]["commandLine"] = raw["runCommand"]["proposedCommandLine"] = f"echo {BIG}"
    raw["runCommand"]["waitMs"] = 1
    first = digest_of(raw)
    assert digest_of(copy.deepcopy(raw)) == first  # a fresh read of the same request
    assert len(encoded) == 1  # one canonical text
    for changed in (True, 1.0, 2):  # 1 -> true, 1.0, 2: each another request, each its own digest
        other = copy.deepcopy(raw)
        other["runCommand"]["waitMs"] = changed
        assert digest_of(other) != first
    assert len(encoded) == 4
    last = copy.deepcopy(raw)
    last["runCommand"]["commandLine"] = f"echo {BIG[:-1]}y"  # one character, 4 MiB in
    assert digest_of(last) != first


def test_a_request_whose_number_becomes_a_boolean_is_a_new_gate() -> None:
    raw = fixture("run_command_waiting")
    raw["runCommand"]["waitMs"] = 1
    rec = Reconciler(CASCADE)
    [opened] = [e for e in rec.feed(raw) if isinstance(e, GateOpened)]
    again = copy.deepcopy(raw)
    again["runCommand"]["waitMs"] = True
    events = rec.feed(again)
    withdrawn = [e for e in events if isinstance(e, GateWithdrawn)]
    reopened = [e for e in events if isinstance(e, GateOpened)]
    assert [w.reason for w in withdrawn] == [CHANGED] and withdrawn[0].gate_id == opened.gate_id
    assert len(reopened) == 1 and reopened[0].digest != opened.digest


JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.sampled_from([0, 1, -1, 2**70]),
        st.sampled_from([0.0, -0.0, 1.0, 1.5, math.inf, math.nan]),
        st.sampled_from(["", "a", "1", "true", "\ud800"]),
    ),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "1"]), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=500, deadline=None)
@given(JSON, JSON)
def test_frozen_contents_are_equal_exactly_when_their_canonical_texts_are(a: Any, b: Any) -> None:
    fa, fb = B.frozen(a), B.frozen(b)
    assert fa is not None and fb is not None
    if fa == fb:
        assert safejson.canonical(a) == safejson.canonical(b)
    if safejson.canonical(a) != safejson.canonical(b):
        assert fa != fb
