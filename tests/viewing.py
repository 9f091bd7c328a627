"""What the viewer's tests share: the demo store, a store of hostile chat content, the command
line's answers to compare with, and a small reader of the pages' HTML."""

from __future__ import annotations

import contextlib
import io
import json
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

from history.cli import main

HOSTILE = [
    "<script>window.pwned = 'script'</script> the launch price is $12",
    '<img src="x" onerror="window.pwned = \'onerror\'"> an image that must not load',
    "<a href=\"javascript:window.pwned='link'\">click me</a> and [click](javascript:alert(1))",
    "</pre></article><script>window.pwned = 'closed'</script><svg onload=\"window.pwned='svg'\">",
    '"><style>body{display:none}</style>{{ 7 * 7 }} ${7*7} the end',
]
"""Messages whose text tries every way into a page's markup; each names `window.pwned`."""


def cli(*argv: str | Path) -> tuple[int, str, str]:
    """The command line run in this process: its exit status, stdout and stderr.

    It runs on a thread of its own, so that its event loop is never inside another (the
    browser tests' Playwright runs one in the main thread)."""
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        ThreadPoolExecutor(1) as one,
    ):
        code = one.submit(main, [str(a) for a in argv]).result()
    return code, out.getvalue(), err.getvalue()


def cli_json(*argv: str | Path) -> Any:
    code, out, err = cli(*argv, "--json")
    assert code == 0, err
    return json.loads(out)


def demo_store(path: Path) -> Path:
    """The demo's store (`chat-outline demo --db`): a four-week planning chat, deep tree."""
    code, _, err = cli("demo", "--db", path)
    assert code == 0, err
    return path


def hostile_store(folder: Path) -> Path:
    """A store whose messages, authors, title and file names are all hostile markup, with
    enough messages that some have left the tail for lines of the tree."""
    lines = []
    for n in range(24):
        text = HOSTILE[n % len(HOSTILE)] + f" (message {n})"
        record: dict[str, Any] = {
            "id": f"h-{n}",
            "thread": "<b>hostile</b>",
            "text": text,
            "author": "<img src=x onerror=\"window.pwned='author'\">" if n % 2 else "Ana",
            "to": "north" if n % 2 == 0 else "Ana",
            "at": f"2026-02-02T09:{n:02d}:00+00:00",
        }
        if n == 3:
            record["files"] = [
                {
                    "name": "<img src=x onerror=\"window.pwned='file'\">.png",
                    "url": "javascript:window.pwned='url'",
                }
            ]
        lines.append(json.dumps(record))
    source = folder / "hostile.jsonl"
    source.write_text("\n".join(lines) + "\n")
    db = folder / "hostile.sqlite"
    code, _, err = cli("ingest", source, "--db", db, "--tail", "40,80", "--kept", "1")
    assert code == 0, err
    return db


class Element:
    """One element of a page: its tag, attributes and text (its descendants' too)."""

    def __init__(self, tag: str, attrs: dict[str, str]) -> None:
        self.tag, self.attrs, self.text = tag, attrs, ""

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


class Page(HTMLParser):
    """A page read into its elements, in document order (entities unescaped)."""

    VOID: ClassVar = {"meta", "link", "input", "br", "img", "hr", "rect", "option"}

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self._open: list[Element] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.elements.append(element)
        if tag not in self.VOID:
            self._open.append(element)

    def handle_endtag(self, tag: str) -> None:
        for k in range(len(self._open) - 1, -1, -1):
            if self._open[k].tag == tag:
                del self._open[k:]
                break

    def handle_data(self, data: str) -> None:
        for element in self._open:
            element.text += data

    def find(self, tag: str, cls: str | None = None, **attrs: str) -> list[Element]:
        return [
            e
            for e in self.elements
            if e.tag == tag
            and (cls is None or cls in e.classes)
            and all(e.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())
        ]

    def one(self, tag: str, cls: str | None = None, **attrs: str) -> Element:
        found = self.find(tag, cls, **attrs)
        assert len(found) == 1, (tag, cls, attrs, len(found))
        return found[0]
