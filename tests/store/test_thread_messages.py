"""A thread's stored messages, a page at a time: `History.messages` and `chat-outline messages`
(steps too, processed or not, in the order they were stored)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from history import InputError
from history.cli import main

from ..conftest import Opener, exchange

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "launch.jsonl"


@pytest.mark.anyio
async def test_messages_pages_through_a_thread_in_order(open_history: Opener) -> None:
    async with open_history(tail=(40, 80)) as run:
        sent = exchange([f"Point {n}" for n in range(10)])
        await run.send(*sent)
        await run.history.wait()
        first = await run.history.messages("t", limit=8)
        rest = await run.history.messages("t", after=first[-1].seq, limit=100)
        none = await run.history.messages("nobody")
        for wrong in (0, 10_001, True, "5"):
            with pytest.raises(InputError, match="limit must be a whole number"):
                await run.history.messages("t", limit=wrong)  # type: ignore[arg-type]
        with pytest.raises(InputError, match="after must be"):
            await run.history.messages("t", after="m3")  # type: ignore[arg-type]
        outline = await run.history.outline("t")
    assert [s.message for s in first + rest] == sent  # the cut ones too, whole
    assert len(first) == 8 and none == []
    assert outline is not None and outline.boundary > 0


def test_the_messages_command_pages_with_after_and_prints_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "h.sqlite")
    assert main(["ingest", str(EXAMPLE), "--tail", "40,80", "--db", db]) == 0
    capsys.readouterr()
    assert main(["messages", "t", "--limit", "5", "--db", db, "--json"]) == 0
    page = json.loads(capsys.readouterr().out)
    assert [m["seq"] for m in page["messages"]] == [0, 1, 2, 3, 4] and page["next"] == 4
    assert set(page["messages"][0]) == {
        "index",
        "seq",
        "id",
        "author",
        "to",
        "at",
        "step",
        "tokens",
        "text",
        "files",
    }
    assert main(["messages", "t", "--after", "4", "--limit", "100", "--db", db]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0].split()[0] == "5" and err == ""  # the last page: no "more"
    assert main(["messages", "t", "--limit", "5", "--db", db]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 5 and err == "chat-outline: more: --after 4\n"


def test_history_messages_needs_an_open_history(tmp_path: Path) -> None:
    from history import ClosedError, History, HistorySettings

    chat = History(HistorySettings(summarizer="echo"), store=tmp_path / "h.sqlite")
    with pytest.raises(ClosedError):
        anyio.run(chat.messages, "t")
