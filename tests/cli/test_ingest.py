"""`chat-outline ingest`: every format read as a user's file would be, checked before writing."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic_ai import messages as ai

from history.cli import main
from history.contract import format_at
from history.ingest import detect
from history.store import open_store

from ..conftest import run

T0 = 1_767_261_600  # 2026-01-01T10:00:00Z
Row = tuple[str, str, str, str, str, bool, tuple[str, ...]]


def stored(db: Path) -> dict[str, list[Row]]:
    """Every stored message by thread: (id, author, to, text, at, step, file names)."""

    async def read() -> dict[str, list[Row]]:
        store = open_store(db)
        await store.open()
        try:
            found: dict[str, list[Row]] = {}
            for thread in await store.threads():
                found[thread] = [
                    (
                        m.id,
                        m.author,
                        m.to,
                        m.text,
                        format_at(m.at),
                        m.step,
                        tuple(f.name for f in m.files),
                    )
                    for m in (s.message for s in await store.messages(thread, 0, 10**9))
                ]
            return found
        finally:
            await store.close()

    return anyio.run(read)


def calls(made: list[tuple[str, str, Any]], text: str = "") -> str:
    """A step calling tools, as the pydantic-ai hook writes it."""
    value: dict[str, Any] = {"tool_calls": [{"id": i, "name": n, "args": a} for i, n, a in made]}
    return json.dumps({**value, "text": text} if text else value, ensure_ascii=False)


def returns(made: list[tuple[str, str, Any]]) -> str:
    """A step returning tools' results, as the pydantic-ai hook writes it."""
    value = [{"id": i, "name": n, "content": c, "outcome": "success"} for i, n, c in made]
    return json.dumps({"tool_returns": value}, ensure_ascii=False)


def write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def line(n: int, text: str, *, thread: str = "t", **extra: Any) -> str:
    at = f"2026-11-01T10:{n:02d}:00+01:00"
    value = {
        "id": f"m{n}",
        "thread": thread,
        "author": "Ana",
        "to": "north",
        "text": text,
        "at": at,
    }
    return json.dumps({**value, **extra})


def test_a_jsonl_file_is_ingested_and_a_second_run_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    source = tmp_path / "chat.jsonl"
    source.write_text("\n".join(line(n, f"hello {n}") for n in range(3)) + "\n")
    code, out, err = run(capsys, "ingest", source, "--db", db)
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == f"{source} (jsonl): 3 messages, 3 new, 0 already stored"
    before = stored(db)
    assert [m[0] for m in before["t"]] == ["m0", "m1", "m2"]
    code, out, _ = run(capsys, "ingest", source, "--db", db)
    assert code == 0
    assert out.splitlines()[0] == f"{source} (jsonl): 3 messages, 0 new, 3 already stored"
    assert stored(db) == before


def test_every_bad_line_is_reported_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    source = tmp_path / "chat.jsonl"
    archived = json.dumps({"event": "thread.archived", "thread": "t"})
    naive = line(2, "no offset", at="2026-11-01T10:00:00")
    lines = [line(0, "fine"), "{not json", naive, archived, line(0, "edited")]
    source.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, "ingest", source, "--db", db)
    assert code == 1 and out == ""
    reported = err.splitlines()
    assert [r.split(": ")[0] for r in reported[:-1]] == [f"{source}:{n}" for n in (2, 3, 4, 5)]
    assert "at must be ISO 8601 with an offset" in reported[1]
    assert reported[3].endswith("id 'm0' is used at 1 with other content")
    assert reported[-1].startswith("chat-outline: 4 bad record(s): nothing was written")
    assert not db.exists()


def test_skip_bad_ingests_the_rest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "h.sqlite"
    source = tmp_path / "chat.jsonl"
    source.write_text("\n".join([line(0, "one"), "[1]", line(2, "three")]) + "\n")
    code, _, err = run(capsys, "ingest", source, "--db", db, "--skip-bad")
    assert code == 0
    assert err.splitlines() == [
        f"{source}:2: not a JSON object: '[1]'",
        "chat-outline: skipped 1 bad record(s)",
    ]
    assert [m[0] for m in stored(db)["t"]] == ["m0", "m2"]


