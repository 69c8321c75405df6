"""The Claims contract, held by the claims file adapter (adapters/store/claims.py, in a private
directory) and the tests' MemoryClaims: a session sees what the other sessions claimed, never its own
claim; claiming never raises; an unsafe place makes ``others`` refuse (UnsafeState), so the rotation
rule follows no ``/clear`` it cannot check."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agy_harness.adapters.store.claims import ClaimRegistry
from agy_harness.ports.errors import UnsafeState
from agy_harness.ports.protocols import Claims
from tests.fakes import MemoryClaims


def _sessions(kind: str, root: Path) -> Callable[[], Claims]:
    """A maker of the claims of one session after another, all sharing one place."""
    if kind == "file":
        return lambda: ClaimRegistry(root)
    world: dict[str, str] = {}
    return lambda: MemoryClaims(world)


@pytest.mark.parametrize("kind", ["file", "memory"])
def test_a_session_sees_the_others_claims_and_never_its_own(kind: str, tmp_path: Path) -> None:
    session = _sessions(kind, tmp_path / "claims")
    first, second = session(), session()
    assert isinstance(first, Claims)
    assert first.others() == set() and second.others() == set()
    first.claim("conversation-1")
    first.claim("conversation-1")  # again: a no-op
    second.claim("conversation-2")
    assert first.others() == {"conversation-2"}
    assert second.others() == {"conversation-1"}
    third = session()  # a later session: both are somebody else's
    assert third.others() == {"conversation-1", "conversation-2"}


@pytest.mark.parametrize("kind", ["file", "memory"])
def test_an_unsafe_place_refuses_to_say_and_claiming_there_never_raises(kind: str, tmp_path: Path) -> None:
    if kind == "file":
        shared = tmp_path / "shared"
        shared.mkdir()
        shared.chmod(0o777)  # other users could plant or remove claims here
        claims: Claims = ClaimRegistry(shared / "claims")
    else:
        claims = MemoryClaims(unsafe="the claims directory is writable by other users")
    claims.claim("conversation-1")  # logged, not raised
    with pytest.raises(UnsafeState):
        claims.others()
