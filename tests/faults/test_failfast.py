"""The command line fails fast when the summarizer is down, and leaves on SIGTERM in bounded
time, keeping what it stored (its messages pending for the next run)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import pytest

from history.store import open_store

from ..conftest import message
from ..stores import postgres_schema

pytestmark = pytest.mark.slow

MODEL = "openai:gpt-4.1-nano"
COUNT = 40


def chat(tmp_path: Path, count: int = COUNT) -> Path:
    path = tmp_path / "chat.jsonl"
    start = datetime(2026, 11, 1, tzinfo=UTC)
    records = (
        {
            "id": f"m{k}",
            "thread": "t",
            "author": ("Ana", "north")[k % 2],
            "to": ("north", "Ana")[k % 2],
            "text": f"message {k}: " + "words " * 30,
            "at": (start + timedelta(minutes=k)).isoformat(),
        }
        for k in range(count)
    )
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def command(*argv: str | Path) -> list[str]:
    return [sys.executable, "-m", "history.cli", *map(str, argv)]


def environment(base_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "CHAT_OUTLINE"))}
    return env | {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": base_url}


def pending(db: Path) -> tuple[int, bool]:
    """How many messages thread `t` holds, and whether some of them wait to be processed with
    no line fallen back."""

    async def look() -> tuple[int, bool]:
        store = open_store(db)
        await store.open()
        try:
            outline = await store.outline("t")
            waiting = outline is None or outline.position < COUNT - 1
            return len(await store.messages("t", 0, 2**62)), (
                waiting and not any(n.fallback for n in await store.summaries("t"))
            )
        finally:
            await store.close()

    return anyio.run(look)


@pytest.fixture
def refusing() -> Iterator[tuple[str, list[str]]]:
    """An OpenAI-like endpoint that refuses the key (HTTP 401); the paths it was asked."""
    asked: list[str] = []

    class Refuse(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            asked.append(self.path)
            body = json.dumps(
                {
                    "error": {
                        "message": "Incorrect API key provided: sk-test",
                        "type": "invalid_request_error",
                        "code": "invalid_api_key",
                    }
                }
            ).encode()
            self.send_response(401)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", asked
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def silent() -> Iterator[str]:
    """An endpoint that takes connections and never answers (a provider that hangs)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        listener.close()


