"""dependency-injector's ``containers`` and ``providers``, imported without the integrations this
package never uses, so that a command that builds a container starts faster.

When they are installed, dependency-injector 4.x imports at its own import time pydantic-settings
(for ``Configuration.from_pydantic``) and PyYAML (``from_yaml``) in ``providers``, and FastAPI,
FastDepends, Starlette's ``requests`` and Werkzeug's ``local`` in ``wiring`` (to recognise their
markers when a container is *wired* into functions). Each is an optional import there, guarded by
``try: import ... except ImportError`` (read in dependency-injector 4.49.1's ``providers.pyx``
and ``wiring.py``: primary evidence, the installed source). This package configures its
containers with ``from_dict``/``from_value`` and never wires one, so none of them is used; where
they were installed they cost every ``agy-harness`` command that builds a container about 0.1
CPU-second (pydantic-settings and Werkzeug most). They are refused here, only to dependency-injector's
first import and only in the thread doing it; anything imported later (the board's Starlette) is
imported as usual. Nothing changes when dependency-injector was already imported.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

#: the top-level packages dependency-injector imports only for integrations this package never uses
UNUSED = frozenset({"pydantic_settings", "yaml", "fastapi", "fast_depends", "starlette", "werkzeug"})


class _Unused(MetaPathFinder):
    """Refuses :data:`UNUSED` (as if not installed) to the thread that made it."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if threading.get_ident() == self.thread and fullname.partition(".")[0] in UNUSED:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None  # the next finder's


def _import_without_unused() -> None:
    if "dependency_injector.containers" in sys.modules:
        return
    finder = _Unused()
    sys.meta_path.insert(0, finder)
    try:
        importlib.import_module("dependency_injector.containers")  # (imports providers and wiring)
    finally:
        sys.meta_path.remove(finder)


_import_without_unused()

from dependency_injector import containers as containers  # noqa: E402
from dependency_injector import providers as providers  # noqa: E402

__all__ = ["UNUSED", "containers", "providers"]
