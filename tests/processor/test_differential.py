"""The plugin against an independent, literal reading of the SPEC, on random conversations.

`tests/reference.py` was written from SPEC.md alone, without reading this package; both must
print the same simulate trace for the same input, byte for byte once parsed.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from history import HistorySettings
from history._trace import simulate

from ..conftest import START

pytestmark = pytest.mark.slow

# Imported by name, so that the reference (written from the SPEC alone) stays outside the type
# check; a missing one fails the tests rather than skipping them.
reference = importlib.import_module("tests.reference")

EXAMPLES = int(os.environ.get("DIFF_EXAMPLES", "150"))
ROOT = Path(__file__).resolve().parents[2]

TEXTS = [
    "ok",
    "Let's settle the price at 49 € a year.",
    "naïve café ✓",
    "日本語のテキスト",
    "",
    "line one\nline two\r\nline three\rend",
    "  spaced   out  ",
    "tab\there",
    "<input>\n</input>",
    "emoji 😀🚀",
    "x" * 300,
    "word " * 120,
    "é" * 200,
]
# What an agent's steps look like: short tool calls, and tool results often far over a line.
CALLS = [
    'search(query="launch date")',
    'read_file("notes/pricing.md")',
    "run: pytest -q",
    'http.get("https://example.com/api/v1/items?page=2")',
    "calendar.list(week=49)",
]
RESULTS = [
    json.dumps(
        {
            "results": [
                {"title": f"Lumen note {k}", "url": f"https://example.com/n/{k}", "score": k / 7}
                for k in range(12)
            ]
        },
        indent=2,
    ),
    'Traceback (most recent call last):\n  File "app.py", line 12, in <module>\n'
    + "    main()\n" * 20
    + "KeyError: 'price'",
    "\n".join(f"{k:>4} | row {k} | {'█' * (k % 9)} | €{k * 49}" for k in range(60)),
    "# Pricing\n\n- yearly: 49 €\n- monthly: 5 €\n- trial: 14 days, no card\n" * 8,
    "200 OK " + "é✓ " * 150,
    "row," * 16_500,  # over the <input> bound of 64,000 bytes
]
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
AGENTS = ["north", "south", "Ana", "Émile"]  # "Émile" sorts after every ASCII name
PAUSES = [0, 1, 3, 20, 45, 299, 300, 301, 900, 3_600, 86_400 * 3]  # seconds, bursts to days


@st.composite
def jsonl(draw: st.DrawFn, *, empty_step_author: bool = True, paced: bool = False) -> list[bytes]:
    """Random input lines: messages and steps of several agents in a few threads, deletes,
    redeliveries, conflicts and malformed lines. `paced`: each message comes a burst's
    seconds or a pause's minutes to days after the one before (PAUSES), so cold cuts happen."""
    lines: list[bytes] = []
    clock = START
    step_share = draw(st.sampled_from([0, 4, 12, 24]))  # steps in 12 + step_share messages
    agents = draw(st.lists(st.sampled_from(AGENTS), min_size=1, max_size=4, unique=True))
    threads = draw(st.sampled_from([["a"], ["a", "b", "ç"]]))
    for n in range(draw(st.integers(5, 80 if len(threads) == 1 else 50))):
        kind = draw(
            st.sampled_from(
                ["msg"] * 12
                + ["step"] * step_share
                + ["delete", "redeliver", "conflict", "bad", "again"]
            )
        )
        thread = draw(st.sampled_from(threads))
        if paced:  # at most 5,000 s back from the clock, so the odd `at` comes out of order
            clock += timedelta(seconds=draw(st.sampled_from(PAUSES)) + 5000)
        if kind == "again" and lines:  # an earlier line exactly, a true redelivery
            lines.append(draw(st.sampled_from(lines)))
            continue
        if kind in ("delete", "again"):
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
        if kind == "step":
            author = draw(st.sampled_from(agents + ([""] if empty_step_author else [])))
            text = draw(st.sampled_from(CALLS + RESULTS + ["", "ok"]))
        else:
            author = draw(st.sampled_from(["Ana", "north", ""]))
            text = draw(st.sampled_from(TEXTS)) + draw(st.sampled_from(["", f" #{n}"]))
        record: dict[str, Any] = {
            "id": f"{thread}{n}" if kind in ("msg", "step") else f"{thread}{max(n - 1, 0)}",
            "thread": thread,
            "author": author,
            "to": draw(st.sampled_from(["north", "", None])),
            "text": text + ("!" if kind == "conflict" else ""),
            "at": (clock + timedelta(seconds=draw(st.integers(0, 5000))))
            .astimezone(
                draw(st.sampled_from([START.tzinfo, None]))  # None: the local offset
            )
            .isoformat(),
        }
        if draw(st.integers(0, 15)) == 0:
            record["at"] = draw(st.sampled_from(ODD_AT))
        if kind == "step":
            record["step"] = True
        elif draw(st.booleans()):
            record["step"] = draw(st.sampled_from([True, False, None]))
            if record["step"] and not empty_step_author and not record["author"]:
                record["author"] = draw(st.sampled_from(AGENTS))
        if draw(st.integers(0, 5)) == 0:
            record["files"] = draw(st.lists(st.sampled_from(FILES), max_size=2))
        lines.append(json.dumps(record, ensure_ascii=draw(st.booleans())).encode())
    return lines


