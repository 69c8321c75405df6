"""The documentation: a short README and one page a topic under docs/, served as a site (mkdocs.yml).
Checked here: the site builds with ``mkdocs build --strict`` offline (in a network namespace of its
own where the machine allows one), every relative link and anchor of README.md and docs/*.md
resolves, and every ``sh``/``python`` block is run, or marked by the HTML comment right above it:

* ``<!-- checked by tests/FILE.py[::test_name] ... -->``: that test runs or checks the block; the
  file (and the test) exist and the file names the page the block is on;
* ``<!-- runs until Ctrl-C -->``: each line is a command that serves until stopped; run here, each
  must print a line, then Ctrl-C ends it with exit 130 and no traceback;
* ``<!-- not run: why -->``: illustrative, with the reason it cannot run here.

An unmarked block is run here as it is (``bash -eu -o pipefail`` / python, in a home directory of its
own) and must exit 0."""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from markdown.extensions.toc import slugify

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
DOCUMENTS = [README, *PAGES]
BOUND = 120.0  # a hang's bound, not a speed claim

FENCE = re.compile(
    r"^(?P<indent>[ ]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.M | re.S
)
MARK = re.compile(r"<!--\s*(?P<kind>checked by|runs until Ctrl-C|not run:)(?P<rest>.*?)-->", re.S)


def name(path: Path) -> str:
    return str(path.relative_to(ROOT))


@dataclass
class Block:
    page: Path
    lang: str
    body: str
    mark: str  # the marker's kind, "" for none
    detail: str


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for fence in FENCE.finditer(text):
        if fence["lang"] not in ("sh", "python"):
            continue
        indent = len(fence["indent"])
        body = "".join(line[indent:] for line in fence["body"].splitlines(keepends=True))
        before = text[: fence.start()].rstrip().splitlines()
        mark = MARK.fullmatch(before[-1].strip()) if before else None
        found.append(
            Block(
                page, fence["lang"], body, mark["kind"] if mark else "", mark["rest"].strip() if mark else ""
            )
        )
    return found


ALL_BLOCKS = [b for page in DOCUMENTS for b in blocks(page)]


def ids(block: Block) -> str:
    return f"{name(block.page)}:{block.body.splitlines()[0][:40]}"


def test_the_readme_is_short_and_every_page_is_in_the_site() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["strict"] is True and config["theme"]["name"] == "material"
    assert config["theme"]["font"] is False  # no page asks Google Fonts (or any host) for anything
    # only plugins that build offline: material's search and the README's inclusion
    assert [p if isinstance(p, str) else next(iter(p)) for p in config["plugins"]] == [
        "search",
        "include-markdown",
    ]
    assert set(config["validation"].values()) == {"warn"}  # strict: each warning fails the build

    def pages(nav: list[object]) -> list[str]:
        out: list[str] = []
        for item in nav:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            out += pages(value) if isinstance(value, list) else [str(value)]
        return out

    assert sorted(pages(config["nav"])) == sorted(p.name for p in PAGES)
    assert '"../README.md"' in (ROOT / "docs" / "index.md").read_text(encoding="utf-8")