def test_a_thread_deleted_event_erases_what_came_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    source = tmp_path / "chat.jsonl"
    deleted = json.dumps({"event": "thread.deleted", "thread": "t"})
    source.write_text(
        "\n".join([line(0, "old"), deleted, line(1, "new"), line(2, "u", thread="u")])
    )
    code, out, _ = run(capsys, "ingest", source, "--db", db)
    assert code == 0
    assert out.splitlines()[0].endswith("3 messages, 3 new, 0 already stored, 1 thread erase")
    assert {t: [m[0] for m in ms] for t, ms in stored(db).items()} == {"t": ["m1"], "u": ["m2"]}
    assert run(capsys, "ingest", source, "--db", db)[0] == 0
    assert {t: [m[0] for m in ms] for t, ms in stored(db).items()} == {"t": ["m1"], "u": ["m2"]}


def test_an_id_stored_with_other_content_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    first = tmp_path / "a.jsonl"
    first.write_text(line(0, "original"))
    assert run(capsys, "ingest", first, "--db", db)[0] == 0
    second = tmp_path / "b.jsonl"
    second.write_text("\n".join([line(1, "new"), line(0, "rewritten")]))
    code, _, err = run(capsys, "ingest", second, "--db", db)
    assert code == 1
    assert err.splitlines() == [
        f"{second}:2: id 'm0' is already stored with other content (thread 't'); "
        "the stored message is kept",
        "chat-outline: 1 bad record(s): nothing was written",
    ]
    assert [m[:4] for m in stored(db)["t"]] == [("m0", "Ana", "north", "original")]


def conversation(id: str, nodes: list[dict[str, Any]], current: str) -> dict[str, Any]:
    mapping = {}
    for n, node in enumerate(nodes):
        parent = nodes[n - 1]["id"] if n else None
        mapping[node["id"]] = {
            "id": node["id"],
            "parent": node.get("parent", parent),
            "children": [],
            "message": node.get("message"),
        }
    for node in mapping.values():
        if node["parent"] in mapping:
            mapping[node["parent"]]["children"].append(node["id"])
    return {"id": id, "title": id, "create_time": T0, "mapping": mapping, "current_node": current}


def said(role: str, text: str | None, at: float | str | None, **extra: Any) -> dict[str, Any]:
    content = extra.pop("content", {"content_type": "text", "parts": [text]})
    author = {"role": role, "name": extra.pop("name", None), "metadata": {}}
    return {
        "id": "x",
        "author": author,
        "create_time": at,
        "content": content,
        "status": "finished_successfully",
        "metadata": extra.pop("metadata", {}),
        "recipient": extra.pop("recipient", "all"),
    }


