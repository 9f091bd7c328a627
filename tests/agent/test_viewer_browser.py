"""The viewer in a real browser: headless Chromium from Debian's packages, driven by Playwright
(nothing downloads a browser). Skipped with a message where Chromium is missing; under CI
(`CI=true`, as `.ci/run` sets it, and installs Chromium) they fail instead.

`VIEWER_SCREENSHOT=path.png` keeps a screenshot of the demo thread's page (docs/viewer.png).
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest

from ..viewing import cli_json, demo_store, hostile_store

pytestmark = pytest.mark.slow

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
THREAD = "launch"


def _missing(what: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true"):
        pytest.fail(f"{what} under CI: .ci/run installs it")
    pytest.skip(f"{what}: apt-get install chromium, pip install 'chat-outline[serve]' playwright")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = next((p for p in CHROMIUM if Path(p).exists()), shutil.which("chromium"))
    if executable is None:
        _missing("no Chromium installed")
    try:
        import uvicorn  # noqa: F401
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        _missing(f"{exc.name} is not installed")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield browser
        browser.close()


def serving(db: Path) -> Iterator[str]:
    """The viewer over `db` on a free port of this machine, for the length of a test module."""
    import uvicorn

    from history.viewer import create_app

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(str(db)), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the viewer did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_store(tmp_path_factory.mktemp("demo") / "demo.sqlite")


@pytest.fixture(scope="module")
def demo_url(demo: Path, browser: Browser) -> Iterator[str]:
    yield from serving(demo)


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    # A refused script or style, or a file that fails to load, is an error on the console.
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    yield page
    page.close()
    assert not problems, problems


def box(page: Page, label: str) -> Any:
    """A line's box in the tree (not the outline's row), by its label: what a click opens."""
    return page.locator(f'#tree a.box:not(.outline-row)[data-label="{label}"] rect')


def test_open_a_line_of_the_demo_down_to_a_message(page: Page, demo_url: str, demo: Path) -> None:
    page.goto(f"{demo_url}/threads/{THREAD}")
    shown = cli_json("show", THREAD, "--db", demo)
    drawn = page.eval_on_selector_all(
        "#tree a.box.outline-row", "boxes => boxes.map(b => b.dataset.label)"
    )
    assert drawn == [line["label"] for line in shown["outline"]]
    label = "0+128"
    while label != "0+1":
        box(page, label).click()
        page.wait_for_selector(f'#opened[data-label="{label}"]')
        zoomed = cli_json("zoom", THREAD, label, "--db", demo)
        listed = page.eval_on_selector_all(
            "#opened .lines li", "items => items.map(i => i.querySelector('.line').textContent)"
        )
        assert listed == [n["text"] for n in zoomed["lines"]]
        label = zoomed["lines"][0]["label"]
        assert box(page, label).count() == 1  # the children are drawn under it
    box(page, "0+1").click()
    page.wait_for_selector('#opened[data-label="0+1"] article.message')
    message = cli_json("zoom", THREAD, "0+1", "--db", demo)
    assert page.inner_text("#opened pre.text") in message["text"]
    assert "Maya" in page.inner_text("#opened .author")
    if os.environ.get("VIEWER_SCREENSHOT"):
        page.goto(f"{demo_url}/threads/{THREAD}?q=price+ids")
        box(page, "64+32").click()
        page.wait_for_selector('#opened[data-label="64+32"]')
        page.screenshot(path=os.environ["VIEWER_SCREENSHOT"])


def test_each_box_is_as_wide_as_its_span_of_messages(page: Page, demo_url: str) -> None:
    """A line's box spans its messages (`first+count`) on one scale, the outline's row too."""
    page.goto(f"{demo_url}/threads/{THREAD}")
    drawn = page.eval_on_selector_all(
        "#tree a.box",
        "boxes => boxes.map(b => { const r = b.querySelector('rect').getBoundingClientRect();"
        " return [b.dataset.label, r.left, r.width]; })",
    )
    assert len(drawn) > 10
    spans = [(*map(int, label.split("+")), left, width) for label, left, width in drawn]
    unit = max(width / count for _, count, _, width in spans)  # pixels a message
    origin = min(left - first * unit for first, _, left, _ in spans)
    for first, count, left, width in spans:
        assert width == pytest.approx(count * unit, abs=1.0), (first, count)
        assert left == pytest.approx(origin + first * unit, abs=1.0), (first, count)


def test_search_highlights_its_hits_in_the_tree(page: Page, demo_url: str, demo: Path) -> None:
    page.goto(f"{demo_url}/threads/{THREAD}")
    page.fill("#search input[name=q]", "price ids")
    page.click("#search button")
    page.wait_for_selector("#hits")
    found = cli_json("search", THREAD, "price", "ids", "--db", demo)["hits"]
    listed = page.eval_on_selector_all("#hits a.open", "links => links.map(a => a.dataset.label)")
    assert listed == [h["label"] for h in found]
    lit = page.eval_on_selector_all("#tree a.box.hit", "boxes => boxes.map(b => b.dataset.label)")
    assert lit and set(lit) <= set(listed)
    page.click(f'#hits a.open[data-label="{listed[0]}"]')
    page.wait_for_selector(f'#opened[data-label="{listed[0]}"]')


def test_the_thread_list_filters_as_one_types(page: Page, demo_url: str) -> None:
    page.goto(demo_url)
    assert page.locator("#threads tbody tr:not([hidden])").count() == 1
    page.fill("#match", "no such thread")
    assert page.locator("#threads tbody tr[data-thread]:not([hidden])").count() == 0
    page.fill("#match", "LAUN")
    assert page.locator("#threads tbody tr[data-thread]:not([hidden])").count() == 1
    page.click("#threads a")
    page.wait_for_selector("#tree")


def test_hostile_text_never_runs(
    page: Page, browser: Browser, tmp_path_factory: pytest.TempPathFactory
) -> None:
    db = hostile_store(tmp_path_factory.mktemp("hostile"))
    thread = quote("<b>hostile</b>", safe="")
    for url in serving(db):
        page.goto(f"{url}/threads/{thread}")
        assert page.evaluate("document.title").startswith("<b>hostile</b>")
        labels = page.eval_on_selector_all(
            "#tree a.box.outline-row", "boxes => boxes.map(b => b.dataset.label)"
        )
        for label in labels:
            page.click(f'#tree a.box.outline-row[data-label="{label}"] rect')
            page.wait_for_selector(f'#opened[data-label="{label}"]')
        page.goto(f"{url}/threads/{thread}?open=3%2B1")
        assert "onerror" in page.inner_text("#opened .files")
        for address in (f"{url}/", f"{url}/threads/{thread}/prompt"):
            page.goto(address)
        page.goto(f"{url}/threads/{thread}")
        page.wait_for_timeout(300)
        assert page.evaluate("window.pwned") is None
        inserted = "document.querySelectorAll('main img, main script, style').length"
        assert page.evaluate(inserted) == 0
        links = page.eval_on_selector_all("a", "links => links.map(a => a.getAttribute('href'))")
        assert links and not [link for link in links if not link.startswith("/")]
        tail = page.inner_text("#tail")  # the newest message, whole, as it was written
        assert "</pre></article><script>window.pwned = 'closed'</script>" in tail
        assert "<img src=x onerror=\"window.pwned='author'\">" in tail


def test_the_prompt_and_time_pages_draw_what_the_store_holds(
    page: Page, demo_url: str, demo: Path
) -> None:
    page.goto(f"{demo_url}/threads/{THREAD}")
    page.click("text=what the agent is sent")
    page.wait_for_selector("#parts")
    sent = cli_json("prompt", THREAD, "--model", "anthropic:claude-sonnet-4-5", "--db", demo)
    assert page.inner_text("#tokens") == str(sent["request"]["tokens"])
    assert page.locator("#parts li.cached").count() > 0
    page.goto(f"{demo_url}/threads/{THREAD}")
    page.click("text=over time")
    page.wait_for_selector("#chart polyline.tokens")
    kinds = page.eval_on_selector_all(
        "#moves td:nth-child(2)", "cells => cells.map(c => c.textContent)"
    )
    assert page.locator("#chart line.cut").count() == sum("cut" in k for k in kinds) > 0
    assert page.locator("#chart line.fold").count() == sum("fold" in k for k in kinds) > 0
