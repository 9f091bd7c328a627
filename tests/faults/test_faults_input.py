"""Faults at the edges of input, files and the store: a hostile file, a bad export, a full disk,
a read-only mount, processes racing to create one store. Each is run as a user meets it, mostly
through the command line in a process of its own: the refusal is one line with a non-zero exit
status, and the store is left consistent (or untouched)."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shlex
import shutil
import sqlite3
import struct
import subprocess
import sys
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest

from history import InputError
from history.cli import main
from history.contract import Outline, Stored
from history.processors.weight import weight
from history.store import Store
from history.store._records import ThreadRecords

from ..conftest import message

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "launch.jsonl"
READ_ONLY = (
    ("threads",),
    ("show", "t"),
    ("prompt", "t"),
    ("zoom", "t", "0+1"),
    ("search", "t", "launch"),
    ("export", "--out", "-"),
    ("stats",),
)


def cli(*argv: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`chat-outline ARGV` in a process of its own, run from this checkout."""
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("HISTORY_TAIL", None)
    env.pop("CHAT_OUTLINE_TAIL", None)
    return subprocess.run(
        [sys.executable, "-m", "history.cli", *map(str, argv)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def refused(result: subprocess.CompletedProcess[str], *words: str) -> str:
    """The one line of a refusal: a non-zero status, no traceback; it holds `words`."""
    assert result.returncode != 0, result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("chat-outline: "), lines
    for word in words:
        assert word in lines[0]
    return lines[0]


def in_namespace(script: str) -> subprocess.CompletedProcess[str]:
    """Run a shell script with mounts of its own (a tmpfs, a read-only bind), as any user."""
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "-rm", "true"], check=False).returncode:
        pytest.skip("needs unshare with user and mount namespaces")
    return subprocess.run(
        [unshare, "-rm", "sh", "-ec", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def integrity(path: Path) -> str:
    with sqlite3.connect(path) as db:
        return str(db.execute("PRAGMA integrity_check").fetchone()[0])


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example chat ingested by the command, once for the module: thread `t`."""
    path = tmp_path_factory.mktemp("example") / "h.sqlite"
    result = cli("ingest", EXAMPLE, "--tail", "40,80", "--db", path)
    assert result.returncode == 0, result.stderr
    return path


@pytest.fixture
def example(ingested: Path, tmp_path: Path) -> Path:
    """A store holding the example chat, cut into an outline: thread `t`; each test's own copy,
    which it may change or break (the command closed the store, so the file is all of it)."""
    assert not ingested.with_name(f"{ingested.name}-wal").exists()
    path = tmp_path / "h.sqlite"
    shutil.copyfile(ingested, path)
    return path


# 5. Processes opening one fresh file at once


OPEN_AT_GO = """
import sys, time, anyio
from pathlib import Path
from history.store import open_store

go = Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)

async def main() -> None:
    store = open_store(sys.argv[1])
    await store.open()
    await store.close()

anyio.run(main)
"""


def test_processes_creating_one_fresh_store_at_once_all_succeed(tmp_path: Path) -> None:
    path, go = tmp_path / "fresh.sqlite", tmp_path / "go"
    starters = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_AT_GO, str(path), str(go)],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    go.touch()  # every process waits for it, so their opens meet
    ingests = [
        subprocess.Popen(
            [sys.executable, "-m", "history.cli", "ingest", str(EXAMPLE), "--db", str(path)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    failed = [p.communicate(timeout=300)[1] for p in starters + ingests]
    assert [p.returncode for p in starters + ingests] == [0] * 10, failed
    with sqlite3.connect(path) as db:
        names = [r[0] for r in db.execute("SELECT name FROM migration ORDER BY name")]
        assert len(names) == len(set(names)) >= 5
        assert db.execute("SELECT count(*) FROM message").fetchone() == (16,)
    assert integrity(path) == "ok"


# 7. Files are written aside, fresh


def test_export_never_follows_a_link_planted_where_it_writes(example: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "out.jsonl"
    for name in (".out.jsonl.partial", ".out.jsonl.tmp", "out.jsonl.partial"):
        (tmp_path / name).symlink_to(victim)
    result = cli("export", "--out", out, "--db", example)
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "precious\n"
    assert not out.is_symlink() and out.read_text().startswith('{"kind":"chat-outline"')
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out")) == [
        ".out.jsonl.partial",
        ".out.jsonl.tmp",
    ]


# 10. One line, never a traceback


def test_a_store_that_cannot_be_opened_is_one_line_with_no_thread_traceback(
    tmp_path: Path,
) -> None:
    (tmp_path / "a-directory").mkdir()
    data, db = ROOT / "tests" / "data" / "twelve.jsonl", tmp_path / "a-directory"
    command = [sys.executable, "-m", "history.cli", "ingest", str(data), "--db", str(db)]
    runs = [  # the traceback came from a thread, in most runs but not every one
        subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True) for _ in range(4)
    ]
    for run in runs:
        _, err = run.communicate(timeout=120)
        refused(subprocess.CompletedProcess(command, run.returncode, "", err), "is a directory")


# 11. No side effects


def test_another_applications_database_is_refused_exactly_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "theirs.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE invoice (id INTEGER PRIMARY KEY, total REAL)")
        db.execute("INSERT INTO invoice (total) VALUES (12.5)")
    db.close()
    before = digest(path)
    refused(cli("threads", "--db", path), "not a chat-outline database")
    refused(cli("ingest", EXAMPLE, "--db", path), "not a chat-outline database")
    assert digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["theirs.db"]
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    db.close()


@pytest.mark.parametrize("command", READ_ONLY, ids=lambda c: c[0])
def test_reading_commands_create_nothing_on_an_empty_or_missing_file(
    tmp_path: Path, command: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    empty, missing = tmp_path / "empty.sqlite", tmp_path / "missing.sqlite"
    empty.touch()
    for path in (empty, missing):
        code = main([*command, "--db", str(path)])
        out, err = capsys.readouterr()
        refused(subprocess.CompletedProcess([], code, out, err), "no ", "store")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.sqlite"]
    assert empty.stat().st_size == 0


READ_ALL = f"""
import sys
from history import InputError
from history.cli import main
from history.contract import Outline, Stored
db = sys.argv[1]
for command in {READ_ONLY!r}:
    if main([*command, "--db", db]) != 0:
        print("FAILED", command[0], file=sys.stderr)
print("ingest", main(["ingest", "{EXAMPLE}", "--db", db]), file=sys.stderr)
"""


def test_reading_commands_work_on_a_read_only_mount(example: Path) -> None:
    here = example.parent
    result = in_namespace(
        f"mount --bind {here} {here}; mount -o remount,ro,bind {here}\n"
        f"{sys.executable} -c {shlex.quote(READ_ALL)} {example} > /dev/null"
    )
    assert "FAILED" not in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.splitlines()[-2:] == [
        f"chat-outline: cannot write the SQLite store '{example}': the file or its directory is "
        "read-only (unable to open database file)",
        "ingest 2",
    ]
    assert integrity(example) == "ok"


def full_export(path: Path, messages: int) -> None:
    """An export of one thread whose messages need far more room than the disk has."""
    lines = [{"kind": "chat-history", "format": 1}]
    for n in range(messages):
        m = message(n, f"message {n}: " + "all work and no play " * 100, thread="big")
        lines.append(
            {
                "kind": "message",
                "id": m.id,
                "thread": m.thread,
                "seq": n,
                "index": n,
                "author": m.author,
                "to": m.to,
                "text": m.text,
                "at": m.at.isoformat(),
                "step": False,
                "files": [],
                "weight": weight(m, "cl100k_base"),
            }
        )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


LOAD_ON_A_FULL_DISK = """
import sqlite3, sys
from history import InputError
from history.cli import main
from history.contract import Outline, Stored
export, db = sys.argv[1:]
print("load", main(["load", export, "--db", db]))
with sqlite3.connect(db) as connection:
    print(*connection.execute("SELECT count(*) FROM message").fetchone())
    print(*connection.execute("PRAGMA integrity_check").fetchone())
"""


def test_a_full_disk_during_a_load_is_reported_as_such_and_writes_nothing(
    tmp_path: Path,
) -> None:
    full_export(tmp_path / "export.jsonl", 2_000)
    disk = tmp_path / "disk"
    disk.mkdir()
    db = disk / "h.sqlite"
    result = in_namespace(
        f"mount -t tmpfs -o size=2m none {disk}\n"
        f"{sys.executable} -c {shlex.quote(LOAD_ON_A_FULL_DISK)} {tmp_path / 'export.jsonl'} {db}"
    )
    assert result.stdout.splitlines() == ["load 2", "0", "ok"], result.stdout + result.stderr
    assert result.stderr.splitlines() == [
        f"chat-outline: SQLite store '{db}': database or disk is full"
    ]


def test_an_outline_line_whose_node_is_lost_is_left_out_of_the_prompt_with_a_warning(
    example: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    with sqlite3.connect(example) as db:
        level, index, _, _ = json.loads(db.execute("SELECT lines FROM outline").fetchone()[0])[0]
        db.execute("DELETE FROM summary WHERE level = ? AND idx = ?", (level, index))
    db.close()
    code = main(["prompt", "t", "--db", str(example)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Ana → north" in out
    assert [r.getMessage() for r in caplog.records] == ["thread 't': 1 outline lines have no node"]
    assert vars(caplog.records[0])["chat_thread"] == "t"


# 4. A load checks everything before it writes anything


@pytest.fixture(scope="module")
def export_lines(ingested: Path, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The example thread's export, once for the module, one record a line."""
    out = tmp_path_factory.mktemp("export") / "export.jsonl"
    assert main(["export", "--out", str(out), "--db", str(ingested)]) == 0
    return out.read_text().splitlines()


@pytest.fixture
def exported(export_lines: list[str]) -> list[dict[str, Any]]:
    """The example thread's export as records (messages, nodes, outline, calls), each test's
    own."""
    return [json.loads(line) for line in export_lines]


def first(records: list[dict[str, Any]], kind: str, **match: Any) -> dict[str, Any]:
    return next(r for r in records if r["kind"] == kind and match.items() <= r.items())


def changed(
    records: list[dict[str, Any]], change: Callable[[list[dict[str, Any]]], object]
) -> list[dict[str, Any]]:
    copy: list[dict[str, Any]] = json.loads(json.dumps(records))
    change(copy)
    return copy


def at_node_1(records: list[dict[str, Any]]) -> None:
    first(records, "outline")["lines"][0][:2] = [1, 40]


INCONSISTENT: dict[str, tuple[Callable[[list[dict[str, Any]]], object], str]] = {
    "position past the last message": (
        lambda r: first(r, "outline").update(position=1_000_000),
        "the outline of thread 't' has position 1000000, out of range (-1 to 15)",
    ),
    "a line naming no node": (
        at_node_1,
        "the outline of thread 't' has line 80+2 (level 1), a node the thread does not have",
    ),
    "a message moved to another thread": (
        lambda r: first(r, "message", seq=3).update(thread="elsewhere"),
        "message 'm4' of thread 't' has seq 4, where seq 3 is due",
    ),
    "a message turned into a step": (
        lambda r: first(r, "message", seq=3).update(step=True, index=None),
        "message 'm4' of thread 't' has index 4, but it is shared message 3",
    ),
    "a seq past 2**63": (
        lambda r: first(r, "message", seq=3).update(seq=2**64),
        "not a chat-outline record (message.seq: Input should be less than or equal to",
    ),
    "a tail with an unknown id": (
        lambda r: first(r, "outline")["tail"][0].__setitem__(0, "ghost"),
        "the outline of thread 't' has TailItem(id='ghost'",
    ),
    "a negative weight": (
        lambda r: first(r, "message", seq=2).update(weight=-(10**9)),
        "not a chat-outline record (message.weight: Input should be greater than or equal to 0)",
    ),
    "an absurd weight": (
        lambda r: first(r, "message", seq=2).update(weight=10**12),
        "message 'm2' of thread 't' has weight 1000000000000, but its text and files weigh 12 "
        "tokens (cl100k_base)",
    ),
    "a boundary past the lines": (
        lambda r: first(r, "outline").update(boundary=first(r, "outline")["boundary"] + 1),
        "the outline of thread 't' has boundary 12, where its records make 11",
    ),
    "a node past the messages": (
        lambda r: first(r, "summary", level=0, index=0).update(index=400),
        "node 400+1 (level 0) of thread 't' covers shared messages 400 to 400, but the thread "
        "has 16",
    ),
}


@pytest.mark.parametrize("case", INCONSISTENT, ids=str)
def test_an_inconsistent_export_is_refused_naming_the_record_and_writes_nothing(
    exported: list[dict[str, Any]], tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    change, reason = INCONSISTENT[case]
    path, db = tmp_path / "bad.jsonl", tmp_path / "other.sqlite"
    path.write_text("".join(json.dumps(r) + "\n" for r in changed(exported, change)))
    code = main(["load", str(path), "--db", str(db)])
    out, err = capsys.readouterr()
    line = refused(subprocess.CompletedProcess([], code, out, err))
    assert reason in line
    if db.exists():
        with sqlite3.connect(db) as connection:
            assert connection.execute("SELECT count(*) FROM message").fetchone() == (0,)
        connection.close()
        assert integrity(db) == "ok"


def test_a_consistent_export_loads_back_identically(
    exported: list[dict[str, Any]], tmp_path: Path
) -> None:
    path, db, again = tmp_path / "good.jsonl", tmp_path / "other.sqlite", tmp_path / "again.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in exported))
    assert main(["load", str(path), "--db", str(db)]) == 0
    assert main(["export", "--out", str(again), "--db", str(db)]) == 0
    assert [json.loads(line) for line in again.read_text().splitlines()] == exported
    assert integrity(db) == "ok"


@pytest.mark.anyio
async def test_records_handed_to_a_store_are_checked_before_anything_is_written(
    store: Store,
) -> None:
    said = [Stored(message=message(n, "hi"), seq=n, index=n, weight=9) for n in range(3)]
    with pytest.raises(InputError, match="has seq 18446744073709551616, where seq 2 is due"):
        far = replace(said[2], seq=2**64)
        await store.load_records([ThreadRecords(thread="t", messages=(*said[:2], far))])
    outline = Outline(
        thread="t",
        epoch="",
        version=0,
        lines=[],
        bytes=0,
        boundary=0,
        since=said[0].message.at,
        cut_at=None,
        gone=None,
        tail=deque(s.tail_item() for s in said),
        tokens=27,
        draining=False,
        position=2,
    )
    ahead = replace(outline, position=1_000_000)
    with pytest.raises(InputError, match="has position 1000000, out of range"):
        await store.load_records([ThreadRecords(thread="t", messages=tuple(said), outline=ahead)])
    assert await store.threads() == []
    await store.load_records([ThreadRecords(thread="t", messages=tuple(said), outline=outline)])
    assert await store.outline("t") == replace(outline, epoch=ANY)


# 6. Every input has a size bound


def bounded(*argv: str | Path, memory: int = 1536 * 2**20) -> subprocess.CompletedProcess[str]:
    """`cli(*argv)` in a process that cannot allocate more than `memory` bytes."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return subprocess.run(
        [sys.executable, "-m", "history.cli", *map(str, argv)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
        check=False,
    )


def zip_bomb(path: Path, size: int) -> None:
    """A zipped `conversations.json` of `size` zero bytes, deflated to a few megabytes: built
    from one flushed block repeated, so that making it costs next to nothing."""
    block = 2**20
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    repeated = deflate.compress(bytes(block)) + deflate.flush(zlib.Z_FULL_FLUSH)
    data = repeated * (size // block) + deflate.flush()
    name = b"conversations.json"
    fields = (20, 0, 8, 0, 0, 0, len(data), size, len(name), 0)  # crc 0: it is never reached
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, *fields) + name
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, *fields, 0, 0, 0, 0, 0) + name
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central), len(local) + len(data), 0)
    path.write_bytes(local + data + central + end)


def test_a_zip_bomb_is_refused_at_once_in_bounded_memory(tmp_path: Path) -> None:
    bomb = tmp_path / "export.zip"
    zip_bomb(bomb, 3 * 2**30)
    assert bomb.stat().st_size < 8 * 2**20
    result = bounded("ingest", bomb, "--db", tmp_path / "h.sqlite")
    refused(result, "'conversations.json' is 3,221,225,472 bytes unzipped, more than the")


@pytest.mark.parametrize("command", ["ingest", "simulate", "load"])
def test_a_huge_file_is_refused_by_its_size_in_bounded_memory(tmp_path: Path, command: str) -> None:
    sparse = tmp_path / "huge.json"
    with sparse.open("wb") as file:
        file.truncate(2**30)  # a gigabyte of holes: no disk, but read whole it is a gigabyte
    db = ("--db", tmp_path / "h.sqlite") if command != "simulate" else ()
    line = refused(bounded(command, sparse, *db))
    assert "1,073,741,824 bytes, more than the" in line or "a line longer than the" in line


DEEP = b"[" * 100_000 + b"]" * 100_000


def test_json_nested_too_deep_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = tmp_path / "chat.json"
    chat.write_bytes(DEEP)
    code = main(["ingest", str(chat), "--db", str(tmp_path / "h.sqlite")])
    out, err = capsys.readouterr()
    refused(subprocess.CompletedProcess([], code, out, err), "JSON nested deeper than 100 levels")


# 10. One line a problem, never a traceback


def test_a_deep_line_is_one_bad_record_in_ingest_and_simulate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = [
        json.dumps(
            {
                "id": f"m{n}",
                "thread": "t",
                "author": "Ana",
                "text": f"line {n}",
                "at": "2026-11-01T09:00:00+00:00",
            }
        ).encode()
        for n in range(3)
    ]
    history = tmp_path / "h.jsonl"
    history.write_bytes(b"\n".join([good[0], b'{"id": ' + DEEP + b"}", *good[1:]]) + b"\n")
    code = main(["ingest", str(history), "--db", str(tmp_path / "h.sqlite")])
    _, err = capsys.readouterr()
    assert code == 1
    assert err.splitlines()[0] == f"{history}:2: JSON nested deeper than 100 levels"
    assert main(["ingest", str(history), "--skip-bad", "--db", str(tmp_path / "h.sqlite")]) == 0
    assert "3 messages, 3 new" in capsys.readouterr().out
    assert main(["simulate", str(history), "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == f"{history}:2: JSON nested deeper than 100 levels\n"
    assert len(json.loads(out)["outlines"][0]["tail"]) == 3


def test_a_chatgpt_time_past_any_date_is_one_bad_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def node(id: str, parent: str | None, at: int | float, text: str) -> dict[str, Any]:
        message = {
            "author": {"role": "user"},
            "create_time": at,
            "content": {"content_type": "text", "parts": [text]},
        }
        return {"id": id, "parent": parent, "children": [], "message": message}

    mapping = {"a": node("a", None, 1.7e9, "hello"), "b": node("b", "a", 10**400, "far")}
    mapping["a"]["children"] = ["b"]
    export = tmp_path / "conversations.json"
    export.write_text(
        json.dumps([{"id": "c1", "title": "t", "create_time": 1.7e9, "mapping": mapping}])
    )
    db = str(tmp_path / "h.sqlite")
    code = main(["ingest", str(export), "--db", db])
    _, err = capsys.readouterr()
    assert code == 1
    assert err.splitlines()[0] == (
        f"{export}:$[0].mapping.b.message: create_time 1000000000000000000000000000000000000000 "
        "is not a time"
    )
    assert main(["ingest", str(export), "--skip-bad", "--db", db]) == 0
    assert "1 message, 1 new" in capsys.readouterr().out


def test_a_lone_surrogate_is_one_bad_record_at_its_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = tmp_path / "support.json"
    chat.write_text(
        '[{"role": "user", "content": "hi"}, '
        '{"role": "assistant", "content": "bad \\ud800 here"}, '
        '{"role": "user", "content": "ok"}]'
    )
    db = str(tmp_path / "h.sqlite")
    code = main(["ingest", str(chat), "--db", db])
    _, err = capsys.readouterr()
    assert code == 1
    assert err.splitlines()[0].startswith(f"{chat}:$[1]: text is not valid UTF-8")
    assert main(["ingest", str(chat), "--skip-bad", "--db", db]) == 0
    assert "2 messages, 2 new" in capsys.readouterr().out
