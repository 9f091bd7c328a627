"""Fault probes from outside the project: another process erasing a thread the app runs, hostile
`--out` paths and `--db` paths, destructive commands given a vague thread, a model answering
megabytes, ids past the limit, arguments of the wrong type, secrets in DEBUG logs, byte-order
marks and a crafted export. Each test fails on the code before its fix."""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import sqlite3
import zipfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

import anyio
import pytest

from history import (
    Ask,
    Echo,
    History,
    HistorySettings,
    InputError,
    Message,
    NotFoundError,
    Reply,
    Task,
    export,
    rebuild,
    search,
    view,
    zoom,
)
from history._checks import MAX_NAME
from history.carry import read_records
from history.cli import main
from history.ingest import read
from history.lines import normalize, prefix, size
from history.pins import ANSWER_LINES, as_recorded, replayed

from ..conftest import message
from .test_faults_input import EXAMPLE, ROOT, cli

DATA = ROOT / "tests" / "data"

pytestmark = pytest.mark.anyio


@pytest.mark.slow
async def test_an_erase_from_another_process_leaves_the_apps_thread_running(database: str) -> None:
    settings = HistorySettings(summarizer="echo", tail=(2, 4), kept=1)
    async with History(settings, store=database, pause=0.0) as history:
        for k in range(12):
            await history.message_created(message(k, f"old word {k}", thread="Y"))
        await history.wait()
        before = await history.outline("Y")
        assert before is not None and before.position == 11
        erased = cli("--db", database, "erase", "Y")
        assert erased.returncode == 0, erased.stderr
        for k in range(8):
            await history.message_created(message(100 + k, f"new word {k}", thread="Y"))
        await history.wait()
        after = await history.outline("Y")
    assert after is not None and after.epoch != before.epoch
    assert after.position == 7
    assert [m.id for m in after.tail][-1] == "Y-107" and len(after.tail) <= 4


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example chat ingested once for the module: thread `t`, titled by nobody."""
    path = tmp_path_factory.mktemp("probes") / "h.sqlite"
    assert main(["ingest", str(EXAMPLE), "--tail", "40,80", "--db", str(path)]) == 0
    return path


@pytest.fixture
def example(ingested: Path, tmp_path: Path) -> Path:
    """Each test's own copy of the ingested store."""
    path = tmp_path / "h.sqlite"
    shutil.copyfile(ingested, path)
    return path


def refusal(capsys: pytest.CaptureFixture[str], argv: list[str], *words: str) -> str:
    """Run the command in this process: it exits 2 with one line on stderr holding `words`."""
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and all(w in err for w in words), err
    return err


