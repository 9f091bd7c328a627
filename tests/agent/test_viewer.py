"""The viewer's routes (`chat-outline serve`), read through Starlette's TestClient: each answers,
reads only, escapes what a chat holds, sends its policy, and agrees with the command line."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

pytest.importorskip("starlette", reason="the viewer needs the serve extra")

from starlette.testclient import TestClient

from history import viewer
from history.viewer import create_app
from history.viewer._app import POLICY
from history.viewer._reading import chain, tops

from ..viewing import HOSTILE, Page, cli, cli_json, demo_store, hostile_store

THREAD = "launch"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_store(tmp_path_factory.mktemp("demo") / "demo.sqlite")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return hostile_store(tmp_path_factory.mktemp("hostile"))


@pytest.fixture
def client(demo: Path) -> Iterator[TestClient]:
    with TestClient(create_app(str(demo))) as client:
        yield client


def routes(thread: str) -> list[str]:
    t = quote(thread, safe="")
    return [
        "/",
        "/?match=laun",
        f"/threads/{t}",
        f"/threads/{t}?q=price",
        f"/threads/{t}?open=0%2B2",
        f"/threads/{t}/open/0+2",
        f"/threads/{t}/open/1+1",
        f"/threads/{t}/prompt",
        f"/threads/{t}/prompt?model=openai:gpt-5.6",
        f"/threads/{t}/open/s0+1?agent=north",
        f"/threads/{t}/time",
        "/static/viewer.js",
        "/static/viewer.css",
    ]


@pytest.mark.slow
def test_every_route_answers_with_its_policy(client: TestClient) -> None:
    for route in routes(THREAD):
        answer = client.get(route)
        assert answer.status_code == 200, (route, answer.text)
        assert answer.headers["content-security-policy"] == POLICY
        assert answer.headers["x-content-type-options"] == "nosniff"
        if not route.startswith("/static"):
            assert answer.headers["content-type"].startswith("text/html")
            assert "<script>" not in answer.text and " style=" not in answer.text
            scripts = re.findall(r"<script\b[^>]*>", answer.text)
            assert set(scripts) <= {'<script src="/static/viewer.js" defer>'}, scripts
    assert "script-src 'self';" in POLICY and "unsafe" not in POLICY
    static = Path(viewer.__file__).parent / "static"
    assert [f.name for f in static.iterdir() if f.name.endswith(".js")] == ["viewer.js"]


@pytest.mark.slow
def test_nothing_writes_and_every_other_method_is_refused(client: TestClient, demo: Path) -> None:
    before = hashlib.sha256(demo.read_bytes()).hexdigest()
    for route in routes(THREAD):
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            answer = client.request(method, route)
            assert answer.status_code == 405, (method, route)
            assert answer.headers["content-security-policy"] == POLICY
        assert client.get(route).status_code == 200
    assert hashlib.sha256(demo.read_bytes()).hexdigest() == before


def test_an_unknown_thread_or_line_is_not_found(client: TestClient) -> None:
    for route, said in [
        ("/threads/nope", "no thread &#39;nope&#39;"),
        ("/threads/nope/prompt", "no thread &#39;nope&#39;"),
        ("/threads/nope/open/0+1", "no thread &#39;nope&#39;"),
        (f"/threads/{THREAD}/open/0+3", "no line &#39;0+3&#39;"),
        (f"/threads/{THREAD}/open/99999+1", "no message &#39;99999+1&#39;"),
        (f"/threads/{THREAD}/open/s0+1", "a step label"),
        ("/nowhere", "Not Found"),
    ]:
        answer = client.get(route)
        assert answer.status_code == 404, route
        assert said in Page(answer.text).one("p", id="error").text or said in answer.text
        assert answer.headers["content-security-policy"] == POLICY


def test_hostile_text_is_shown_as_text(hostile: Path) -> None:
    with TestClient(create_app(str(hostile))) as client:
        thread = "<b>hostile</b>"
        t = quote(thread, safe="")
        pages = [client.get(r) for r in [*routes(thread)[:5], f"/threads/{t}/prompt"]]
        outline = cli_json("show", thread, "--db", hostile)["outline"]
        pages += [client.get(f"/threads/{t}/open/{n}+1") for n in range(len(outline))]
        for answer in pages:
            assert answer.status_code == 200, answer.url
            html = answer.text
            assert "<script>window" not in html and "<img" not in html and "<svg onload" not in html
            assert 'href="javascript:' not in html and "<b>hostile" not in html
            assert "<style>" not in html
        shown = "".join(a.text for a in pages)
        assert "&lt;script&gt;window.pwned = &#39;script&#39;&lt;/script&gt;" in shown
        tail = Page(pages[2].text).find("pre", "text")
        assert any(HOSTILE[3].split("<svg")[0] in p.text for p in tail)  # unescaped: as written
        assert "&lt;b&gt;hostile&lt;/b&gt;" in pages[0].text


def test_the_thread_list_agrees_with_threads_json(client: TestClient, demo: Path) -> None:
    page = Page(client.get("/").text)
    rows = page.find("tr")[1:]
    listed = cli_json("threads", "--db", demo)["threads"]
    assert [r.attrs["data-thread"] for r in rows] == [f["thread"] for f in listed]
    cells = [c.text for c in page.find("td")]
    columns = ("messages", "pending", "depth", "lines", "bytes", "tail", "tokens")
    for k, f in enumerate(listed):
        assert cells[8 * k + 1 : 8 * k + 8] == [str(f[name]) for name in columns]
    assert "no threads matching nothing-like-it" in client.get("/?match=nothing-like-it").text


def test_the_thread_page_agrees_with_show_json(client: TestClient, demo: Path) -> None:
    shown = cli_json("show", THREAD, "--db", demo)
    nodes = {n["label"]: n for n in shown["nodes"]}
    page = Page(client.get(f"/threads/{THREAD}?open=0%2B1").text)
    f = shown["figures"]
    assert page.one("p", id="figures").text.split()[:8] == [
        str(f["messages"]),
        "messages;",
        str(f["nodes"]),
        "lines",
        "in",
        str(f["depth"]),
        "levels;",
        "the",
    ]
    boxes = page.find("a", "box")
    row = [b for b in boxes if "outline-row" in b.classes]
    assert [b.attrs["data-label"] for b in row] == [line["label"] for line in shown["outline"]]
    for box in boxes:
        node = nodes[box.attrs["data-label"]]
        assert box.text.startswith(f"{node['label']} {node['text']}")
        assert ("outline" in box.classes) == node["outline"]
    tree = {b.attrs["data-label"] for b in boxes if "outline-row" not in b.classes}
    assert {"0+128", "0+1", "1+1"} <= tree  # the tops and the chain down to the line opened
    assert page.one("section", id="opened").attrs["data-label"] == "0+1"
    articles = page.find("article", "message")
    assert len(articles) == len(shown["tail"]) + 1  # the tail, and the message opened
    for article, message in zip(articles[1:], shown["tail"], strict=True):
        assert message["text"] in article.text and message["author"] in article.text
    (agent, steps), *others = shown["steps"].items()  # north's step outline, beside the tree
    assert not others and steps["lines"]
    opens = page.find("a", "open", **{"data-agent": agent})
    assert [a.attrs["data-label"] for a in opens] == [line["label"] for line in steps["lines"]]
    assert [s.text for s in page.find("span", "line")] == [line["text"] for line in steps["lines"]]


def test_a_line_opened_agrees_with_zoom_json(client: TestClient, demo: Path) -> None:
    for label in ("0+128", "64+8", "s0+2"):
        agent = "north" if label.startswith("s") else ""
        zoomed = cli_json("zoom", THREAD, label, "--agent", agent, "--db", demo)
        answer = client.get(
            f"/threads/{THREAD}/open/{label}" + (f"?agent={agent}" if agent else "")
        )
        page = Page(answer.text)
        opened = [
            (a.attrs["data-label"], s.text)
            for a, s in zip(page.find("a", "open"), page.find("span", "line"), strict=True)
        ]
        assert opened == [(n["label"], n["text"]) for n in zoomed["lines"]]
        children = [b.attrs["data-label"] for b in page.find("a", "box")]
        assert children == ([] if agent else [n["label"] for n in zoomed["lines"]])
    message = cli_json("zoom", THREAD, "5+1", "--db", demo)
    page = Page(client.get(f"/threads/{THREAD}/open/5+1").text)
    assert page.one("pre", "text").text in message["text"]


def test_the_prompt_page_agrees_with_prompt_json(client: TestClient, demo: Path) -> None:
    for model in ("anthropic:claude-sonnet-4-5", "openai:gpt-5.6"):
        sent = cli_json("prompt", THREAD, "--model", model, "--db", demo)
        page = Page(client.get(f"/threads/{THREAD}/prompt?model={model}").text)
        request = sent["request"]
        for name in ("tokens", "marks", "cached"):
            assert page.one("span", id=name).text == str(request[name]), (model, name)
        parts = page.find("li", "part")
        assert sum(int(p.text.split()[0]) for p in parts) == request["tokens"]
        cached = [p for p in parts if "cached" in p.classes]
        assert sum(int(p.text.split()[0]) for p in cached) == request["cached"]
        assert len([p for p in parts if "marked" in p.classes]) == request["marks"]
    plain = cli_json("prompt", THREAD, "--db", demo)
    page = Page(client.get(f"/threads/{THREAD}/prompt?model=").text)
    assert page.one("pre", id="view").text == plain["text"]


def test_the_time_page_draws_every_move_the_store_recorded(client: TestClient, demo: Path) -> None:
    import anyio

    from history.cli._stores import opened

    async def moves() -> list[int]:
        async with opened(str(demo), read_only=True) as store:
            return [m.seq for m in await store.moves(THREAD)]

    recorded = anyio.run(moves)
    page = Page(client.get(f"/threads/{THREAD}/time").text)
    assert [int(r.attrs["data-seq"]) for r in page.find("tr")[1:]] == recorded
    assert len(page.find("line", "cut")) + len(page.find("line", "fold")) >= len(recorded)
    chart = page.one("svg", id="chart")
    assert chart.attrs["data-first"] == "0"
    assert chart.attrs["data-last"] == str(
        cli_json("show", THREAD, "--db", demo)["tail"][-1]["seq"]
    )


def test_tops_and_chains_draw_a_bounded_part_of_a_long_tree() -> None:
    # 100,000 is 2**16 + 2**15 + 2**10 + 2**9 + 2**7 + 2**5: one top node a bit, oldest first.
    assert tops(100_000) == [(16, 0), (15, 2), (10, 96), (9, 194), (7, 780), (5, 3124)]
    first = 0
    for level, index in tops(100_000):
        assert index << level == first
        first += 1 << level
    assert first == 100_000
    drawn = chain((0, 77_777), 100_000)
    assert drawn[0] == (15, 2) and (0, 77_777) in drawn and len(drawn) == 1 + 2 * 15
    assert all(key == (15, 2) or (key[0] + 1, key[1] >> 1) in drawn for key in drawn)


def test_serve_refuses_a_missing_or_foreign_store(tmp_path: Path) -> None:
    code, _, err = cli("serve", "--db", tmp_path / "none.sqlite")
    assert code == 2 and "no store at" in err
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE notes (body TEXT)")
    shown = cli("show", THREAD, "--db", foreign)
    code, _, err = cli("serve", "--db", foreign)
    assert code == shown[0] == 2 and err == shown[2]


def test_serve_says_how_to_install_its_extra(monkeypatch: pytest.MonkeyPatch, demo: Path) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    code, _, err = cli("serve", "--db", demo)
    assert code == 2 and "pip install 'chat-outline[serve]'" in err


def test_serve_binds_to_this_machine_and_warns_on_another_host(
    monkeypatch: pytest.MonkeyPatch, demo: Path
) -> None:
    import uvicorn

    bound: list[tuple[str, int]] = []
    monkeypatch.setattr(
        uvicorn.Server, "run", lambda self: bound.append((self.config.host, self.config.port))
    )
    code, _, err = cli("serve", "--db", demo)
    assert code == 0 and bound == [("127.0.0.1", 8765)] and "warning" not in err
    code, _, err = cli("serve", "--db", demo, "--host", "0.0.0.0", "--port", "9000")
    assert code == 0 and bound[-1] == ("0.0.0.0", 9000)
    assert "warning: listening on '0.0.0.0'" in err


@pytest.mark.slow
def test_both_stores_serve_the_same_pages(tmp_path: Path) -> None:
    from importlib import resources

    from ..stores import KINDS, store_url

    demo = resources.files("history") / "data" / "demo.jsonl"
    chat = tmp_path / "chat.jsonl"
    chat.write_text("".join(demo.read_text().splitlines(keepends=True)[:120]))
    pages = {}
    for kind in KINDS:
        with store_url(kind, tmp_path) as db:
            code, _, err = cli(
                "ingest",
                chat,
                "--db",
                db,
                "--tail",
                "400,800",
                "--line",
                "160",
                "--outline",
                "1200,2400",
            )
            assert code == 0, err
            with TestClient(create_app(db)) as client:
                answers = [client.get(r) for r in routes(THREAD)[:-2]]
            assert [a.status_code for a in answers] == [200] * len(answers)
            pages[kind] = [a.text.replace(db, "STORE") for a in answers]
    assert pages["sqlite"] == pages["postgresql"]


def test_a_message_opened_shows_the_tool_steps_after_it(client: TestClient) -> None:
    from importlib import resources

    demo = resources.files("history") / "data" / "demo.jsonl"
    records = [json.loads(line) for line in demo.read_text().splitlines()]
    steps = [r["text"] for r in records[7:9]]  # north's call and its result, after message 6
    assert all(r.get("step") for r in records[7:9]) and not records[6].get("step")
    page = Page(client.get(f"/threads/{THREAD}/open/6+1").text)
    shown = [a for a in page.find("article", "message") if "step" in a.classes]
    assert [a.text.split("tokens\n", 1)[1].strip() for a in shown] == steps
    assert not Page(client.get(f"/threads/{THREAD}/open/5+1").text).find("article", "step")


def test_a_store_that_fails_answers_503_and_says_why(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from history.errors import StoreError
    from history.store.sqlite import SQLiteStore

    async def gone(self: SQLiteStore, thread: str) -> None:
        raise StoreError(f"{self.url!r}: disk I/O error")

    monkeypatch.setattr(SQLiteStore, "outline", gone)
    answer = client.get(f"/threads/{THREAD}")
    assert answer.status_code == 503 and "disk I/O error" in answer.text
    assert answer.headers["content-security-policy"] == POLICY


def test_a_fallback_line_is_marked_in_the_tree_and_where_it_opens(tmp_path: Path) -> None:
    import anyio

    from history import History, HistorySettings

    from ..conftest import message
    from ..faults.test_down import Broken

    db = tmp_path / "down.sqlite"

    async def build() -> None:
        settings = HistorySettings(summarizer="scripted", tail=(1, 2), kept=1, line=64)
        async with History(settings, store=db, model=Broken(), pause=0.0) as history:
            for k, text in enumerate(["word " * 40, "ok", "fine", "later"]):
                await history.message_created(message(k, text))
                await history.wait()

    anyio.run(build)
    with TestClient(create_app(str(db))) as client:
        page = Page(client.get("/threads/t?open=0%2B1").text)
        marked = {b.attrs["data-label"] for b in page.find("a", "fallback")}
        assert marked == {"0+1", "0+2"}  # message 0's line and the merge over it fell back
        opened = Page(client.get("/threads/t/open/0+2").text)
        assert [s.text for s in opened.find("span", "fallback")] == ["fallback"]
