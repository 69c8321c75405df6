"""``-p tests.select_only``: the whole suite is collected, only the tests named in
``AGY_HARNESS_SELECT_ONLY`` run (node ids, one a line: a file's or a function's take in all its tests and
parameters; the rest deselected).

tests/test_bare_clone.py checks in one pytest process that a clone collects every test module (a
collection error fails the run before any test) and that the tests reading the recorded fixtures pass
there: one process, not a collection and then a second process collecting those files again.
"""

from __future__ import annotations

import os

import pytest

VARIABLE = "AGY_HARNESS_SELECT_ONLY"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = tuple(line for line in os.environ.get(VARIABLE, "").splitlines() if line)
    if not wanted:
        return

    def named(item: pytest.Item, name: str) -> bool:
        return item.nodeid == name or item.nodeid.startswith((f"{name}::", f"{name}["))

    missing = [name for name in wanted if not any(named(item, name) for item in items)]
    if missing:  # (as pytest itself refuses a node id it does not find)
        raise pytest.UsageError(f"{VARIABLE}: no test collected is {', '.join(missing)}")
    kept = [item for item in items if any(named(item, name) for name in wanted)]
    kept_ids = {id(item) for item in kept}
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if id(item) not in kept_ids])
        items[:] = kept