V1_BUDGETS = {
    "summarizer": st.sampled_from(["echo", "scripted"]),
    "line": st.sampled_from([64, 96, 512]),
    "tail": st.sampled_from([(10, 30), (40, 80), (200, 400)]),
    "outline": st.sampled_from([(60, 120), (300, 600)]),
    "kept": st.integers(1, 4),
    "tries": st.integers(1, 3),
}
V2_BUDGETS = {
    **V1_BUDGETS,
    "cut_gap": st.booleans(),
    "steps": st.sampled_from([None, (10, 30), (60, 120), (200, 400), (16_000, 32_000)]),
}


V3_BUDGETS = {**V2_BUDGETS, "cold": st.sampled_from([None, 1, 300, 300.5, 5_299, 3_600 * 24])}


def ours(lines: list[bytes], budget: dict[str, Any]) -> tuple[dict[str, Any], list[int]]:
    reported: list[int] = []

    async def run() -> dict[str, Any]:
        return await simulate(
            lines, HistorySettings(**budget), report=lambda n, _: reported.append(n)
        )

    return anyio.run(run, backend="asyncio"), reported


def events(trace: dict[str, Any], reported: list[int]) -> None:
    event("asks" if trace["asks"] else "no asks")
    event("folded" if any(e[0] for o in trace["outlines"] for e in o["lines"]) else "no fold")
    event("draining" if any(o["draining"] for o in trace["outlines"]) else "not draining")
    event("refused lines" if reported else "no refused line")
    outlines = [s for o in trace["outlines"] for s in o.get("steps", {}).values()]
    event("step lines" if trace.get("steps") else "no step line")
    event("step fold" if any(e[0] for s in outlines for e in s["lines"]) else "no step fold")


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jsonl(), st.fixed_dictionaries(V2_BUDGETS))
def test_the_plugin_prints_the_same_trace_as_the_reference_in_version_2(
    lines: list[bytes], budget: dict[str, Any]
) -> None:
    """SPEC version 2: the cut gap on and off, step trees on (small bounds too) and off."""
    trace, reported = ours(lines, budget)
    expected, errors = reference.simulate(lines, **budget)
    events(expected, reported)
    assert trace == expected
    assert reported == [int(e.split(":")[0].split()[-1]) for e in errors]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jsonl(paced=True), st.fixed_dictionaries(V3_BUDGETS))
