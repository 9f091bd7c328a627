"""Imports keep what a user cares about: links, files, tool calls; every bad record is named."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic_ai import messages as ai

from history import History, HistorySettings, view
from history.contract import File, Message
from history.store import open_store

from .conftest import run

DATA = Path(__file__).parent / "data"
EXPORT = DATA / "chatgpt-export.json"
BROKEN = DATA / "chatgpt-export-broken.json"
CAFE = "67a1c2d3-4e5f-8a9b-0c1d-2e3f4a5b6c7d"
MENU = "67a1c2d3-0000-8a9b-0c1d-2e3f4a5b6c7e"


def messages(db: Path, thread: str) -> list[Message]:
    async def read() -> list[Message]:
        store = open_store(db)
        await store.open()
        try:
            return [s.message for s in await store.messages(thread, 0, 10**9)]
        finally:
            await store.close()

    return anyio.run(read)


def node(name: str) -> str:
    """The node id the fixture gives a named message (uuid5 of its name)."""
    import uuid

    return str(uuid.uuid5(uuid.UUID("6f1c2a4e-9b0d-4c1e-8a53-2f7d9e0b1c3a"), name))


def step(message: Message) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(message.text)
    return value


def test_a_real_chatgpt_export_keeps_its_links_files_and_tool_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    code, out, err = run(capsys, "ingest", EXPORT, "--db", db)
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == f"{EXPORT} (chatgpt): 16 messages, 16 new, 0 already stored"
    shown = {m.id.split(":", 1)[1]: m for m in messages(db, CAFE)}
    # The branches that were not shown (an edited question, a regenerated answer) are left out.
    assert node("q1-old") not in shown and node("a1-first") not in shown
    # An answer's citation marks become the links they stand for.
    assert shown[node("a1")].text == (
        "On Sundays most cafés in Lyon open at 8:00 and close around 14:00 "
        "[Lyon cafés open on Sunday](https://www.lyon-france.com/cafes-sunday)."
    )
    (_, answer) = messages(db, MENU)
    assert answer.text == (
        "Yes, it is close to the average in Lyon ([example.fr](https://www.example.fr/prix-cafe-lyon))."
    )
    # The browser's and python's calls keep their text as it was written.
    browser = step(shown[node("b1")])["tool_calls"][0]
    assert browser["name"] == "browser"
    assert browser["args"] == {"code": 'search("Lyon café Sunday opening hours")'}
    python = step(shown[node("p1")])["tool_calls"][0]
    assert python["args"]["code"].startswith("import matplotlib.pyplot as plt\nsales = [120")
    dalle = step(shown[node("d1")])["tool_calls"][0]
    assert json.loads(dalle["args"])["size"] == "1024x1024"  # JSON arguments stay as given
    # A quoted page keeps its link.
    quote = step(shown[node("b2r")])["tool_returns"][0]["content"]
    assert "https://www.lyon-france.com/cafes-sunday" in quote
    # Files keep their pointers: the upload, the image DALL-E made, the chart python drew.
    assert shown[node("q2")].files == (
        File(
            name="shopfront.jpg",
            mime="image/jpeg",
            size=184233,
            url="file-service://file-7Hq2Xw9LmR4tYv3Nk8Jc5D",
        ),
    )
    assert shown[node("d1r")].files == (
        File(
            name="file-Qm3Zt8Kp1Vw6Rx9Ys2Lb4N",
            mime="image/*",
            size=392871,
            url="file-service://file-Qm3Zt8Kp1Vw6Rx9Ys2Lb4N",
        ),
    )
    assert step(shown[node("d1r")])["tool_returns"][0]["id"] == node("d1")
    assert [f.url for f in shown[node("p1r")].files] == [
        "file-service://file-Bn5Tc2Wq7Xz3Lk9Hm4Pd8R"
    ]
    # DALL-E's hidden note to the model is not part of the conversation.
    assert node("d1x") not in shown


def test_an_agent_is_sent_chatgpt_tool_calls_with_arguments_it_can_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    assert run(capsys, "ingest", EXPORT, "--db", db)[0] == 0

    async def sent() -> list[ai.ModelMessage]:
        async with History(HistorySettings(summarizer="echo"), store=db) as history:
            return await view(history, CAFE, agent="assistant")

    calls = [
        part
        for message in anyio.run(sent)
        for part in message.parts
        if isinstance(part, ai.ToolCallPart)
    ]
    assert [c.tool_name for c in calls] == ["browser", "browser", "dalle.text2im", "python"]
    args = [c.args_as_dict(raise_if_invalid=True) for c in calls]  # no {"INVALID_JSON": ...}
    assert args[0] == {"code": 'search("Lyon café Sunday opening hours")'}
    assert args[2]["prompt"].startswith("A round café logo")


def test_each_bad_record_of_a_broken_export_is_named_by_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    code, out, err = run(capsys, "ingest", BROKEN, "--db", db)
    at = f"{BROKEN}:$[0].mapping"
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f'{at}["{node("q2")}"].message.content.parts[1]: not a string, nor a part with text or '
        "an asset pointer: 42",
        f'{at}["{node("a2")}"].message.content: a message with no content',
        f"{at}[\"{node('q3')}\"].message.author.role: unknown role 'critic' (known: user, "
        "assistant, tool, system, developer)",
        f"{at}[\"{node('p1r')}\"].message.author.name: a result of 'python', which no earlier "
        "message of the shown branch calls",
        f"{BROKEN}:$[1].title: title must be a string, got ['Menu', 'prices']",
        "chat-outline: 5 bad record(s): nothing was written (fix them, or pass --skip-bad to "
        "ingest the rest)",
    ]
    assert not db.exists()
    code, out, _ = run(capsys, "ingest", BROKEN, "--db", db, "--skip-bad")
    assert code == 0
    assert out.splitlines()[0] == f"{BROKEN} (chatgpt): 12 messages, 12 new, 0 already stored"


def test_a_chat_list_keeps_links_and_reports_what_it_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pixel = base64.b64encode(b"\x89PNG" + bytes(96)).decode()
    chat = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Compare these"},
                {
                    "type": "image_url",
                    "image_url": {"url": "https://example.org/shots/front.png?v=2"},
                },
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{pixel}"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "run", "arguments": "print(1)"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "1"},
        {"role": "tool", "tool_call_id": "c9", "content": "lost"},
        {"role": "robot", "content": "beep"},
        {"role": "user"},
        {"role": "user", "content": ["fine", 7]},
    ]
    source = tmp_path / "shots.json"
    source.write_text(json.dumps(chat), encoding="utf-8")
    db = tmp_path / "h.sqlite"
    code, _, err = run(capsys, "ingest", source, "--db", db)
    assert code == 1
    assert err.splitlines()[:-1] == [
        f"{source}:$[3].tool_call_id: a tool result for 'c9', which no earlier message calls",
        f"{source}:$[4].role: unknown role 'robot' (known: user, assistant, tool, function, "
        "system, developer)",
        f"{source}:$[5].content: a message with no content and no tool calls",
        f"{source}:$[6].content[1]: must be a text or typed part, got 7",
    ]
    assert run(capsys, "ingest", source, "--db", db, "--skip-bad")[0] == 0
    first = messages(db, "shots")[0]
    assert first.files == (
        File(name="front.png", mime="image/png", url="https://example.org/shots/front.png?v=2"),
        File(name="image_url-2", mime="image/png", size=100),
    )


def test_a_pydantic_ai_history_keeps_its_urls_and_refuses_a_result_for_no_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history: list[ai.ModelMessage] = [
        ai.ModelRequest(
            parts=[
                ai.UserPromptPart(
                    content=[
                        "What is in this picture?",
                        ai.ImageUrl(url="https://example.org/cat.jpg"),
                        ai.DocumentUrl(url="https://example.org/menu.pdf", identifier="menu"),
                    ]
                )
            ]
        ),
        ai.ModelRequest(
            parts=[ai.ToolReturnPart(tool_name="look", content="a cat", tool_call_id="nowhere")]
        ),
    ]
    source = tmp_path / "cat.json"
    source.write_bytes(ai.ModelMessagesTypeAdapter.dump_json(history))
    db = tmp_path / "h.sqlite"
    code, _, err = run(capsys, "ingest", source, "--db", db, "--skip-bad")
    assert code == 0
    assert err.splitlines()[0] == (
        f"{source}:$[1].parts[0]: a tool result for call 'nowhere', which no earlier message makes"
    )
    (prompt,) = messages(db, "cat")
    assert prompt.files == (
        File(name="cat.jpg", mime="image/jpeg", url="https://example.org/cat.jpg"),
        File(name="menu", mime="application/pdf", url="https://example.org/menu.pdf"),
    )


def test_two_files_that_would_share_a_thread_are_refused_with_a_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for folder in ("monday", "tuesday"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "chat.json").write_text(
            json.dumps([{"role": "user", "content": f"hello from {folder}"}]), encoding="utf-8"
        )
    db = tmp_path / "h.sqlite"
    first, second = tmp_path / "monday" / "chat.json", tmp_path / "tuesday" / "chat.json"
    code, out, err = run(capsys, "ingest", first, second, "--db", db)
    assert (code, out) == (2, "")
    assert err == (
        f"chat-outline: {str(first)!r} and {str(second)!r} would both be thread 'chat': "
        "ingest them one at a time, each with --thread NAME\n"
    )
    assert not db.exists()
    assert run(capsys, "ingest", first, second, "--thread", "both", "--db", db)[0] == 2
    assert run(capsys, "ingest", first, "--thread", "monday", "--db", db)[0] == 0
    assert run(capsys, "ingest", second, "--thread", "tuesday", "--db", db)[0] == 0
    assert [m.text for m in messages(db, "tuesday")] == ["hello from tuesday"]


def test_a_file_keeps_its_url_through_jsonl_export_and_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [
        {
            "name": "plan.pdf",
            "mime": "application/pdf",
            "size": 4000,
            "url": "https://example.org/plan.pdf",
        },
        {"name": "notes.txt", "mime": "text/plain", "size": 12},
    ]
    line = {
        "id": "m1",
        "thread": "t",
        "author": "Ana",
        "text": "the plan",
        "at": "2026-11-01T10:00:00+00:00",
        "files": files,
    }
    source = tmp_path / "log.jsonl"
    source.write_text(json.dumps(line) + "\n", encoding="utf-8")
    db, other = tmp_path / "h.sqlite", tmp_path / "other.sqlite"
    assert run(capsys, "ingest", source, "--db", db)[0] == 0
    exported = tmp_path / "t.jsonl"
    assert run(capsys, "export", "t", "--out", exported, "--db", db)[0] == 0
    written = [json.loads(x) for x in exported.read_text(encoding="utf-8").splitlines()]
    (message,) = [x for x in written if x["kind"] == "message"]
    assert message["files"] == [{**files[0]}, {**files[1]}]  # no url key where there is none
    assert run(capsys, "load", exported, "--db", other)[0] == 0
    assert messages(other, "t")[0].files == (
        File(
            name="plan.pdf", mime="application/pdf", size=4000, url="https://example.org/plan.pdf"
        ),
        File(name="notes.txt", mime="text/plain", size=12),
    )
