"""A thread keeps the settings it was built with: recorded, shown, and used until told otherwise."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from history import History, HistorySettings, Message, prompt_text, view
from history.cli import main
from history.errors import ConfigurationError
from history.lines import render
from history.processors.weight import encoding
from history.rebuilding import rebuild
from history.settings import recorded
from history.store import open_store

from ..conftest import message, run


def tokens(text: str) -> int:
    return len(encoding("cl100k_base").encode_ordinary(text))


def long_chat(count: int) -> list[Message]:
    """Ana and north, in messages of 5 to 60 words, names and numbers among them."""
    rng = random.Random(5)
    words = ["venue", "budget", "flight", "hotel", "menu", "Ana", "north", "42", "7f3a"]
    return [
        message(
            n,
            " ".join(rng.choice(words) for _ in range(rng.randint(5, 60))),
            author=("Ana", "north")[n % 2],
            to=("north", "Ana")[n % 2],
        )
        for n in range(count)
    ]


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "launch.jsonl"


def halves(tmp_path: Path) -> tuple[Path, Path]:
    """The example chat in two files: its first ten messages, then the last six."""
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    first.write_text("".join(lines[:10]), encoding="utf-8")
    second.write_text("".join(lines[10:]), encoding="utf-8")
    return first, second


def built(
    capsys: pytest.CaptureFixture[str], db: Path
) -> tuple[dict[str, Any], tuple[object, object, object]]:
    """The thread's recorded settings, and its tree and outline as `show --json` gives them."""
    code, out, _ = run(capsys, "show", "t", "--db", db, "--json")
    assert code == 0
    shown: dict[str, Any] = json.loads(out)
    return shown["settings"], (shown["nodes"], shown["outline"], shown["tail"])


def test_a_thread_records_the_settings_it_is_first_processed_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the settings on one line, however many there are
    db = tmp_path / "h.sqlite"
    assert run(capsys, "ingest", EXAMPLE, "--tail", "40,80", "--kept", "2", "--db", db)[0] == 0
    settings, _ = built(capsys, db)
    assert {k: settings[k] for k in ("summarizer", "line", "tail", "outline", "kept")} == {
        "summarizer": "echo",
        "line": 512,
        "tail": [40, 80],
        "outline": [64000, 128000],
        "kept": 2,
    }
    out = run(capsys, "show", "t", "--db", db)[1]
    assert "built with: " in out and "tail 40,80" in out and "kept 2" in out


