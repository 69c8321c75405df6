"""The worker's one chromium (tests/chromium.py), shared by the browser tests: nothing one test's page
stored reaches the next (a page at a new origin is a new page of the one page context, its cookies
cleared; a page at an origin that context saw is in a new one), its viewport, granted notifications
and notification spy are its own, one chromium serves them, a chromium or driver that died is
launched again for the next page, and nothing is left running when the worker's session ends."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import psutil
import pytest

from tests.chromium import NEVER_SHOWN, SharedChromium, new_context, shared

from .helpers import browser_page, require_chromium, until

ROOT = Path(__file__).resolve().parents[2]
PAGE = b"<!doctype html><title>shared</title><p>a page</p>"


@pytest.fixture(autouse=True)
def _chromium() -> None:
    require_chromium()


def processes() -> dict[str, psutil.Process]:
    """This process's playwright driver (node) and chromium (its browser process, not a renderer)."""
    found = {}
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            argv = child.cmdline()
            if "run-driver" in argv:
                found["driver"] = child
            elif argv and "chromium" in Path(argv[0]).name and not any(a.startswith("--type=") for a in argv):
                found["chromium"] = child
    return found


@contextlib.asynccontextmanager
async def site() -> AsyncIterator[str]:
    """An origin on 127.0.0.1 that serves one page for every GET."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: %d\r\n\r\n" % len(PAGE)
            )
            writer.write(PAGE)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    async with server:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"


STATE = "() => ({cookie: document.cookie, stored: localStorage.getItem('k'), notes: Array.isArray(window.__notes),"
STATE += " permission: Notification.permission, width: innerWidth, height: innerHeight})"


STORE = "() => { document.cookie = 'k=1; max-age=3600'; localStorage.setItem('k', '1') }"
STORED = {
    "cookie": "k=1",
    "stored": "1",
    "notes": True,
    "permission": "granted",
    "width": 1360,
    "height": 860,
}
FRESH = {"cookie": "", "stored": None, "notes": True, "permission": "granted", "width": 800, "height": 600}


@shared
async def test_a_page_at_an_origin_seen_before_is_a_context_of_its_own_on_the_one_chromium(
    chromium_per_worker: SharedChromium,
) -> None:
    async with site() as url:
        async with browser_page(url) as page:
            await page.evaluate(STORE)
            first = await page.evaluate(STATE)
            launches, contexts = chromium_per_worker.launches, chromium_per_worker.contexts
        async with browser_page(url, width=800, height=600) as page:
            second = await page.evaluate(STATE)
    assert first == STORED
    assert second == FRESH
    assert chromium_per_worker.contexts == contexts + 1  # a context of its own
    assert chromium_per_worker.launches == launches  # the same chromium


@shared
async def test_a_page_at_a_new_origin_of_the_same_host_shares_the_context_and_sees_nothing_stored(
    chromium_per_worker: SharedChromium,
) -> None:
    """Another port is another origin (storage, permissions) but the same host for cookies: the page
    context's cookies are cleared before each page (else the first page's cookie is the second's)."""
    async with site() as url, site() as other:
        async with browser_page(url) as page:
            await page.evaluate(STORE)
            first = await page.evaluate(STATE)
            contexts = chromium_per_worker.contexts
        async with browser_page(other, width=800, height=600) as page:
            second = await page.evaluate(STATE)
    assert first == STORED
    assert second == FRESH
    assert chromium_per_worker.contexts == contexts  # the one page context: the case cookies could leak in


@shared
async def test_a_closed_chromium_is_launched_again(chromium_per_worker: SharedChromium) -> None:
    async with site() as url:
        async with browser_page(url) as page:
            assert await page.title() == "shared"
        launches = chromium_per_worker.launches
        await chromium_per_worker.chromium.close()
        async with browser_page(url) as page:
            assert await page.title() == "shared"
    assert chromium_per_worker.launches == launches + 1


