"""One chromium per test process (loaded by ``tests/conftest.py``): Debian's chromium driven by playwright.

Launching a playwright driver (node) and a chromium for each browser test cost ~1.5 CPU-seconds a
test (measured: ~0.5 s the driver, ~1 s chromium); a new browser *context* on a running chromium
costs ~0.35 s. So the browser tests of a worker share one driver and one chromium
(:func:`chromium_per_worker`) and each test gets a context of its own (``browser_page`` in
``tests/board/helpers.py``): its own cookies, storage, cache and permissions, its viewport and init
script (documented: playwright.dev/python/docs/api/class-browsercontext, "multiple independent browser
sessions", each an "incognito" context; tests/board/test_shared_chromium.py checks it here).

A browser context per page is itself the dearest part of a board test's page: measured here (a board
with one card, loaded and answered by Deny, six times; chromium's CPU with every renderer it reaped),
~1.7 CPU-seconds a page in a context of its own, ~0.7 as a new page of one context kept open with a
first page (about:blank) left open in it (~1.2 without that page: each new page then starts its
renderer anew). So a test's page (:func:`new_page`) is a new page of the shared chromium's one *page
context*, as long as no earlier page of that context was at the same origin: every board test serves
its own board on a port of its own, so its origin is new, and what a page stores is kept per origin
(localStorage, IndexedDB, the HTTP cache's entries, granted permissions). Cookies are kept per host,
not per port: they are cleared before each page. A page at an origin the context already saw (a
second page of one server, or a port used again) gets a new context, so nothing one page stored
reaches another (tests/board/test_shared_chromium.py checks both cases); ``own_context`` asks for a
context of its own (a "cold open" test). (Those figures were taken while chromium still made its
omnibox popups for every context, ~1 CPU-s of them: :data:`NEVER_SHOWN` now stops that.)

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
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

import pytest
import pytest_asyncio

T = TypeVar("T", bound=Callable[..., Any])

CHROMIUM = os.environ.get("AGY_CHROMIUM", "/usr/bin/chromium")
#: the features playwright disables when it launches chromium (playwright 1.65's ``chromiumSwitches``):
#: chromium keeps only the LAST ``--disable-features`` it is given, so ours repeats them
#: (tests/board/test_shared_chromium.py checks against the command line playwright gives)
PLAYWRIGHT_DISABLES = [
    "AvoidUnnecessaryBeforeUnloadCheckSync",
    "DestroyProfileOnBrowserClose",
    "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable",
    "LensOverlay",
    "MediaRouter",
    "PaintHolding",
    "ThirdPartyStoragePartitioning",
    "AvoidCorsURLLoaderRestartOnRedirect",
    "TcpPortRandomizationWin",
    "OptimizationHints",
    "NetworkTimeServiceQuerying",
    "AimEnabled",
    "PreconnectToSearch",
    "msForceBrowserSignIn",
    "msEdgeUpdateLaunchServicesPreferredVersion",
]
#: what a headless chromium never shows and makes anyway: the omnibox's suggestion popups in WebUI
#: (chrome://omnibox-popup.top-chrome and its AI-mode page), two WebContents in a renderer of their own
#: for every browser context: ~0.75 CPU-s of that renderer and ~0.2 of the browser's a context
#: (measured here on Debian's chromium 156: six contexts with a page each, 8.3 CPU-s with them, 2.7
#: without). Chromium's own feature names: ``kWebUIOmniboxPopup`` ("shows the omnibox suggestions in
#: the popup in WebUI", enabled by default: chrome/browser/ui/omnibox/omnibox_next_features.cc) and
#: ``kWebUIOmniboxAimPopup`` (components/omnibox/common/omnibox_features.cc); chrome://process-internals
#: lists those WebContents without them and none with them (test_shared_chromium.py).
NEVER_SHOWN = ["WebUIOmniboxPopup", "WebUIOmniboxAimPopup"]
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-features=" + ",".join([*PLAYWRIGHT_DISABLES, *NEVER_SHOWN]),
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
        self.contexts = 0  # page contexts made (:meth:`new_page`)
        self._lock = asyncio.Lock()
        self._pages: Any = None  # the page context, its setup, and the origins its pages were at
        self._setup: tuple[Any, ...] = ()
        self._origins: set[str] = set()

    async def new_context(self, **options: Any) -> Any:
        async with self._lock:
            return await self._new_context(**options)

    async def _new_context(self, **options: Any) -> Any:
        from playwright.async_api import Error

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

    async def new_page(self, origin: str, *, init_script: str = "", **options: Any) -> Any:
        """A new page in the page context (module doc), made anew when a page of it was at ``origin``
        already, when its setup differs (``options``, ``init_script``), or when it is gone (chromium
        or its driver died: launched again). Its cookies are cleared first."""
        from playwright.async_api import Error

        setup = (init_script, sorted(options.items(), key=lambda kv: kv[0]))
        async with self._lock:
            for again in (False, True):
                context = self._pages
                if context is None or origin in self._origins or self._setup != setup:
                    await self._drop_pages()
                    context = await self._new_context(**options)
                    if init_script:
                        await context.add_init_script(init_script)
                    await context.new_page()  # kept open: pages after it cost a third less (module doc)
                    self._pages, self._setup, self._origins = context, setup, set()
                    self.contexts += 1
                try:
                    await context.clear_cookies()
                    page = await context.new_page()
                except Error:
                    if again:
                        raise
                    self._pages = None  # (chromium or the driver gone: a new context, launched anew)
                    continue
                self._origins.add(origin)
                return page
        raise AssertionError("unreachable")

    async def _drop_pages(self) -> None:
        """The page context no longer given out: closed now, or once its last test's page is (its first
        page, about:blank, is the context's own)."""
        context, self._pages, self._origins = self._pages, None, set()
        if context is not None and len(context.pages) <= 1:
            with contextlib.suppress(Exception):  # (gone with its chromium: nothing to close)
                await context.close()

    async def page_closed(self, page: Any) -> None:
        """``page`` closed; its context too when it is no longer given out and no test's page is open."""
        with contextlib.suppress(Exception):  # (chromium gone mid-test: the test says what failed)
            await page.close()
            if page.context is not self._pages and len(page.context.pages) <= 1:
                await page.context.close()

    async def _launch(self) -> None:
        from playwright.async_api import async_playwright

        self.playwright = await async_playwright().start()
        self.chromium = await self.playwright.chromium.launch(executable_path=require_chromium(), args=FLAGS)
        self.launches += 1

    async def close(self) -> None:
        """The chromium closed and the driver stopped (either may be gone already)."""
        self._pages, self._origins = None, set()
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
async def new_page(
    url: str,
    *,
    width: int,
    height: int,
    permissions: Sequence[str] = (),
    init_script: str = "",
    own_context: bool = False,
    **options: Any,
) -> AsyncIterator[Any]:
    """A new page (``width`` x ``height``, ``permissions`` granted to ``url``'s origin, ``init_script``
    run in every frame), closed after: on the running loop's shared chromium in its page context
    (module doc), else (or ``own_context``) in a browser context of its own."""
    origin = "/".join(url.split("/")[:3])  # scheme://host:port (a link may have a path)
    shared = _SHARED.get(asyncio.get_running_loop())
    if shared is None or own_context:
        async with new_context(viewport={"width": width, "height": height}, **options) as context:
            if permissions:
                await context.grant_permissions(list(permissions), origin=origin)
            if init_script:
                await context.add_init_script(init_script)
            yield await context.new_page()
        return
    page = await shared.new_page(origin, init_script=init_script, **options)
    try:
        if permissions:
            await page.context.grant_permissions(list(permissions), origin=origin)
        await page.set_viewport_size({"width": width, "height": height})
        yield page
    finally:
        await shared.page_closed(page)


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