def test_export_refuses_a_symbolic_link_and_leaves_it_and_its_file_alone(
    example: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    link = tmp_path / "out.jsonl"
    link.symlink_to(victim)
    refusal(capsys, ["export", "--out", str(link), "--db", str(example)], "symbolic link")
    assert link.is_symlink() and victim.read_text() == "precious\n"


@pytest.mark.parametrize("kind", ["fifo", "directory", "/dev/null", "/dev/full"])
def test_export_refuses_what_is_not_a_regular_file_and_leaves_it(
    example: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    if kind.startswith("/dev/"):
        target = Path(kind)
    else:
        target = tmp_path / "out"
        os.mkfifo(target) if kind == "fifo" else target.mkdir()
    before = os.lstat(target)
    refusal(capsys, ["export", "--out", str(target), "--db", str(example)], "not a regular file")
    after = os.lstat(target)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (
        before.st_mode,
        before.st_ino,
        before.st_rdev,
    )
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_export_to_standard_output_with_a_dash(
    example: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", "--out", "-", "--db", str(example)]) == 0
    assert capsys.readouterr().out.startswith('{"kind":"chat-outline"')


def test_a_failed_export_leaves_the_old_file_as_it_was(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from history import carry

    out = tmp_path / "out.jsonl"
    out.write_text("the export of yesterday\n")

    async def broken(store: object, to: TextIO, thread: str | None = None) -> object:
        to.write('{"kind": "chat-outline"}\n')
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(carry, "export", broken)
    assert main(["export", "--out", str(out), "--db", str(example)]) == 2
    assert out.read_text() == "the export of yesterday\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def titled(path: Path, titles: dict[str, str]) -> None:
    """A store at `path` with a thread of one message for each id, titled as given."""
    anyio.run(_titled, path, titles)


async def _titled(path: Path, titles: dict[str, str]) -> None:
    async with History(HistorySettings(summarizer="echo"), store=path) as history:
        for thread, title in titles.items():
            await history.message_created(message(0, "hello", thread=thread))
            await history.store.describe(thread, title=title)
        await history.wait()


def threads_of(path: Path) -> list[str]:
    return anyio.run(_threads_of, path)


async def _threads_of(path: Path) -> list[str]:
    from history.store import open_store

    store = open_store(str(path), create=False)
    await store.open()
    try:
        return sorted(await store.threads())
    finally:
        await store.close()


def test_erase_takes_a_thread_by_its_exact_id_or_title_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    titled(db, {"c1": "Launch plan", "c2": "Budget", "c3": "Budget"})
    erase = ["erase", "--db", str(db)]
    refusal(capsys, [*erase, ""], "name a thread", "''")
    refusal(capsys, [*erase, " "], "name a thread")
    refusal(capsys, [*erase, "Launch"], "no thread 'Launch'")
    refusal(capsys, [*erase, "launch plan"], "no thread 'launch plan'")
    refusal(capsys, [*erase, "Budget"], "2 threads", "c2 (Budget)", "c3 (Budget)")
    assert threads_of(db) == ["c1", "c2", "c3"]
    assert main([*erase, "Launch plan"]) == 0
    assert main([*erase, "c2"]) == 0
    assert threads_of(db) == ["c3"]


def test_read_commands_still_find_a_thread_by_part_of_its_title(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    titled(db, {"c1": "Launch plan"})
    assert main(["show", "launch", "--db", str(db)]) == 0
    refusal(capsys, ["show", "", "--db", str(db)], "name a thread")
    refusal(capsys, ["rebuild", "launch", "--db", str(db)], "no thread 'launch'")


BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize(
    ("name", "content", "messages"),
    [
        ("twelve.jsonl", (DATA / "twelve.jsonl").read_bytes(), 25),
        ("twelve.jsonl.txt", (DATA / "twelve.jsonl").read_bytes(), 25),
        ("conversations.json", (DATA / "chatgpt-export.json").read_bytes(), None),
        ("chat.json", b'[{"role": "user", "content": "hi"}]', 1),
    ],
    ids=["jsonl", "jsonl-told-by-content", "chatgpt", "chat"],
)
def test_a_leading_byte_order_mark_is_accepted_in_every_input_format(
    tmp_path: Path, name: str, content: bytes, messages: int | None
) -> None:
    plain, marked = tmp_path / "plain" / name, tmp_path / "marked" / name
    for path, data in ((plain, content), (marked, BOM + content)):
        path.parent.mkdir()
        path.write_bytes(data)
    expected = read(plain)
    found = read(marked)
    assert found.problems == () and found.format == expected.format
    assert [r.event for r in found.records] == [r.event for r in expected.records]
    assert messages is None or len(found.records) == messages


def test_a_zipped_export_and_a_carried_export_with_a_byte_order_mark_load(
    example: Path, tmp_path: Path
) -> None:
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("conversations.json", BOM + (DATA / "chatgpt-export.json").read_bytes())
    assert read(archive).problems == ()
    out = tmp_path / "all.jsonl"
    assert main(["export", "--out", str(out), "--db", str(example)]) == 0
    out.write_bytes(BOM + out.read_bytes())
    assert main(["load", str(out), "--db", str(tmp_path / "other.sqlite")]) == 0


SECRET = "zanzibar-7731"


class Leaky:
    """A summarizer whose first answer is an error quoting its prompt, then echoes."""

    name = "leaky"

    def __init__(self) -> None:
        self.failed = False

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        if not self.failed:
            self.failed = True
            raise RuntimeError(f"cannot summarize {prompts[-1]!r}")
        return await Echo().reply(task, prompts, answers)


async def test_no_message_text_reaches_a_log_at_any_level(
    database: str, caplog: pytest.LogCaptureFixture
) -> None:
    for name in ("", "aiosqlite", "asyncpg", "history"):
        caplog.set_level(logging.DEBUG, logger=name or None)
    settings = HistorySettings(summarizer="echo", tail=(2, 4), kept=1)
    async with History(settings, store=database, model=Leaky(), pause=0.0) as history:
        for k in range(10):
            await history.message_created(message(k, f"the code is {SECRET} number {k}. " * 20))
        await history.wait()
        assert await search(history, "t", SECRET)
        await zoom(history, "t", "0+1")
        await history.thread_deleted("t")
    assert logging.getLogger("aiosqlite").isEnabledFor(logging.DEBUG)
    assert any(r.name.startswith("history") for r in caplog.records)  # the failed ask
    logged = "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
    assert SECRET not in logged


@pytest.mark.parametrize("field", ["id", "thread", "author", "to"])
def test_a_name_past_the_limit_is_refused_naming_its_field(field: str) -> None:
    base = message(0, "hi")
    longest: dict[str, Any] = {field: "é" * (MAX_NAME // 2)}  # 1,024 bytes
    replace(base, **longest)
    with pytest.raises(InputError, match="more than the 1,024") as refused:
        replace(base, **{field: longest[field] + "x"})
    assert refused.value.field == field


@pytest.mark.slow
async def test_names_at_the_limit_are_stored_processed_and_carried_on_every_store(
    database: str, tmp_path: Path
) -> None:
    thread, agent = "t" * MAX_NAME, "a" * MAX_NAME
    settings = HistorySettings(summarizer="echo", tail=(2, 4), kept=1)
    async with History(settings, store=database, pause=0.0) as history:
        for k in range(6):
            step = k % 2 == 1
            await history.message_created(
                Message(
                    id=f"{k}" * MAX_NAME,
                    thread=thread,
                    author=agent if step else "Ana",
                    to="é" * (MAX_NAME // 2),
                    text=f"words of message {k} " * 10,
                    at=message(k, "").at,
                    step=step,
                )
            )
        await history.wait()
        outline = await history.outline(thread)
        assert outline is not None and outline.position == 5
        with (tmp_path / "out.jsonl").open("w") as out:
            await export(history.store, out)
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert len(read_records(lines)[0].messages) == 6
    for field in ("id", "thread"):
        record = json.loads(lines[2])
        assert record["kind"] == "message"
        record[field] += "x"
        with pytest.raises(InputError, match="more than the 1,024") as refused:
            read_records([lines[0], json.dumps(record)], source="long.jsonl")
        assert refused.value.field == field and "long.jsonl:2" in str(refused.value)


def test_a_load_refuses_a_message_whose_text_was_swapped_under_its_weight(
    example: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "all.jsonl"
    assert main(["export", "--out", str(out), "--db", str(example)]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    last = max((r for r in records if r["kind"] == "message"), key=lambda r: r["seq"])
    last["text"] = "a much longer text " * 50_000  # about 1 MB under the small weight it had
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    fresh = tmp_path / "fresh.sqlite"
    err = refusal(capsys, ["load", str(out), "--db", str(fresh)], f"message {last['id']!r}")
    assert f"has weight {last['weight']}, but its text and files weigh" in err
    assert not fresh.exists()


def test_a_db_path_through_a_link_and_dots_names_one_file_and_a_refused_one_is_untouched(
    example: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real" / "sub")
    foreign = tmp_path / "real" / "h.sqlite"  # where link/../h.sqlite is, through the link
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE invoice (n INTEGER)")
    db.close()
    before = foreign.read_bytes()
    given = str(tmp_path / "link" / ".." / "h.sqlite")  # read as text, it is `example`
    for argv in (["threads"], ["ingest", str(EXAMPLE)], ["show", "t"], ["erase", "t"]):
        refusal(capsys, [*argv, "--db", given], "is not a chat-outline database")
    assert foreign.read_bytes() == before
    assert sorted(p.name for p in foreign.parent.iterdir()) == ["h.sqlite", "sub"]
    with sqlite3.connect(foreign) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    db.close()


WRONG_ARGUMENTS: list[tuple[str, Callable[[History], Awaitable[object]], str]] = [
    ("search query", lambda h: search(h, "t", 123), "query"),  # type: ignore[arg-type]
    ("search thread", lambda h: search(h, b"t", "x"), "thread"),  # type: ignore[arg-type]
    ("search limit", lambda h: search(h, "t", "x", limit="3"), "limit"),  # type: ignore[arg-type]
    ("search agent", lambda h: search(h, "t", "x", agent=1), "agent"),  # type: ignore[arg-type]
    ("search history", lambda h: search(None, "t", "x"), "history"),  # type: ignore[arg-type]
    ("zoom label", lambda h: zoom(h, "t", 123), "label"),  # type: ignore[arg-type]
    ("zoom page", lambda h: zoom(h, "t", "0+1", page=True), "page"),
    ("view thread", lambda h: view(h, 7), "thread"),  # type: ignore[arg-type]
    ("view since", lambda h: view(h, "t", since="2026-01-01"), "since"),  # type: ignore[arg-type]
    ("view page", lambda h: view(h, "t", page=2.5), "page"),  # type: ignore[arg-type]
    ("outline", lambda h: h.outline(None), "thread"),  # type: ignore[arg-type]
    ("messages", lambda h: h.messages("t", after="3"), "after"),  # type: ignore[arg-type]
    ("settled", lambda h: h.settled("t", 1.5), "seq"),  # type: ignore[arg-type]
    ("usage", lambda h: h.usage(5), "thread"),  # type: ignore[arg-type]
    ("catch_up", lambda h: h.catch_up(limit=0), "limit"),
    ("thread_deleted", lambda h: h.thread_deleted(["t"]), "thread"),  # type: ignore[arg-type]
    ("export", lambda h: export(h.store, io.StringIO(), 3), "thread"),  # type: ignore[arg-type]
    ("rebuild", lambda h: rebuild(h.store, 3), "thread"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(
    ("call", "field"),
    [(c, f) for _, c, f in WRONG_ARGUMENTS],
    ids=[n for n, _, _ in WRONG_ARGUMENTS],
)
async def test_an_argument_of_the_wrong_type_is_an_input_error_naming_it(
    tmp_path: Path, call: Callable[[History], Awaitable[object]], field: str
) -> None:
    async with History(HistorySettings(summarizer="echo"), store=tmp_path / "h.sqlite") as history:
        await history.message_created(message(0, "hello"))
        with pytest.raises(InputError, match=f"^{field} must be") as refused:
            await call(history)
    assert refused.value.field == field


async def test_a_label_past_what_a_store_holds_is_not_found(database: str) -> None:
    async with History(HistorySettings(summarizer="echo"), store=database) as history:
        await history.message_created(message(0, "hello"))
        for label in ("12345678901234567890+1", "0+36893488147419103232", "s9" * 20 + "+1"):
            with pytest.raises(NotFoundError):
                await zoom(history, "t", label, agent="north")


class Huge:
    """A broken model: megabytes for every ask, but the second turn of every other node, which
    fits; each huge answer is a little shorter than the one before it, so a cut takes the last."""

    name = "huge"

    def __init__(self) -> None:
        self.calls = 0

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        self.calls += 1
        if len(prompts) == 2 and task.index % 2:
            return Reply(text=f"a short line for node {task.level} {task.index}")
        word = f"n{task.level}.{task.index}.t{len(prompts)} "
        return Reply(text=word * ((1_000_000 - 1_000 * len(prompts)) // len(word)))


@pytest.mark.slow
async def test_a_model_answering_megabytes_is_recorded_bounded_and_replays_exactly(
    database: str,
) -> None:
    settings = HistorySettings(summarizer="echo", line=64, tail=(40, 80), kept=1, tries=3)
    model = Huge()
    async with History(settings, store=database, model=model, pause=0.0) as history:
        for k in range(12):
            await history.message_created(message(k, f"message {k} says something " * 4))
        await history.wait()
        store = history.store
        calls = await store.calls("t")
        lines = {(n.level, n.index): (n.text, n.fallback) for n in await store.summaries("t")}
        answered = sum(len(a) for c in calls for a in c.answers)
        assert len(calls) >= 8 and model.calls >= 2 * len(calls)
        assert {c.outcome for c in calls} == {"fit", "cut"}
        assert all(size(a) <= ANSWER_LINES * 64 + 40 for c in calls for a in c.answers)
        assert answered < 3_000 * len(calls)  # against a megabyte an answer made
        rebuilt = await rebuild(store, "t", settings, model=Huge(), allow_model_calls=False)
        assert rebuilt.model_calls == 0 and rebuilt.replayed == model.calls
        again = {(n.level, n.index): (n.text, n.fallback) for n in await store.summaries("t")}
    assert again == lines


@pytest.mark.parametrize(
    "answer",
    [
        "short",
        "é" * 300,
        "x" * 257,
        "x" * 255 + "€",
        "x" * 255 + "🚀" * 3,
        "ends like a note[…12 more bytes not recorded]",
        "a b " * 999,
    ],
)
def test_a_bounded_answer_replays_with_the_size_and_head_of_the_whole(answer: str) -> None:
    ask = Ask(
        thread="t",
        level=0,
        index=0,
        prompts=("p",),
        answers=(answer,),
        line="l",
        input_tokens=0,
        output_tokens=0,
        outcome="cut",
    )
    (kept,) = as_recorded(ask, 64).answers
    assert size(kept) <= ANSWER_LINES * 64 + 40
    back = replayed(kept)
    assert size(back) == size(answer) and prefix(back, ANSWER_LINES * 64) == prefix(answer, 256)
    assert normalize(back) == back or normalize(answer) != answer
    assert as_recorded(replace(ask, answers=(back,)), 64).answers == (kept,)  # recorded again