@shared
@pytest.mark.parametrize("killed", ["chromium", "driver"])
async def test_a_killed_chromium_or_driver_is_launched_again(
    chromium_per_worker: SharedChromium, killed: str
) -> None:
    async with site() as url:
        async with browser_page(url) as page:
            assert await page.title() == "shared"
        launches = chromium_per_worker.launches
        victim = processes()[killed]
        victim.kill()
        await until(lambda: not victim.is_running() or victim.status() == psutil.STATUS_ZOMBIE)
        async with browser_page(url) as page:
            assert await page.title() == "shared"
    assert chromium_per_worker.launches == launches + 1
    assert processes()[killed].pid != victim.pid


#: the labels of chrome://process-internals' tree of this profile's WebContents (in shadow roots)
WEB_CONTENTS = """() => { const out = []; const walk = (n) => {
  if (n.nodeType === 1) { const t = n.getAttribute('label') || (typeof n.label === 'string' ? n.label : '');
    if (t) out.push(t); if (n.shadowRoot) walk(n.shadowRoot); }
  for (const c of n.children || []) walk(c); }; walk(document);
  return out.filter((t) => t.startsWith('WebContents:')); }"""


@shared
async def test_chromium_keeps_what_playwright_disables_and_makes_no_omnibox_popup() -> None:
    """Chromium keeps only the last ``--disable-features`` it is given: ours (tests/chromium.py) holds
    every feature playwright's own disables, and the omnibox's WebUI popups, which headless chromium
    made for every browser context (a renderer of their own: ~1 CPU-s a context, measured) and no test
    ever shows. Fails before: chrome://process-internals lists the "Omnibox Popup" WebContents."""
    async with new_context() as context:
        page = await context.new_page()
        await page.goto("chrome://version")
        argv = (await page.inner_text("#command_line")).split()
        await page.goto("chrome://process-internals/#web-contents")
        # (filled in once: when this page's own WebContents is listed, every one is)
        await page.wait_for_function(
            f"({WEB_CONTENTS})().some(t => t.includes('Process Model'))", polling=100
        )
        contents = await page.evaluate(WEB_CONTENTS)
    assert contents and not [c for c in contents if "omnibox" in c.lower()], contents
    given = [set(a.split("=", 1)[1].split(",")) for a in argv if a.startswith("--disable-features=")]
    assert len(given) == 2, argv  # playwright's, then ours (the one chromium keeps)
    playwrights, ours = given
    assert playwrights <= ours, (
        f"playwright disables more than tests/chromium.py repeats: {playwrights - ours}"
    )
    assert set(NEVER_SHOWN) <= ours


CONFTEST = """
import json, os
from pathlib import Path
import psutil

def pytest_sessionfinish(session):  # after the session's fixtures were torn down
    seen = Path(__file__).parent / "seen"
    for line in seen.read_text().splitlines() if seen.exists() else []:
        pid = json.loads(line)["pid"]
        alive = psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        with open(Path(__file__).parent / "after", "a") as f:
            f.write(json.dumps({"pid": pid, "alive": alive}) + "\\n")
"""

SUITE = """
import json
from pathlib import Path
from tests.board.test_shared_chromium import processes
from tests.chromium import SHARED, new_context

pytestmark = SHARED

async def test_a_page_{n}():
    async with new_context() as context:
        page = await context.new_page()
        await page.goto("data:text/html,<title>t</title>")
        assert await page.title() == "t"
    with open(Path(__file__).parent / "seen", "a") as f:
        for name, proc in processes().items():
            f.write(json.dumps({{"name": name, "pid": proc.pid}}) + "\\n")
"""


PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]


def test_nothing_is_left_running_when_the_session_ends(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    for n in range(2):
        (tmp_path / f"test_pages_{n}.py").write_text(SUITE.format(n=n))
    out = subprocess.run(
        [*PYTEST, "-p", "tests.chromium", "-o", "asyncio_mode=auto", "-n", "0", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0 and "2 passed" in out.stdout, out.stdout + out.stderr
    seen = [json.loads(line) for line in (tmp_path / "seen").read_text().splitlines()]
    assert (
        sorted({s["name"] for s in seen}) == ["chromium", "driver"] and len({s["pid"] for s in seen}) == 2
    ), seen
    after = [json.loads(line) for line in (tmp_path / "after").read_text().splitlines()]
    assert after and not any(a["alive"] for a in after), after
