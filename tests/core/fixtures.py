"""The recorded agy steps, loaded verbatim from ../shared/fixtures/agy/ (the truth)."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "agy"
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