def test_ingest_with_an_unreachable_provider_exits_non_zero_keeping_what_it_stored(
    tmp_path: Path,
) -> None:
    db = tmp_path / "h.sqlite"
    url = "http://127.0.0.1:9/v1"  # nothing listens on the discard port
    started = time.monotonic()
    done = subprocess.run(
        command(
            "ingest",
            chat(tmp_path),
            "--db",
            db,
            "--summarizer",
            MODEL,
            "--tail",
            "100,200",
            "--max-failures",
            "2",
        ),
        env=environment(url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - started
    assert done.returncode != 0 and took < 60, (done.returncode, took, done.stderr[-2000:])
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"chat-outline: summarizer {MODEL!r} failed 2 times in a row")
    assert "keeping what was stored" in last
    assert "words" not in done.stderr and "sk-test" not in done.stderr
    assert pending(db) == (COUNT, True)  # every message stored, the cut waits: no fallback


def test_ingest_with_a_refused_key_stops_at_its_first_request(
    tmp_path: Path, refusing: tuple[str, list[str]]
) -> None:
    url, asked = refusing
    db = tmp_path / "h.sqlite"
    done = subprocess.run(
        command("ingest", chat(tmp_path), "--db", db, "--summarizer", MODEL, "--tail", "100,200"),
        env=environment(url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0, done.stdout
    last = done.stderr.strip().splitlines()[-1]
    why = "refused what waiting will not mend (last: ModelAuthenticationError (status 401))"
    assert why in last
    assert len(asked) == 1  # not 5 tries with backoff, nor the rest of the lines
    assert "sk-test" not in done.stderr
    assert pending(db) == (COUNT, True)


def test_max_failures_takes_a_whole_number_above_zero(tmp_path: Path) -> None:
    from history.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["ingest", str(chat(tmp_path, 1)), "--max-failures", "0"])
    assert exited.value.code == 2


def test_ingest_on_sigterm_leaves_at_once_keeping_what_it_stored(
    tmp_path: Path, silent: str
) -> None:
    db = tmp_path / "h.sqlite"
    process = subprocess.Popen(
        command("ingest", chat(tmp_path), "--db", db, "--summarizer", MODEL, "--tail", "100,200"),
        env=environment(silent),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (db.exists() and stored(db) == COUNT):
            time.sleep(0.2)
        time.sleep(0.5)  # its lines are being asked of the silent provider now
        process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        _, err = process.communicate(timeout=30)
        took = time.monotonic() - started
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert took < 10 + 2
    assert "stopped by SIGTERM: what was stored is kept" in err
    assert pending(db) == (COUNT, True)


def stored(db: Path) -> int:
    try:
        return pending(db)[0]
    except Exception:  # not made yet
        return 0


def test_a_worker_on_sigterm_leaves_within_its_grace(tmp_path: Path, silent: str) -> None:
    if not os.environ.get("CHAT_OUTLINE_TEST_POSTGRES"):
        pytest.skip("set CHAT_OUTLINE_TEST_POSTGRES to run the worker")
    with postgres_schema() as db:
        stored_for_workers(db)
        worker(db, silent)


def stored_for_workers(db: str) -> None:
    """COUNT messages of thread `t` stored, none processed."""
    from history import HistorySettings
    from history.processors.weight import weight

    async def store_them() -> None:
        store = open_store(db)
        await store.open()
        try:
            encoding = HistorySettings(summarizer="echo").encoding
            for k in range(COUNT):
                m = message(k, f"message {k}: " + "words " * 30)
                await store.add(m, weight(m, encoding))
        finally:
            await store.close()

    anyio.run(store_them)


def worker(db: str, silent: str) -> None:
    process = subprocess.Popen(
        command(
            "worker",
            "--db",
            db,
            "--summarizer",
            MODEL,
            "--tail",
            "100,200",
            "--grace",
            "2",
            "--poll",
            "0.2",
        ),
        env=environment(silent),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        for line in process.stderr:  # its signal handler is set once it looks for work
            if "looking for work" in line:
                break
        time.sleep(1.5)  # it took the thread, and asks the silent provider
        process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        out, err = process.communicate(timeout=30)
        took = time.monotonic() - started
    finally:
        process.kill()
    assert process.returncode == 0 and took < 15, (took, err[-2000:])
    # From the signal to the worker's last line: its grace, then a bounded close.
    stamps = {
        what: datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
        for line in err.splitlines()
        for what in ("SIGTERM, finishing", "worker stopped")
        if what in line
    }
    assert (stamps["worker stopped"] - stamps["SIGTERM, finishing"]).total_seconds() < 2 + 2
    assert out.splitlines()[-1].startswith("processed ")


def test_rebuild_with_an_unreachable_provider_exits_non_zero_changing_nothing(
    tmp_path: Path,
) -> None:
    db = tmp_path / "h.sqlite"
    built = subprocess.run(
        command("ingest", chat(tmp_path), "--db", db, "--tail", "100,200"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0, built.stderr
    before = db.read_bytes()
    url = "http://127.0.0.1:9/v1"
    started = time.monotonic()
    done = subprocess.run(
        command(
            "rebuild",
            "t",
            "--db",
            db,
            "--summarizer",
            MODEL,
            "--allow-model-calls",
            "--max-failures",
            "2",
        ),
        env=environment(url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - started
    assert done.returncode != 0 and took < 60, (took, done.stderr[-2000:])
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"chat-outline: summarizer {MODEL!r} raised ModelConnectionError"), last
    assert "(2 of 2 failures)" not in done.stderr and "(1 of 2 failures)" in done.stderr
    assert db.read_bytes() == before
