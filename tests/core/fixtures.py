"""The recorded agy steps (the truth), loaded from inside the repository.

``adapters/simulator/shapes/`` ships verbatim copies of the recordings (they are also the simulator's
step shapes), so the suite runs from a bare clone. In the workspace where the recordings live,
``../shared/fixtures/agy/`` next to the repository, :data:`SHARED` names it and
``tests/simulator/test_shapes.py`` checks the copies byte for byte; without it that check is skipped.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "adapters" / "simulator" / "shapes"
#: The original recordings, when the repository sits in the workspace that holds them (else None).
SHARED: Path | None = (
    REPO.parent / "shared" / "fixtures" / "agy"
    if (REPO.parent / "shared" / "fixtures" / "agy").is_dir()
    else None
)
TRAJ = "efb134b2-d69f-43de-bb54-c9ece346d8a3"
CASCADE = "2399249c-4a48-40f1-bf3b-4c6e5d3a5a0e"


@cache
def _load(name: str) -> str:
    return (FIXTURES / f"{name}.json").read_text(encoding="utf-8")


def fixture(name: str) -> dict[str, Any]:
    """A fresh deep copy of one fixture (tests may mutate it)."""
    return copy.deepcopy(json.loads(_load(name)))


def names() -> list[str]:
    return sorted(p.stem for p in FIXTURES.glob("*.json"))
