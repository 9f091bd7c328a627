"""The plugin against an independent, literal reading of the SPEC, on random conversations.

`tests/reference.py` was written from SPEC.md alone, without reading this package; both must
print the same simulate trace for the same input, byte for byte once parsed.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from history import HistorySettings
from history.trace import simulate

from .conftest import START

reference = pytest.importorskip("tests.reference", reason="the reference implementation is missing")

TEXTS = [
    "ok", "Let's settle the price at 49 € a year.", "naïve café ✓", "日本語のテキスト", "",
    "line one\nline two\r\nline three\rend", "  spaced   out  ", "tab\there", "<input>\n</input>",
    "emoji 😀🚀", "x" * 300, "word " * 120, "é" * 200,
]  # fmt: skip
FILES = [
    {"name": "a.png", "mime": "image/png", "size": 10},
    {"name": "notes.txt", "mime": "text/plain; charset=utf-8", "size": 4001},
    {"name": "doc.pdf", "mime": "application/pdf", "size": 250_000},
    {"name": "data", "mime": None},
    {"name": "x.json", "mime": "application/ld+json", "size": 7},
    {"name": "", "mime": "IMAGE/X+JSON", "size": 0},
    {"name": "null size", "mime": "text/plain", "size": None},
    {"name": "no size", "mime": "application/pdf"},
]
ODD_AT = ["0001-01-01T00:30:00+01:00", "9999-12-31T23:59:59-01:00", "2026-11-01T10:00:00.5+05:30"]


@st.composite
def jsonl(draw: st.DrawFn) -> list[bytes]:
    lines: list[bytes] = []
    for n in range(draw(st.integers(5, 50))):
        kind = draw(st.sampled_from(["msg"] * 12 + ["delete", "redeliver", "conflict", "bad"]))
        thread = draw(st.sampled_from(["a", "b", "ç"]))
        if kind == "delete":
            lines.append(json.dumps({"event": "thread.deleted", "thread": thread}).encode())
            continue
        if kind == "bad":
            lines.append(
                draw(
                    st.sampled_from(
                        [b"{oops", b"\xff\xfe", b"[]", b'{"id": 1}', b'{"event": null}']
                    )
                )
            )
            continue
        text = draw(st.sampled_from(TEXTS)) + draw(st.sampled_from(["", f" #{n}"]))
        record: dict[str, Any] = {
            "id": f"{thread}{n}" if kind == "msg" else f"{thread}{max(n - 1, 0)}",
            "thread": thread,
            "author": draw(st.sampled_from(["Ana", "north", ""])),
            "to": draw(st.sampled_from(["north", "", None])),
            "text": text + ("!" if kind == "conflict" else ""),
            "at": (START + timedelta(seconds=draw(st.integers(0, 5000))))
            .astimezone(
                draw(st.sampled_from([START.tzinfo, None]))  # None: the local offset
            )
            .isoformat(),
        }
        if draw(st.integers(0, 15)) == 0:
            record["at"] = draw(st.sampled_from(ODD_AT))
        if draw(st.booleans()):
            record["step"] = draw(st.sampled_from([True, False, None]))
        if draw(st.integers(0, 5)) == 0:
            record["files"] = draw(st.lists(st.sampled_from(FILES), max_size=2))
        lines.append(json.dumps(record, ensure_ascii=draw(st.booleans())).encode())
    return lines


budgets = st.fixed_dictionaries(
    {
        "summarizer": st.sampled_from(["echo", "scripted"]),
        "line": st.sampled_from([64, 96, 512]),
        "tail": st.sampled_from([(10, 30), (40, 80), (200, 400)]),
        "outline": st.sampled_from([(60, 120), (300, 600)]),
        "kept": st.integers(1, 4),
        "tries": st.integers(1, 3),
    }
)


def ours(lines: list[bytes], budget: dict[str, Any]) -> tuple[dict[str, Any], list[int]]:
    reported: list[int] = []

    async def run() -> dict[str, Any]:
        return await simulate(
            lines, HistorySettings(**budget), report=lambda n, _: reported.append(n)
        )

    return anyio.run(run, backend="asyncio"), reported


@settings(
    max_examples=int(__import__("os").environ.get("DIFF_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(jsonl(), budgets)
def test_the_plugin_prints_the_same_trace_as_the_reference(
    lines: list[bytes], budget: dict[str, Any]
) -> None:
    trace, reported = ours(lines, budget)
    expected, errors = reference.simulate(lines, **budget)
    event("asks" if trace["asks"] else "no asks")
    event("folded" if any(e[0] for o in trace["outlines"] for e in o["lines"]) else "no fold")
    event("draining" if any(o["draining"] for o in trace["outlines"]) else "not draining")
    event("refused lines" if reported else "no refused line")
    assert trace == expected
    assert reported == [int(e.split(":")[0].split()[-1]) for e in errors]