def offline() -> list[str]:
    """A command prefix that takes the network away (a namespace with loopback only), where allowed."""
    for prefix in (["unshare", "-n"], ["unshare", "-rn"]):
        if shutil.which(prefix[0]) and subprocess.run([*prefix, "true"], capture_output=True).returncode == 0:
            return prefix
    return []  # no namespace here: the dead proxies below still stop every HTTP fetch


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "NO_MKDOCS_2_WARNING": "1",
        **{k: "http://127.0.0.1:9" for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")},
    }
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    return subprocess.run(
        [*offline(), sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_the_site_builds_strict_and_offline(tmp_path: Path) -> None:
    site = tmp_path / "site"
    build = mkdocs_build(ROOT / "mkdocs.yml", site)
    assert build.returncode == 0, build.stderr
    assert "WARNING" not in build.stderr
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "The first hour, on the simulator" in home  # the README is the home page
    assert 'href="ledger/"' in home  # its links to docs/ pages, rewritten for the site
    for page in PAGES:
        if page.name != "index.md":
            assert (site / page.stem / "index.html").exists(), page.name
    assert (site / "board.png").exists()


def test_a_broken_anchor_fails_the_build(tmp_path: Path) -> None:
    """The strict build is what catches a broken link in the site: shown once on a copy."""
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy)
    shutil.copy(README, copy)
    page = copy / "docs" / "cli.md"
    page.write_text(page.read_text() + "\nSee [the ledger](ledger.md#no-such-heading).\n")
    build = mkdocs_build(copy / "mkdocs.yml", tmp_path / "site")
    assert build.returncode != 0 and "no-such-heading" in build.stderr


def prose(text: str) -> str:
    """The text outside code: fenced blocks and inline code spans removed (their brackets are no links)."""
    text = FENCE.sub("", text)
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", text, flags=re.S)


def anchors(page: Path) -> set[str]:
    """The ids mkdocs gives a page's headings (its toc's slugify, on the heading's text)."""
    out = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        heading = re.match(r"#{1,6} (.*)", line)
        if heading:
            out.add(slugify(re.sub(r"[`*]", "", heading[1]).strip(), "-"))
    return out


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", DOCUMENTS, ids=name)
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    links = LINK.findall(prose(page.read_text(encoding="utf-8")))
    for target in links:
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # a URL: not fetched (no network here)
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        assert resolved.exists(), f"{name(page)}: {target} names nothing"
        if path and page.parent == ROOT / "docs":
            assert resolved.is_relative_to(ROOT / "docs"), f"{name(page)}: {target} leaves the site"
        if path and page == README:  # the README is the site's home page: it links into docs/ only
            assert resolved.is_relative_to(ROOT / "docs"), f"README: {target} is not a docs page"
        if anchor:
            assert anchor in anchors(resolved), f"{name(page)}: {target}: no such heading"
    if page == README:
        assert len(links) >= 14  # every docs page is linked from the README


def test_the_readme_links_every_page() -> None:
    linked = {Path(t).name for t in LINK.findall(prose(README.read_text(encoding="utf-8")))}
    assert {p.name for p in PAGES if p.name != "index.md"} <= linked


def test_every_block_is_run_or_marked() -> None:
    assert len(ALL_BLOCKS) >= 15
    for block in ALL_BLOCKS:
        if block.mark == "checked by":
            where, _, test = block.detail.split()[0].rstrip(":").partition("::")
            checker = (ROOT / where).read_text(encoding="utf-8")
            assert where.startswith("tests/"), ids(block)
            assert not test or re.search(rf"def {test}\(", checker), f"{ids(block)}: no {test} in {where}"
            assert name(block.page) in checker, f"{ids(block)}: {where} never names {name(block.page)}"
        elif block.mark == "not run:":
            assert len(block.detail) >= 20, f"{ids(block)}: say why it is not run"
        elif block.mark == "runs until Ctrl-C":
            assert block.lang == "sh", ids(block)


def newcomer(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "home").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "AGY_HARNESS_STATE"))}
    bin_dir = str(Path(sys.executable).parent)
    return {**env, "HOME": str(tmp_path / "home"), "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"}


def test_every_unmarked_block_runs(tmp_path: Path) -> None:
    for n, block in enumerate(b for b in ALL_BLOCKS if not b.mark):
        home = tmp_path / str(n)
        home.mkdir()
        python = block.lang == "python"
        out = subprocess.run(
            [sys.executable, "-c", block.body] if python else ["bash", "-eu", "-o", "pipefail"],
            input=None if python else block.body,
            cwd=home,
            env=newcomer(home),
            capture_output=True,
            text=True,
            timeout=BOUND,
        )
        assert out.returncode == 0, (ids(block), out.stderr)


def commands(body: str) -> list[str]:
    lines = (re.sub(r"\s+#.*$", "", line).strip() for line in body.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def test_every_serving_block_serves_until_ctrl_c(tmp_path: Path) -> None:
    serving = [b for b in ALL_BLOCKS if b.mark == "runs until Ctrl-C"]
    assert serving  # the board's: `board --sim`, and `sim --scenario gate`
    for block in serving:
        for line in commands(block.body):
            serves_until_ctrl_c(line, tmp_path)


def serves_until_ctrl_c(line: str, home: Path) -> None:
    proc = subprocess.Popen(
        ["bash", "-c", f"exec {line}"],
        cwd=home,
        env=newcomer(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        ready, _, _ = select.select([proc.stdout], [], [], BOUND)
        first = proc.stdout.readline() if ready else ""
        assert first.strip(), f"{line}: printed nothing ({proc.poll()})"
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=BOUND) == 130, line
        assert "Traceback" not in proc.stderr.read(), line
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