def paused(tmp_path: Path) -> Path:
    """The example chat with an hour's pause before its eleventh message."""
    lines = []
    for k, raw in enumerate(EXAMPLE.read_text(encoding="utf-8").splitlines()):
        record = json.loads(raw)
        if k >= 10:
            at = datetime.fromisoformat(record["at"]) + timedelta(hours=1)
            record["at"] = at.isoformat()
        lines.append(json.dumps(record) + "\n")
    path = tmp_path / "paused.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_cold_is_recorded_with_a_threads_settings_and_kept_by_each_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat, db, warm = paused(tmp_path), tmp_path / "h.sqlite", tmp_path / "warm.sqlite"
    options = ("--tail", "100,400", "--db")
    assert run(capsys, "ingest", chat, "--cold", "1800", *options, db)[0] == 0
    assert run(capsys, "ingest", chat, *options, warm)[0] == 0
    assert built(capsys, db)[0]["cold"] == 1800.0
    assert built(capsys, warm)[0]["cold"] is None
    assert built(capsys, db)[1] != built(capsys, warm)[1]  # the pause cut the tail
    code, _, err = run(capsys, "ingest", chat, "--cold", "60", "--db", db)
    assert code == 2 and "was built with cold 1800.0, not cold 60.0" in err
    code, out, _ = run(capsys, "rebuild", "t", "--cold", "60", "--db", db)
    assert code == 0 and "with cold 60.0 (built with cold 1800.0)" in out
    for command in ("simulate", "demo", "worker"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "--cold SECONDS" in capsys.readouterr().out


def test_rebuild_defaults_to_the_settings_the_thread_was_built_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    assert run(capsys, "ingest", EXAMPLE, "--tail", "40,80", "--db", db)[0] == 0
    _, before = built(capsys, db)
    code, out, _ = run(capsys, "rebuild", "t", "--db", db)
    assert code == 0
    assert out.startswith("rebuilt thread 't' with the settings it was built with from 16 ")
    assert out.endswith("made 0 model calls\n")
    assert built(capsys, db)[1] == before
    code, out, _ = run(capsys, "rebuild", "t", "--tail", "20,50", "--db", db)
    assert code == 0
    assert out.startswith("rebuilt thread 't' with tail 20,50 (built with tail 40,80) from 16 ")
    assert built(capsys, db)[0]["tail"] == [20, 50]
    code, out, _ = run(capsys, "rebuild", "t", "--db", db)
    assert out.startswith("rebuilt thread 't' with the settings it was built with")


def test_ingest_continues_a_thread_with_its_own_settings_and_refuses_others_unless_told(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = halves(tmp_path)
    db, whole, wider = tmp_path / "h.sqlite", tmp_path / "whole.sqlite", tmp_path / "wider.sqlite"
    assert run(capsys, "ingest", first, "--tail", "40,80", "--db", db)[0] == 0
    _, early = built(capsys, db)

    code, out, err = run(capsys, "ingest", second, "--tail", "100,200", "--db", db)
    assert (code, out) == (2, "")
    assert err == (
        "chat-outline: thread 't' was built with tail 40,80, not tail 100,200: its new messages "
        "would be summarized otherwise than its old ones, whose lines would stay as they are. "
        "Pass --rebuild to rebuild it with tail 100,200, or leave those options out to keep its "
        "own; nothing was written\n"
    )
    assert built(capsys, db)[1] == early

    # Left out, the options are the thread's own: as if the chat had come in one file.
    assert run(capsys, "ingest", second, "--db", db)[0] == 0
    assert run(capsys, "ingest", EXAMPLE, "--tail", "40,80", "--db", whole)[0] == 0
    assert built(capsys, db) == built(capsys, whole)

    # Told to, it rebuilds the thread with the settings given.
    code, _, err = run(capsys, "ingest", second, "--tail", "100,200", "--rebuild", "--db", db)
    assert code == 0
    assert err.startswith(
        "chat-outline: rebuilt thread 't' with tail 100,200 (it was built with tail 40,80): "
    )
    assert run(capsys, "ingest", EXAMPLE, "--tail", "100,200", "--db", wider)[0] == 0
    assert built(capsys, db) == built(capsys, wider)


@pytest.mark.slow
def test_the_demo_again_on_its_store_keeps_its_settings_or_rebuilds_when_told(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "demo.sqlite"
    assert run(capsys, "demo", "--db", db)[0] == 0
    code, out, err = run(capsys, "demo", "--db", db, "--tail", "300,900")
    assert (code, out) == (2, "")
    assert err.startswith("chat-outline: thread 'launch' was built with tail 400,800, not ")
    code, out, err = run(capsys, "demo", "--db", db, "--tail", "300,900", "--rebuild")
    assert code == 0
    assert "ingested with a tail of 300 to 900 tokens" in out
    assert "chat-outline: rebuilt thread 'launch' with tail 300,900" in err
    code, out, _ = run(capsys, "demo", "--db", db)
    assert code == 0 and "ingested with a tail of 300 to 900 tokens" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["threads"],
        ["show", "t"],
        ["prompt", "t"],
        ["zoom", "t", "0+1"],
        ["search", "t", "launch"],
        ["export", "--out", "x.jsonl"],
        ["stats"],
    ],
)
@pytest.mark.parametrize("option", [["--tail", "1,2"], ["--summarizer", "openai:gpt-4.1"]])
def test_read_only_commands_take_no_budget_or_summarizer(
    argv: list[str], option: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as refused:
        main([*argv, *option])
    assert refused.value.code == 2
    assert f"unrecognized arguments: {option[0]}" in capsys.readouterr().err


@pytest.mark.anyio
async def test_the_plugin_records_a_threads_settings_and_a_rebuild_uses_them(
    tmp_path: Path,
) -> None:
    settings = HistorySettings(summarizer="echo", tail=(30, 60), kept=1)
    async with History(settings, store=tmp_path / "h.sqlite") as history:
        for k in range(12):
            await history.message_created(message(k, f"message number {k} " * 3))
        await history.wait()
    store = open_store(tmp_path / "h.sqlite")
    await store.open()
    try:
        (about,) = await store.about("t")
        assert about.settings == recorded(settings)
        nodes = await store.summaries("t")
        assert nodes
        done = await rebuild(store, "t")
        assert (done.model_calls, done.written) == (0, True)
        assert await store.summaries("t") == nodes
        wider = settings.with_changes(tail=(60, 120))
        await rebuild(store, "t", wider, force=True)
        assert [a.settings for a in await store.about("t")] == [recorded(wider)]
        await store.add(message(0, "a thread processed before settings were kept", thread="u"), 5)
        await store.outline("u")
        with pytest.raises(ConfigurationError, match="thread 'u' has no recorded settings"):
            await rebuild(store, "u")
    finally:
        await store.close()


def test_a_budget_sets_the_tail_the_outlines_and_the_kept_messages_in_proportion() -> None:
    settings = HistorySettings.for_budget(8_000, summarizer="echo")
    assert (settings.tail, settings.outline, settings.steps, settings.kept, settings.line) == (
        (800, 4_000),
        (2_400, 9_600),
        (600, 2_400),
        1,
        400,
    )
    # Under 5,120 tokens a cut leaves what a folded outline (3/10 in bytes, 3 to a token) leaves
    # of the 1,024 tokens a provider caches, up to a quarter of the budget.
    assert HistorySettings.for_budget(4_000, summarizer="echo").tail == (1_024 - 1_200 // 3, 2_000)
    assert HistorySettings.for_budget(2_000, summarizer="echo").tail == (500, 1_000)
    assert HistorySettings.for_budget(80_000, summarizer="echo").kept == 4
    assert HistorySettings.for_budget(10**7, summarizer="echo").kept == 4
    assert HistorySettings.for_budget(40_000, summarizer="echo").kept == 2
    changed = HistorySettings.for_budget(8_000, summarizer="echo", steps=None, kept=3, line=256)
    assert (changed.steps, changed.kept, changed.line, changed.tail) == (None, 3, 256, (800, 4_000))


@pytest.mark.parametrize("tokens", [1_999, 0, -8_000, 8_000.0, True, "8000", None])
def test_a_budget_that_is_not_a_whole_number_of_at_least_2000_tokens_is_refused(
    tokens: object,
) -> None:
    with pytest.raises(ConfigurationError, match=r"budget .* at least 2,000, got"):
        HistorySettings.for_budget(tokens, summarizer="echo")  # type: ignore[arg-type]


def test_a_budgets_settings_are_checked_like_any_others() -> None:
    with pytest.raises(ConfigurationError, match="tail"):
        HistorySettings.for_budget(8_000, summarizer="echo", tail=(5_000, 4_000))
    with pytest.raises(ConfigurationError, match="summarizer"):
        HistorySettings.for_budget(8_000, summarizer="")


@pytest.mark.parametrize(
    ("model", "cold"),
    [
        ("anthropic:claude-sonnet-4-5", 300.0),  # Anthropic's 5 minutes
        ("openai:gpt-5.6", 1_800.0),  # GPT-5.6's 30 minutes
        ("openai:gpt-4o", None),  # the profile states no retention: cold stays off
    ],
)
def test_a_budget_for_a_model_sets_cold_from_its_pydantic_ai_profile(
    model: str, cold: float | None
) -> None:
    from pydantic_ai.providers import infer_provider_class

    provider, name = model.split(":")
    profile = infer_provider_class(provider).model_profile(name)
    assert profile is not None
    held = profile.get("default_cache_retention")
    assert (None if held is None else held.total_seconds()) == cold
    settings = HistorySettings.for_budget(16_000, summarizer="echo", model=model)
    assert settings.cold == cold
    assert settings.tail == HistorySettings.for_budget(16_000, summarizer="echo").tail
    assert HistorySettings.for_budget(16_000, summarizer="echo", model=model, cold=60).cold == 60


@pytest.mark.parametrize("model", ["gpt-5.6", "nowhere:model", ""])
def test_a_budget_for_a_model_pydantic_ai_cannot_place_is_refused(model: str) -> None:
    with pytest.raises(ConfigurationError, match=f"model {model!r} from pydantic-ai"):
        HistorySettings.for_budget(16_000, summarizer="echo", model=model)


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_prompt_of_a_budgets_settings_stays_within_it(tmp_path: Path) -> None:
    """Over a long chat that cuts and folds many times, what an agent is sent is never more
    than the budget and the message that just came."""
    budget = 2_000
    settings = HistorySettings.for_budget(budget, summarizer="echo")
    peak, depth = 0, 0
    async with History(settings, store=tmp_path / "h.sqlite", pause=0.0) as history:
        for m in long_chat(400):
            await history.message_created(m)
            await history.wait()
            sent = prompt_text(await view(history, "t", agent="north"))
            peak = max(peak, tokens(sent) - tokens(render(m)))
            outline = await history.outline("t")
            assert outline is not None
            depth = max([depth, *(level for level, _, _, _ in outline.lines)])
    assert peak <= budget
    assert depth >= 3  # it folded, and folded again


@pytest.mark.slow
def test_the_budget_option_stands_for_the_settings_of_its_budget_and_others_beside_it_win(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HISTORY_TAIL", "40,80")  # an explicit budget beats the environment
    chat = tmp_path / "chat.jsonl"
    records = (
        {
            "id": m.id,
            "thread": "t",
            "author": m.author,
            "to": m.to,
            "text": m.text,
            "at": m.at.isoformat(),
        }
        for m in long_chat(120)
    )
    chat.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    spelled = ("--tail", "500,1000", "--outline", "600,2400", "--steps", "150,600", "--line", "100")
    code, out, _ = run(capsys, "simulate", chat, "--budget", "2000", "--kept", "2")
    assert code == 0 and json.loads(out)["summaries"]  # it cut
    assert (code, out) == run(capsys, "simulate", chat, *spelled, "--kept", "2")[:2]
    db = tmp_path / "h.sqlite"
    assert run(capsys, "ingest", chat, "--budget", "2000", "--tail", "30,60", "--db", db)[0] == 0
    settings, _ = built(capsys, db)
    assert (settings["tail"], settings["outline"], settings["line"]) == ([30, 60], [600, 2400], 100)
    code, _, err = run(capsys, "simulate", chat, "--budget", "1999")
    assert code == 2 and "budget must be a whole number of tokens, at least 2,000" in err