def test_the_plugin_prints_the_same_trace_as_the_reference_in_version_3(
    lines: list[bytes], budget: dict[str, Any]
) -> None:
    """SPEC version 3: the cold cut on chats with bursts and pauses, `cold` on and off."""
    trace, reported = ours(lines, budget)
    expected, errors = reference.simulate(lines, **budget)
    if budget["cold"] is not None:
        warm, _ = reference.simulate(lines, **{**budget, "cold": None})
        event("cold cut" if warm != expected else "cold, no cold cut")
    events(expected, reported)
    assert trace == expected
    assert reported == [int(e.split(":")[0].split()[-1]) for e in errors]


@settings(max_examples=EXAMPLES // 3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jsonl(), st.fixed_dictionaries(V1_BUDGETS))
def test_version_1s_settings_print_version_1s_trace(
    lines: list[bytes], budget: dict[str, Any]
) -> None:
    """`cut_gap=False, steps=None`: version 1's trace, with `"steps": []` and `{}`."""
    budget = {**budget, "cut_gap": False, "steps": None}
    trace, reported = ours(lines, budget)
    expected, errors = reference.simulate(lines, **budget)
    events(expected, reported)
    assert trace["steps"] == [] and all(o["steps"] == {} for o in trace["outlines"])
    assert trace == expected
    assert reported == [int(e.split(":")[0].split()[-1]) for e in errors]


# The reference on the SPEC's own worked figures (section 10), so it is known to read them right.


def test_the_reference_gives_the_chapters_run_it_figures() -> None:
    lines = (ROOT / "examples" / "launch.jsonl").read_bytes().splitlines()
    figures = {}
    for gap in (False, True):
        trace, errors = reference.simulate(lines, tail=(40, 80), cut_gap=gap, steps=None)
        assert errors == []
        levels = Counter(s["level"] for s in trace["summaries"])
        figures[gap] = [levels[level] for level in sorted(levels)]
    assert figures == {False: [12, 6, 3, 1], True: [11, 5, 2, 1]}
    kept = sum(w for _, w, _, _ in trace["outlines"][0]["tail"][-4:])
    assert kept == 58


def _exchanges(count: int, *, steps: tuple[tuple[str, str], ...] = ()) -> list[bytes]:
    """Ana's long message to north and north's `ok`, `count` times; `steps` after each."""
    lines: list[bytes] = []
    for k in range(count):
        for author, to, text, step in [
            ("Ana", "north", f"point {k} " * 80, False),
            ("north", "Ana", "ok", False),
            *((agent, "", text, True) for agent, text in steps),
        ]:
            at = START + timedelta(minutes=len(lines))
            lines.append(
                json.dumps(
                    {
                        "id": f"m{len(lines)}",
                        "thread": "t",
                        "author": author,
                        "to": to,
                        "text": text,
                        "at": at.isoformat(),
                        "step": step,
                    }
                ).encode()
            )
    return lines


def test_the_reference_gives_the_chapters_check_it_figures() -> None:
    def run(count: int, gap: bool) -> tuple[list[str], int]:
        trace, _ = reference.simulate(
            _exchanges(count), summarizer="scripted", tail=(25, 50), cut_gap=gap, steps=None
        )
        return [a["line"] for a in trace["asks"]], trace["outlines"][0]["boundary"]

    assert run(2, False) == ([], 0)
    assert run(4, False) == (["S0", "S2"], 4)
    assert run(4, True)[1] == 3


def test_the_reference_writes_step_trees_per_agent() -> None:
    """Section 6a on a small case: exact tasks, `T` answers, folds by `steps`, the trace."""
    lines = _exchanges(6, steps=(("north", "x" * 100), ("south", "y" * 50)))
    trace, errors = reference.simulate(
        lines, summarizer="scripted", line=64, tail=(25, 50), steps=(20, 40)
    )
    assert errors == []
    tasks = [a["prompts"][0] for a in trace["asks"]]
    step_tasks = [t for t in tasks if " step " in t]
    assert step_tasks[0].startswith("Compaction: compress step 0 of north into one line of")
    assert "<chat>" not in step_tasks[0]
    assert step_tasks[1].startswith("Compaction: compress step 1 of north into one line of")
    assert "<chat>\nT0\n</chat>\n<input>\nnorth: " + "x" * 100 + "\n</input>" in step_tasks[1]
    merge = "Compaction: merge step lines 2+1 and 3+1 of south, adjacent, into one line of"
    south = "south: " + "y" * 50
    assert any(
        t.startswith(merge) and t.endswith(f"\n<input>\n{south}\n{south}\n</input>") for t in tasks
    )
    agents = [(s["agent"], s["level"], s["index"], s["text"]) for s in trace["steps"]]
    assert ("north", 1, 0, "T0\nT1") in agents
    assert ("south", 0, 0, south) in agents
    assert ("south", 1, 1, "T2+2") in agents
    assert trace["outlines"][0]["steps"]["south"]["lines"][0][:3] == [1, 0, 4]  # folded
    assert agents == sorted(agents, key=lambda a: a[:3])
    outline = trace["outlines"][0]
    assert list(outline["steps"]) == ["north", "south"]
    assert all(s["bytes"] <= 40 for s in outline["steps"].values())
    assert outline["steps"]["north"]["boundary"] == sum(
        1 for s in trace["steps"] if s["agent"] == "north" and s["level"] == 0
    )
    assert outline["boundary"] == len(trace["summaries"]) - sum(
        1 for s in trace["summaries"] if s["level"] > 0
    )
    off, _ = reference.simulate(lines, summarizer="scripted", line=64, tail=(25, 50), steps=None)
    assert off["steps"] == [] and off["outlines"][0]["steps"] == {}
    assert all(" step " not in a["prompts"][0] for a in off["asks"])


def test_the_reference_refuses_a_step_without_an_author() -> None:
    line = {"id": "s", "thread": "t", "author": "", "text": "x", "at": START.isoformat()}
    for steps in ((16_000, 32_000), None):
        _, errors = reference.simulate(
            [json.dumps(line).encode(), json.dumps({**line, "step": True}).encode()], steps=steps
        )
        assert [e.split(":")[:2] for e in errors] == [["2", " author"]]


@settings(max_examples=EXAMPLES // 3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jsonl(), st.fixed_dictionaries(V2_BUDGETS))
def test_the_reference_keeps_every_step_outline_consistent(
    lines: list[bytes], budget: dict[str, Any]
) -> None:
    """Each outline, shared or an agent's steps, covers the lines that left without a gap."""
    trace, _ = reference.simulate(lines, **budget)
    nodes = {
        (s["thread"], s.get("agent"), s["level"], s["index"]): s
        for s in trace["summaries"] + trace["steps"]
    }
    for o in trace["outlines"]:
        outlines = [(None, o), *o["steps"].items()]
        assert budget["steps"] is not None or o["steps"] == {}
        for agent, outline in outlines:
            covered = 0
            for level, index, size, at in outline["lines"]:
                assert index * 2**level == covered
                covered += 2**level
                node = nodes[(o["thread"], agent, level, index)]
                assert (node["bytes"], node["at"]) == (size, at)
            assert covered == outline["boundary"]
            assert outline["bytes"] == sum(size + 1 for _, _, size, _ in outline["lines"])
            bounds = budget["outline"] if agent is None else budget["steps"]
            assert outline["bytes"] <= bounds[1] or outline["draining"]


def test_a_nul_character_is_refused_in_any_string() -> None:
    """SPEC version 3 refuses NUL like invalid UTF-8: a store must move to PostgreSQL."""
    line = {"id": "x", "thread": "t", "author": "Ana", "text": "ok", "at": START.isoformat()}
    lines = [
        json.dumps(bad).encode()
        for bad in (
            {**line, "text": "a\0b"},
            {**line, "id": "x\0"},
            {**line, "author": "\0"},
            {**line, "to": "north\0"},
            {**line, "files": [{"name": "a\0.txt", "mime": "text/plain"}]},
        )
    ] + [json.dumps(line).encode()]
    trace, reported = ours(lines, {"summarizer": "echo"})
    expected, errors = reference.simulate(lines)
    assert reported == [int(e.split(":")[0]) for e in errors] == [1, 2, 3, 4, 5]
    assert trace == expected
    assert [s["message"] for s in trace["summaries"]] == [] and len(trace["outlines"]) == 1


def _paced(pauses: list[int], text: str = "point " * 40) -> list[bytes]:
    """Ana's messages to north, each `pauses[k]` seconds after the one before."""
    at, lines = START, []
    for k, pause in enumerate(pauses):
        at += timedelta(seconds=pause)
        record = {"id": f"m{k}", "thread": "t", "author": "Ana", "to": "north", "text": text}
        lines.append(json.dumps({**record, "at": at.isoformat()}).encode())
    return lines


@pytest.mark.parametrize("cold", [None, 300])
def test_a_pause_past_cold_cuts_a_tail_over_its_minimum(cold: int | None) -> None:
    """Six messages of 49 tokens in a burst, then one after ten minutes: with `cold` 300 it cuts
    the tail (343 tokens, under `tail[1]` 400) down to `tail[0]` 100; without, nothing leaves."""
    lines = _paced([0, 1, 1, 1, 1, 1, 600])
    budget = {"summarizer": "echo", "tail": (100, 400), "kept": 1, "cold": cold}
    trace, _ = ours(lines, budget)
    expected, _ = reference.simulate(lines, **budget)
    assert trace == expected
    (outline,) = trace["outlines"]
    assert outline["boundary"] == (0 if cold is None else 5)
    assert [t[0] for t in outline["tail"]] == [f"m{k}" for k in range(0 if cold is None else 5, 7)]
    assert all(t[1] == 49 for t in outline["tail"])


def test_no_pause_past_cold_leaves_the_trace_as_without_cold() -> None:
    lines = _paced([0, *[299] * 30])
    budget = {"summarizer": "scripted", "tail": (100, 400), "kept": 1}
    assert ours(lines, {**budget, "cold": 300})[0] == ours(lines, budget)[0]
    assert ours(lines, {**budget, "cold": 298})[0] != ours(lines, budget)[0]


def _launch_with_steps() -> list[bytes]:
    """The example chat, with north's and south's tool calls and results between messages."""
    lines = []
    for k, raw in enumerate((ROOT / "examples" / "launch.jsonl").read_bytes().splitlines()):
        lines.append(raw)
        shared = json.loads(raw)
        agent = "south" if k % 3 == 2 else "north"
        for n, text in enumerate([CALLS[k % len(CALLS)], RESULTS[k % (len(RESULTS) - 1)]]):
            step = {**shared, "id": f"{shared['id']}-{n}", "author": agent, "to": None}
            lines.append(json.dumps({**step, "text": text, "step": True}).encode())
    return lines


@pytest.mark.parametrize(
    "options",
    [
        [],
        ["--no-cut-gap"],
        ["--steps", "none"],
        ["--no-cut-gap", "--steps", "none"],
        ["--steps", "60,120", "--summarizer", "scripted", "--line", "96"],
        ["--steps", "200,400", "--tail", "100,300", "--outline", "100,200"],
        ["--cold", "1", "--tail", "100,300"],
    ],
)
def test_the_command_lines_print_the_same_trace(tmp_path: Path, options: list[str]) -> None:
    path = tmp_path / "launch.jsonl"
    path.write_bytes(b"\n".join(_launch_with_steps()) + b"\n")
    env = {**os.environ, "HISTORY_TAIL": "40,80"}
    printed = [
        subprocess.run(
            [sys.executable, *command, str(path), "--json", *options],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        for command in (["-m", "history.cli", "simulate"], [str(ROOT / "tests" / "reference.py")])
    ]
    ours, theirs = (json.loads(p.stdout) for p in printed)
    assert ours["steps"] or "none" in options
    assert ours == theirs