def test_a_chatgpt_export_is_read_along_the_branch_that_was_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hidden = {"is_visually_hidden_from_conversation": True}
    image = {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-ab"}
    attachment = {"id": "file-ab", "name": "mockup.png", "size": 2048, "mime_type": "image/png"}
    export = [
        conversation(
            "c1",
            [
                {"id": "root"},
                {"id": "sys", "message": said("system", "", None)},
                {"id": "ctx", "message": said("user", "be brief", T0, metadata=hidden)},
                {"id": "u1", "message": said("user", "What does Solo cost?", T0 + 60)},
                {"id": "alt", "message": said("assistant", "An abandoned answer", T0 + 90)},
                {
                    "id": "a1",
                    "parent": "u1",
                    "message": said(
                        "assistant",
                        None,
                        T0 + 120,
                        recipient="python",
                        content={
                            "content_type": "code",
                            "language": "python",
                            "text": "price('solo')",
                        },
                    ),
                },
                {
                    "id": "t1",
                    "message": said(
                        "tool",
                        None,
                        T0 + 130,
                        name="python",
                        content={"content_type": "execution_output", "text": "12"},
                    ),
                },
                {"id": "a2", "message": said("assistant", "Solo is $12 a month.", None)},
                {
                    "id": "u2",
                    "message": said(
                        "user",
                        None,
                        T0 + 300,
                        metadata={"attachments": [attachment]},
                        content={"content_type": "multimodal_text", "parts": [image, "The mockup"]},
                    ),
                },
                {
                    "id": "a3",
                    "message": said(
                        "assistant",
                        None,
                        T0 + 310,
                        content={
                            "content_type": "thoughts",
                            "thoughts": [{"summary": "Looking", "content": "It has a chart."}],
                        },
                    ),
                },
                {"id": "a4", "message": said("assistant", "The mockup looks right.", T0 + 320)},
                {"id": "empty", "message": said("assistant", "", T0 + 330)},
            ],
            current="empty",
        ),
        conversation("c2", [{"id": "q", "message": said("user", "Hi", T0)}], current="q"),
    ]
    db = tmp_path / "h.sqlite"
    code, out, err = run(
        capsys, "ingest", write(tmp_path / "conversations.json", export), "--db", db
    )
    assert (code, err) == (0, "")
    assert out.splitlines()[0].endswith("(chatgpt): 7 messages, 7 new, 0 already stored")

    def at(seconds: int) -> str:
        return format_at(datetime.fromtimestamp(T0 + seconds, UTC))

    assert stored(db) == {
        "c1": [
            ("c1:u1", "user", "", "What does Solo cost?", at(60), False, ()),
            (
                "c1:a1",
                "assistant",
                "",
                calls([("a1", "python", {"code": "price('solo')"})]),
                at(120),
                True,
                (),
            ),
            ("c1:t1", "assistant", "", returns([("a1", "python", "12")]), at(130), True, ()),
            ("c1:a2", "assistant", "", "Solo is $12 a month.", at(130), False, ()),
            ("c1:u2", "user", "", "The mockup", at(300), False, ("mockup.png",)),
            ("c1:a4", "assistant", "", "The mockup looks right.", at(320), False, ()),
        ],
        "c2": [("c2:q", "user", "", "Hi", at(0), False, ())],
    }
    before = stored(db)
    code, out, err = run(capsys, "ingest", tmp_path / "conversations.json", "--db", db)
    assert (code, err) == (0, "")
    assert out.splitlines()[0].endswith("(chatgpt): 7 messages, 0 new, 7 already stored")
    assert stored(db) == before


def test_a_broken_chatgpt_export_names_each_bad_record_by_its_json_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ok = {"id": "n1", "message": said("user", "fine", T0)}
    export = [
        conversation("c1", [ok], current="nowhere"),
        conversation("c2", [ok, {"id": "n2", "parent": "ghost"}], current="n2"),
        conversation("c3", [ok, {"id": "n2", "message": said("user", "x", "noon")}], current="n2"),
        conversation("c4", [{"id": "n0"}, {"id": "n1", "message": {"author": "user"}}], "n1"),
        "not a conversation",
    ]
    source = write(tmp_path / "conversations.json", export)
    code, out, err = run(capsys, "ingest", source, "--db", tmp_path / "h.sqlite")
    assert (code, out) == (1, "")
    assert err.splitlines()[:-1] == [
        f"{source}:$[0].current_node: 'nowhere' is not a node of the mapping",
        f"{source}:$[1].mapping.n2.parent: 'ghost' is not a node of the mapping",
        f"{source}:$[2].mapping.n2.message: create_time must be epoch seconds, got 'noon'",
        f"{source}:$[3].mapping.n1.message: author must be an object with a role, got 'user'",
        f"{source}:$[4]: a conversation must be an object, got 'not a conversation'",
    ]


def test_a_zipped_export_is_read_as_downloaded_and_a_missing_current_node_means_the_newest_leaf(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = conversation("c1", [{"id": "q", "message": said("user", "Hi", T0)}], current="q")
    two = conversation(
        "c2",
        [
            {"id": "q", "message": said("user", "Price?", T0)},
            {"id": "old", "message": said("assistant", "$10", T0 + 60)},
            {"id": "new", "parent": "q", "message": said("assistant", "$12", T0 + 90)},
        ],
        current="new",
    )
    del two["current_node"]
    archive = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("user.json", "{}")
        zipped.writestr("conversations-000.json", json.dumps([one]))
        zipped.writestr("conversations-001.json", json.dumps([two, {"mapping": 3}]))
    db = tmp_path / "h.sqlite"
    code, out, err = run(capsys, "ingest", archive, "--db", db, "--skip-bad")
    assert code == 0
    assert err.splitlines()[0] == (
        f"{archive}:conversations-001.json:$[1]: a conversation needs a string id, got None"
    )
    assert out.splitlines()[0] == f"{archive} (chatgpt): 3 messages, 3 new, 0 already stored"
    assert {t: [m[3] for m in ms] for t, ms in stored(db).items()} == {
        "c1": ["Hi"],
        "c2": ["Price?", "$12"],
    }
    (tmp_path / "other.zip").write_bytes(zip_of({"notes.txt": "hi"}))
    code, _, err = run(capsys, "ingest", tmp_path / "other.zip", "--db", db)
    assert code == 2 and "holds no conversations.json" in err


def test_a_newer_export_on_another_branch_is_ingested_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nodes = [
        {"id": "q", "message": said("user", "Price?", T0)},
        {"id": "old", "message": said("assistant", "$10", T0 + 60)},
        {"id": "new", "parent": "q", "message": said("assistant", "$12", T0 + 90)},
    ]
    db = tmp_path / "h.sqlite"
    before = write(tmp_path / "before.json", [conversation("c", nodes, current="old")])
    assert run(capsys, "ingest", before, "--db", db)[0] == 0
    after = write(tmp_path / "after.json", [conversation("c", nodes, current="new")])
    code, out, err = run(capsys, "ingest", after, "--db", db)
    assert code == 0 and "2 messages, 1 new, 1 already stored" in out
    assert err == (
        "chat-outline: thread 'c' holds 1 stored message(s) this file no longer has (edited or "
        f"regenerated since?); to follow the file's branch: chat-outline erase c --db {db}, "
        "then ingest it again\n"
    )


def zip_of(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        for name, text in files.items():
            zipped.writestr(name, text)
    return buffer.getvalue()


def pydantic_history() -> list[ai.ModelMessage]:
    t = datetime(2026, 1, 1, 10, tzinfo=UTC)
    return [
        ai.ModelRequest(
            parts=[
                ai.SystemPromptPart("be brief", timestamp=t),
                ai.UserPromptPart("What does Solo cost?", timestamp=t),
            ]
        ),
        ai.ModelResponse(
            parts=[
                ai.ThinkingPart("look it up"),
                ai.TextPart("Checking."),
                ai.ToolCallPart("price", {"plan": "solo"}, tool_call_id="c1"),
            ],
            timestamp=t + timedelta(minutes=1),
        ),
        ai.ModelRequest(
            parts=[
                ai.ToolReturnPart(
                    "price", "12 USD", tool_call_id="c1", timestamp=t + timedelta(minutes=2)
                )
            ]
        ),
        ai.ModelResponse(
            parts=[ai.TextPart("Solo is $12 a month.")], timestamp=t + timedelta(minutes=3)
        ),
    ]


def test_a_pydantic_ai_history_is_read_as_the_hook_records_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "run.json"
    source.write_bytes(ai.ModelMessagesTypeAdapter.dump_json(pydantic_history()))
    db = tmp_path / "h.sqlite"
    code, out, _ = run(capsys, "ingest", source, "--db", db)
    assert code == 0 and "(pydantic-ai): 4 messages, 4 new" in out
    assert stored(db) == {
        "run": [
            ("run:0.0", "user", "", "What does Solo cost?", "2026-01-01T10:00:00+00:00", False, ()),
            (
                "run:1.0",
                "assistant",
                "",
                calls([("c1", "price", {"plan": "solo"})], "Checking."),
                "2026-01-01T10:01:00+00:00",
                True,
                (),
            ),
            (
                "run:2.0",
                "assistant",
                "",
                returns([("c1", "price", "12 USD")]),
                "2026-01-01T10:02:00+00:00",
                True,
                (),
            ),
            (
                "run:3.0",
                "assistant",
                "",
                "Solo is $12 a month.",
                "2026-01-01T10:03:00+00:00",
                False,
                (),
            ),
        ]
    }


def test_a_pydantic_ai_history_without_times_is_dated_the_same_way_every_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = json.loads(ai.ModelMessagesTypeAdapter.dump_json(pydantic_history()))
    for message in raw:
        message.pop("timestamp", None)
        for part in message["parts"]:
            part.pop("timestamp", None)
    source = write(tmp_path / "run.json", raw)
    db = tmp_path / "h.sqlite"
    assert run(capsys, "ingest", source, "--db", db, "--thread", "chat-7")[0] == 0
    times = [m[4] for m in stored(db)["chat-7"]]
    assert times == [f"2000-01-01T00:00:0{s}+00:00" for s in (0, 1, 2, 3)]
    assert run(capsys, "ingest", source, "--db", db, "--thread", "chat-7")[1].count("0 new") == 1


def test_a_bad_pydantic_ai_message_is_reported_at_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = json.loads(ai.ModelMessagesTypeAdapter.dump_json(pydantic_history()))
    raw[0]["parts"][1]["content"] = 5
    raw[3]["parts"][0]["part_kind"] = "poem"
    source = write(tmp_path / "run.json", raw)
    code, _, err = run(capsys, "ingest", source, "--db", tmp_path / "h.sqlite")
    assert code == 1
    problems = err.splitlines()[:-1]
    assert [p.split(": ")[0] for p in problems] == [
        f"{source}:$[0].parts[1].content",
        f"{source}:$[3].parts[0]",
    ]
    assert "'poem'" in problems[1]


def test_a_chat_list_takes_its_thread_from_the_file_name_and_synthesizes_times(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "name": "Ana", "content": "What does Solo cost?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "price", "arguments": '{"plan": "solo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "12 USD"},
        {"role": "assistant", "content": [{"type": "text", "text": "Solo is $12."}]},
    ]
    db = tmp_path / "h.sqlite"
    code, out, _ = run(capsys, "ingest", write(tmp_path / "support-42.json", chat), "--db", db)
    assert code == 0 and "(chat): 4 messages, 4 new" in out
    assert stored(db) == {
        "support-42": [
            (
                "support-42:1",
                "Ana",
                "",
                "What does Solo cost?",
                "2000-01-01T00:00:01+00:00",
                False,
                (),
            ),
            (
                "support-42:2",
                "assistant",
                "",
                calls([("c1", "price", '{"plan": "solo"}')]),
                "2000-01-01T00:00:02+00:00",
                True,
                (),
            ),
            (
                "support-42:3",
                "assistant",
                "",
                returns([("c1", "price", "12 USD")]),
                "2000-01-01T00:00:03+00:00",
                True,
                (),
            ),
            (
                "support-42:4",
                "assistant",
                "",
                "Solo is $12.",
                "2000-01-01T00:00:04+00:00",
                False,
                (),
            ),
        ]
    }
    longer = tmp_path / "longer.json"
    write(longer, [*chat, {"role": "user", "name": "Ana", "content": "Thanks"}])
    code, out, _ = run(capsys, "ingest", longer, "--thread", "support-42", "--db", db)
    assert code == 0 and "5 messages, 1 new, 4 already stored" in out


def test_a_bad_chat_message_is_reported_at_its_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = [{"role": "user", "content": "hi"}, {"content": "who?"}, {"role": "user", "content": 7}]
    source = write(tmp_path / "chat.json", chat)
    code, _, err = run(capsys, "ingest", source, "--format", "chat", "--db", tmp_path / "h.sqlite")
    assert code == 1
    assert err.splitlines()[:-1] == [
        f"{source}:$[1]: role must be a non-empty string, got None",
        f"{source}:$[2]: content must be text or a list, got 7",
    ]


@pytest.mark.parametrize(
    ("content", "argv", "message"),
    [
        (b"hello, world", [], "cannot tell the format of"),
        (b'{"a": 1}', [], "cannot tell the format of"),
        (b"[]", ["--format", "jsonl", "--thread", "x"], "--thread applies to one-conversation"),
    ],
    ids=["not-json", "unknown-json", "thread-on-jsonl"],
)
def test_a_file_that_cannot_be_read_as_asked_is_a_mistake_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: bytes,
    argv: list[str],
    message: str,
) -> None:
    source = tmp_path / "data.txt"
    source.write_bytes(content)
    code, out, err = run(capsys, "ingest", source, *argv, "--db", tmp_path / "h.sqlite")
    assert (code, out) == (2, "")
    assert err.startswith("chat-outline: ") and message in err
    assert "Traceback" not in err
    assert not (tmp_path / "h.sqlite").exists()


def test_a_missing_file_or_an_unknown_format_name_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(line(0, "hi"))
    code, _, err = run(capsys, "ingest", good, tmp_path / "gone.json", "--db", tmp_path / "h.db")
    assert code == 2
    assert err == f"chat-outline: {tmp_path / 'gone.json'}: No such file or directory\n"
    assert not (tmp_path / "h.db").exists()
    with pytest.raises(SystemExit) as exit:
        main(["ingest", str(good), "--format", "csv"])
    assert exit.value.code == 2
    assert "invalid choice: 'csv'" in capsys.readouterr().err


def test_honours_history_tail_from_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "launch.jsonl"
    db = tmp_path / "h.sqlite"
    monkeypatch.setenv("HISTORY_TAIL", "40,80")
    code, out, _ = run(capsys, "ingest", example, "--db", db)
    assert code == 0
    assert out.splitlines()[1] == f"{db}: 1 thread; 16 messages processed, 0 lines asked of 'echo'"

    async def levels() -> list[int]:
        store = open_store(db)
        await store.open()
        try:
            return [node.level for node in await store.summaries("t")]
        finally:
            await store.close()

    # The chapter's "Run it" with the cut gap: 11 of 16 messages left (SPEC section 10).
    assert anyio.run(levels) == [0] * 11 + [1] * 5 + [2] * 2 + [3]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (line(0, "hi").encode() + b"\n" + line(1, "ho").encode(), "jsonl"),
        (line(0, "hi").encode(), "jsonl"),
        (b'{"event": "thread.deleted", "thread": "t"}\n{broken', "jsonl"),
        (json.dumps([conversation("c", [], current="x")]).encode(), "chatgpt"),
        (json.dumps(conversation("c", [], current="x")).encode(), "chatgpt"),
        (ai.ModelMessagesTypeAdapter.dump_json(pydantic_history()), "pydantic-ai"),
        (b'[{"role": "user", "content": "hi"}]', "chat"),
        (b'{"messages": [{"role": "user", "content": "hi"}]}', "chat"),
        (b"[]", "chat"),
    ],
    ids=[
        "jsonl",
        "one-line",
        "broken-jsonl",
        "chatgpt",
        "one-conversation",
        "pydantic-ai",
        "chat",
        "chat-object",
        "empty",
    ],
)
def test_the_format_is_told_from_the_content(content: bytes, expected: str) -> None:
    assert detect(content, Path("export.json")) == expected


