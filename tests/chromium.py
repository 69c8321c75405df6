"""One chromium per test process (loaded by ``tests/conftest.py``): Debian's chromium driven by playwright.

Launching a playwright driver (node) and a chromium for each browser test cost ~1.5 CPU-seconds a
test (measured: ~0.5 s the driver, ~1 s chromium); a new browser *context* on a running chromium
costs ~0.35 s. So the browser tests of a worker share one driver and one chromium
(:func:`chromium_per_worker`) and each test gets a context of its own (``browser_page`` in
``tests/board/helpers.py``): its own cookies, storage, cache and permissions, its viewport and init
script (documented: playwright.dev/python/docs/api/class-browsercontext, "multiple independent browser
sessions", each an "incognito" context; tests/board/test_shared_chromium.py checks it here).

Playwright's objects belong to the event loop that started the driver, so the sharing tests run on
pytest-asyncio's session loop: a module marks them ``pytestmark = SHARED`` (that loop, and the
fixture; ``@shared`` marks one test). A module whose tests run on the module's loop (they share a
server started on it: tests/omnigent_real) shares one for the module instead (``SHARED_IN_MODULE``);
any other test gets a chromium of its own, as before. A shared chromium that crashed or was closed,
or whose driver died, is launched again for the next page; it is closed when the session (or the
module) ends: no chromium or driver is left running.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import pytest
import pytest_asyncio

T = TypeVar("T", bound=Callable[..., Any])

CHROMIUM = os.environ.get("AGY_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def require_chromium() -> str:
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        pytest.skip(f"Debian's chromium is not installed ({CHROMIUM}); apt-get install chromium")
    try:
        import playwright  # noqa: F401
    except ImportError:
        pytest.skip("the playwright package is missing (pip install -e '.[test]')")
    return CHROMIUM


class SharedChromium:
    """A playwright driver and a chromium on one event loop, launched when first asked for and again
    whenever the last one is gone: chromium crashed, killed or closed (playwright says it is
    disconnected), or the driver died (chromium still reads as connected then; the next call fails)."""

    def __init__(self) -> None:
        self.playwright: Any = None
        self.chromium: Any = None
        self.launches = 0
        self._lock = asyncio.Lock()

    async def new_context(self, **options: Any) -> Any:
        from playwright.async_api import Error

        async with self._lock:
            for again in (False, True):
                if self.chromium is None or not self.chromium.is_connected():
                    await self.close()
                    await self._launch()
                try:
                    return await self.chromium.new_context(**options)
                except Error:
                    if again:
                        raise  # a fresh chromium refuses it too: the test's to see
                    await self.close()  # (the driver gone: launched anew)
        raise AssertionError("unreachable")

    async def _launch(self) -> None:
        from playwright.async_api import async_playwright

        self.playwright = await async_playwright().start()
        self.chromium = await self.playwright.chromium.launch(executable_path=require_chromium(), args=FLAGS)
        self.launches += 1

    async def close(self) -> None:
        """The chromium closed and the driver stopped (either may be gone already)."""
        chromium, driver, self.chromium, self.playwright = self.chromium, self.playwright, None, None
        if chromium is not None:
            with contextlib.suppress(Exception):  # (a crashed one, or its driver gone: nothing to close)
                await chromium.close()
        if driver is not None:
            await driver.stop()


_SHARED: dict[asyncio.AbstractEventLoop, SharedChromium] = {}


@contextlib.asynccontextmanager
async def new_context(**options: Any) -> AsyncIterator[Any]:
    """A browser context of its own, closed after: on the running loop's shared chromium (tests
    marked ``SHARED``), else on a chromium launched for it and closed after."""
    shared = _SHARED.get(asyncio.get_running_loop())
    if shared is not None:
        context = await shared.new_context(**options)
        try:
            yield context
        finally:
            with contextlib.suppress(Exception):  # (chromium gone mid-test: the test says what failed)
                await context.close()
        return
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        own = await pw.chromium.launch(executable_path=require_chromium(), args=FLAGS)
        try:
            yield await own.new_context(**options)
        finally:
            await own.close()


@contextlib.asynccontextmanager
async def sharing() -> AsyncIterator[SharedChromium]:
    """The running loop's pages share one chromium until this ends; closed then."""
    loop = asyncio.get_running_loop()
    shared = _SHARED[loop] = SharedChromium()
    try:
        yield shared
    finally:
        del _SHARED[loop]
        await shared.close()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def chromium_per_worker() -> AsyncIterator[SharedChromium]:
    """This process's shared chromium (launched by the first page asked for); closed at its end."""
    async with sharing() as shared:
        yield shared


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chromium_per_module() -> AsyncIterator[SharedChromium]:
    """A module's shared chromium, for a module whose tests run on its own loop (they share a server
    started on it: tests/omnigent_real); closed at the module's end."""
    async with sharing() as shared:
        yield shared


#: a module's mark for tests that open chromium pages: on the session's loop, with the worker's chromium
SHARED = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.usefixtures("chromium_per_worker")]
#: the mark for a module whose tests run on the module's loop: one chromium for the module
SHARED_IN_MODULE = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.usefixtures("chromium_per_module")]


def shared(test: T) -> T:
    """One test's ``SHARED`` (in a module whose other tests open no page)."""
    for mark in SHARED:
        test = mark(test)
    return test
