"""Twelve exchanges with long messages: the whole trace, checked in and reviewed by hand.

The traces in `tests/data/` were read against SPEC sections 5 and 6: the task texts and
rulers (160 bytes, "about 21 words"), the too-long follow-ups with their marks, the cuts at 157
bytes plus "…", the merges by label, the step that leaves without a line, `gone` and `since` in
UTC, and the fold that leaves `0+16, 16+2` draining at 321 bytes over a minimum of 300.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

DATA = Path(__file__).resolve().parents[1] / "data"
BUDGETS = ["--line", "160", "--tail", "150,300", "--outline", "300,600", "--kept", "2"]


VERSIONS = {"v1": ["--no-cut-gap", "--steps", "none"], "v2": []}


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("summarizer", ["echo", "scripted"])
def test_the_twelve_exchange_trace_is_unchanged(summarizer: str, version: str) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "history.cli",
            "simulate",
            str(DATA / "twelve.jsonl"),
            "--json",
            "--summarizer",
            summarizer,
            *BUDGETS,
            *VERSIONS[version],
        ],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "", "PYTHONIOENCODING": "utf-8"},
    )
    name = f"twelve.{summarizer}.json" if version == "v1" else f"twelve.v2.{summarizer}.json"
    expected = json.loads((DATA / name).read_text(encoding="utf-8"))
    assert json.loads(result.stdout) == expected
    assert result.stderr == ""


def test_the_twelve_exchange_trace_covers_what_the_spec_describes() -> None:
    """What the reviewed trace shows, asserted on a fresh run rather than on the file."""
    from history import HistorySettings
    from history._trace import simulate

    settings = HistorySettings(
        summarizer="echo", line=160, tail=(150, 300), outline=(300, 600), kept=2
    )
    lines = (DATA / "twelve.jsonl").read_bytes().split(b"\n")
    trace = anyio.run(lambda: simulate(lines, settings), backend="asyncio")
    (outline,) = trace["outlines"]
    assert [(level, index) for level, index, *_ in outline["lines"]] == [(4, 0), (1, 8)]
    assert outline["draining"] and outline["bytes"] == 321 and outline["boundary"] == 18
    first = trace["asks"][0]
    assert first["prompts"][0].startswith(
        "Compaction: compress message 0 into one line of at most 160 bytes (about 21 words)"
    )
    assert first["prompts"][1].endswith("put together the plan: trailer|<- LIMIT")
    assert first["line"].endswith("put together the plan: trai…")
    assert len(first["line"].encode()) == 160
    assert [s for s in trace["summaries"] if s["message"] == "m13"] == []  # the step: no line