@pytest.mark.slow
def test_reading_every_format_loads_neither_the_plugin_nor_the_trace(tmp_path: Path) -> None:
    """Reading files is a layer of its own, above the core types: a tool that only reads a
    file never starts the plugin's machinery, and the trace can import the reader."""
    files = {
        "log.jsonl": line(0, "hi").encode(),
        "export.json": (Path(__file__).parents[1] / "data" / "chatgpt-export.json").read_bytes(),
        "run.json": ai.ModelMessagesTypeAdapter.dump_json(pydantic_history()),
        "chat.json": b'[{"role": "user", "content": "hi"}]',
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    script = (
        "import sys\nfrom pathlib import Path\nfrom history.ingest import read\n"
        "print(*(f'{read(Path(n)).format}:{len(read(Path(n)).records)}' for n in sys.argv[1:]))\n"
        "print(*sorted(m for m in ('history.plugin', 'history._trace') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, *files],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"PYTHONPATH": str(Path(__file__).parents[2]), "PATH": ""},
    )
    formats, loaded = result.stdout.split("\n")[:2]
    assert [f.split(":")[0] for f in formats.split()] == ["jsonl", "chatgpt", "pydantic-ai", "chat"]
    assert all(int(f.split(":")[1]) > 0 for f in formats.split())
    assert loaded == ""
