"""The command as a user scripts it: --version, --json on every read command, - for standard
input, the store named by $CHAT_OUTLINE_DB, the agent `prompt` picks, one-line errors, and a
start that loads nothing heavy."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

import history
from benchmarks import startup
from history import HistorySettings, Reply, Task
from history.cli import main
from history.metering import known_price

from ..chats import ingest, long_chat
from ..conftest import run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "launch.jsonl"
CHAT = [
    {"role": "user", "content": "Shall we price it at 49 euros?"},
    {"role": "assistant", "content": "Yes: 49 euros a year."},
    {"role": "user", "content": "And the launch date?"},
]


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("HISTORY_TAIL", raising=False)
    monkeypatch.delenv("CHAT_OUTLINE_TAIL", raising=False)
    monkeypatch.delenv("CHAT_OUTLINE_DB", raising=False)
    monkeypatch.chdir(tmp_path)


def as_json(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> dict[str, Any]:
    """The one JSON object a read command prints with `--json`."""
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    assert out.count("\n") == 1  # one document, one line
    document = json.loads(out)
    assert isinstance(document, dict)
    return document


@pytest.fixture
def db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "h.sqlite"
    assert run(capsys, "ingest", EXAMPLE, "--tail", "40,80", "--db", path)[0] == 0
    return path


def test_version_names_the_command_and_the_package_version(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"chat-outline {history.__version__}\n"


def test_threads_and_show_as_json(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    listed = as_json(capsys, "threads", "--db", db)
    assert listed == {
        "store": str(db),
        "threads": [
            {
                "thread": "t",
                "title": None,
                "messages": 16,
                "pending": 0,
                "nodes": 19,
                "depth": 4,
                "lines": 11,
                "bytes": 477,
                "tail": 5,
                "tokens": 77,
                "fallbacks": 0,
            },
        ],
    }
    shown = as_json(capsys, "show", "t", "--db", db)
    assert isinstance(shown, dict)
    assert list(shown) == [
        "thread",
        "title",
        "settings",
        "figures",
        "nodes",
        "outline",
        "steps",
        "tail",
    ]
    assert shown["settings"]["tail"] == [40, 80]
    assert shown["figures"] == listed["threads"][0]
    assert len(shown["nodes"]) == 19 and len(shown["outline"]) == 11 and len(shown["tail"]) == 5
    assert shown["nodes"][0] == {
        "label": "0+1",
        "level": 0,
        "index": 0,
        "text": "Ana → north: Plan the launch for December",
        "bytes": 43,
        "at": "2026-11-01T09:00:00+00:00",
        "outline": True,
        "generation": 0,
    }
    assert sum(n["outline"] for n in shown["nodes"]) == 11
    assert shown["steps"] == {}  # the chat has no tool steps
    assert shown["outline"][0]["label"] == "0+1"
    assert set(shown["tail"][0]) == {
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
    assert run(capsys, "erase", "t", "--db", db)[0] == 0
    assert as_json(capsys, "threads", "--db", db) == {"store": str(db), "threads": []}


def test_prompt_zoom_and_search_as_json_hold_what_the_text_shows(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, text, sizes = run(capsys, "prompt", "t", "--db", db)
    prompt = as_json(capsys, "prompt", "t", "--db", db)
    tokens, _, size = sizes.removesuffix(" bytes\n").partition(" tokens, ")
    assert isinstance(prompt, dict) and prompt.pop("text") in (text, text.removesuffix("\n"))
    assert prompt == {"thread": "t", "agent": None, "tokens": int(tokens), "bytes": int(size)}
    zoomed = as_json(capsys, "zoom", "t", "0+2", "--db", db)
    assert zoomed == {
        "thread": "t",
        "label": "0+2",
        "level": 1,
        "index": 0,
        "page": 1,
        "pages": 1,
        "lines": [
            {"label": "0+1", "text": "Ana → north: Plan the launch for December"},
            {"label": "1+1", "text": "north → Ana: You said: Ana: Plan the launch for December"},
        ],
        "message": None,
        "text": run(capsys, "zoom", "t", "0+2", "--db", db)[1].removesuffix("\n"),
    }
    found = as_json(capsys, "search", "t", "49", "euros", "--limit", "2", "--db", db)
    assert isinstance(found, dict) and found["query"] == "49 euros"
    _, text, _ = run(capsys, "search", "t", "49", "euros", "--limit", "2", "--db", db)
    assert [f"{h['label']}|{h['text']}" for h in found["hits"]] == text.splitlines()
    assert set(found["hits"][0]) == {"label", "level", "index", "text", "at", "message", "terms"}
    nothing = as_json(capsys, "search", "t", "zebra", "--db", db)
    assert nothing == {"thread": "t", "query": "zebra", "hits": []}


def test_stats_as_json(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    meter = as_json(capsys, "stats", "--db", db)
    assert isinstance(meter, dict) and meter["calls"] == 0 and meter["threads"] == []


def test_ingest_and_load_read_standard_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def stdin(data: bytes) -> None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))

    stdin(EXAMPLE.read_bytes())
    code, out, _ = run(capsys, "ingest", "-", "--db", tmp_path / "a.sqlite")
    assert code == 0 and out.startswith("<stdin> (jsonl): 16 messages, 16 new")
    stdin(json.dumps(CHAT).encode())
    code, _, err = run(capsys, "ingest", "-", "--db", tmp_path / "a.sqlite")
    assert code == 2 and err == (
        "chat-outline: standard input holds one 'chat' conversation and has no file name to "
        "call its thread: name it with --thread\n"
    )
    stdin(json.dumps(CHAT).encode())
    assert run(capsys, "ingest", "-", "--thread", "support", "--db", tmp_path / "a.sqlite")[0] == 0
    stdin(b'{"thread": "t", "id": 1}\n')
    code, _, err = run(capsys, "ingest", "-", "--db", tmp_path / "a.sqlite")
    assert code == 1 and err.startswith("<stdin>:1: ")

    assert (
        run(capsys, "export", "--out", tmp_path / "all.jsonl", "--db", tmp_path / "a.sqlite")[0]
        == 0
    )
    stdin((tmp_path / "all.jsonl").read_bytes())
    code, out, _ = run(capsys, "load", "-", "--db", tmp_path / "b.sqlite")
    assert code == 0 and out.startswith("loaded 2 thread(s)")
    a = as_json(capsys, "threads", "--db", tmp_path / "a.sqlite")
    b = as_json(capsys, "threads", "--db", tmp_path / "b.sqlite")
    assert a["threads"] == b["threads"]


@pytest.mark.slow
def test_the_store_variable_names_the_store_of_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "named.sqlite"
    monkeypatch.setenv("CHAT_OUTLINE_DB", str(store))
    assert run(capsys, "ingest", EXAMPLE, "--tail", "40,80")[0] == 0
    assert store.exists() and not (tmp_path / "chat-outline.sqlite").exists()
    for argv in (
        ["threads"],
        ["show", "t"],
        ["prompt", "t"],
        ["zoom", "t", "0+2"],
        ["search", "t", "49"],
        ["stats"],
        ["export", "--out", "-"],
        ["rebuild", "t", "--tail", "40,80"],
        ["load", tmp_path / "x.jsonl"],
    ):
        if argv[0] == "load":
            (tmp_path / "x.jsonl").write_text(run(capsys, "export", "--out", "-")[1])
        code, _, err = run(capsys, *argv)
        assert code == 0, (argv, err)
    missing = tmp_path / "missing.sqlite"  # the worker names the variable's store (and runs
    monkeypatch.setenv("CHAT_OUTLINE_DB", str(missing))  # until stopped on one that is there)
    code, _, err = run(capsys, "worker")
    assert code == 2 and f"no store at '{missing}'" in err and not missing.exists()
    monkeypatch.setenv("CHAT_OUTLINE_DB", str(store))
    assert run(capsys, "threads", "--db", tmp_path / "other.sqlite")[0] == 2  # --db wins
    assert run(capsys, "erase", "t")[0] == 0
    assert as_json(capsys, "threads")["threads"] == []


def test_a_store_under_the_former_default_name_is_still_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "ingest", EXAMPLE, "--db", "chat-history.sqlite")[0] == 0
    assert [t["thread"] for t in as_json(capsys, "threads")["threads"]] == ["t"]
    assert not (tmp_path / "chat-outline.sqlite").exists()
    (tmp_path / "chat-history.sqlite").rename(tmp_path / "old.sqlite")
    assert run(capsys, "threads")[0] == 2  # no store: nothing is created by a read


def test_prompt_shows_the_view_of_the_threads_only_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = tmp_path / "support.json"
    chat.write_text(json.dumps(CHAT))
    assert run(capsys, "ingest", chat, "--db", "h.sqlite")[0] == 0
    mine = as_json(capsys, "prompt", "support", "--db", "h.sqlite")
    assert isinstance(mine, dict) and mine["agent"] == "assistant"
    named = as_json(capsys, "prompt", "support", "--agent", "assistant", "--db", "h.sqlite")
    assert named == mine
    nobody = as_json(capsys, "prompt", "support", "--agent", "", "--db", "h.sqlite")
    assert isinstance(nobody, dict) and nobody["agent"] is None
    assert nobody["text"] != mine["text"]
    # Two agents: nobody's view, and the agents are named.
    lines = [
        json.dumps(
            {
                "id": f"m{n}",
                "thread": "duo",
                "author": author,
                "text": "hi",
                "at": f"2026-01-01T00:00:0{n}Z",
                "step": True,
            }
        )
        for n, author in enumerate(["north", "south"])
    ]
    (tmp_path / "duo.jsonl").write_text("\n".join(lines) + "\n")
    assert run(capsys, "ingest", tmp_path / "duo.jsonl", "--db", "h.sqlite")[0] == 0
    code, _, err = run(capsys, "prompt", "duo", "--db", "h.sqlite")
    assert code == 0 and err.startswith(
        "chat-outline: thread 'duo' has agents north, south: showing nobody's view "
        "(name one with --agent)\n"
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "where"),
    [
        (["threads"], "/"),
        (["ingest", str(EXAMPLE)], "{tmp}"),
        (["prompt", "t"], "/no/such/h.sqlite"),
    ],
)
def test_an_unopenable_store_is_one_line_and_exit_2(
    tmp_path: Path, where: str, command: list[str]
) -> None:
    where = where.format(tmp=tmp_path)  # a folder, the root, a folder that does not exist
    result = subprocess.run(
        [sys.executable, "-m", "history.cli", *command, "--db", where],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("chat-outline: ") and result.stderr.count("\n") == 1, (
        result.stderr
    )


def loaded(*argv: str, cwd: Path) -> set[str]:
    """The heavy packages a command imported, run in a fresh interpreter."""
    script = (
        "import sys\nfrom history.cli import main\ntry:\n    main(sys.argv[1:])\n"
        "except SystemExit:\n    pass\n"
        "heavy = ('pydantic_ai', 'rich', 'aiosqlite', 'asyncpg', 'snowballstemmer')\n"
        "print(' '.join(sorted(n for n in heavy if n in sys.modules)), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    return set(result.stderr.splitlines()[-1].split())


@pytest.mark.slow
def test_help_and_a_read_command_load_nothing_heavy(db: Path) -> None:
    assert loaded("--help", cwd=db.parent) == set()
    assert loaded("threads", "--help", cwd=db.parent) == set()
    assert loaded("threads", "--json", "--db", str(db), cwd=db.parent) == {"aiosqlite"}
    assert loaded("show", "t", "--db", str(db), cwd=db.parent) == {"aiosqlite", "rich"}


@pytest.mark.slow
def test_the_startup_benchmark_times_commands_against_the_bare_interpreter(tmp_path: Path) -> None:
    found = startup.measure(tmp_path, repeats=1, commands=[("--help",), ("threads", "--json")])
    assert [s.command for s in found] == ["chat-outline --help", "chat-outline threads --json"]
    assert (tmp_path / "startup.sqlite").exists()
    assert all(s.seconds > 0 and s.cpu > s.baseline_cpu > 0 for s in found)
    section = "\n".join(startup.report(found, 1))
    assert "| `chat-outline threads --json` |" in section
    assert (
        startup.target(found).goal in "`--help` and a read command on a small store answer "
        "within 0.5 s"
    )


class Priced:
    """A summarizer under a model's name, reporting tokens as a provider would."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        return Reply(text=f"line {task.index}", input_tokens=1_000, output_tokens=10)


async def calls_by(store: Path, **threads: str) -> None:
    """Record some summarizer calls per thread, each thread by the model named."""
    settings = HistorySettings(summarizer="echo", line=64, tail=(200, 400))
    for thread, model in threads.items():
        await ingest(long_chat(40, thread=thread), settings, store=str(store), model=Priced(model))


def test_stats_prices_known_models_and_names_the_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    anyio.run(lambda: calls_by(db, a="openai:gpt-4.1-nano", b="mystery:model-x"))
    nano = known_price("openai:gpt-4.1-nano")
    assert nano is not None and nano[0] > 0 and nano[1] > 0
    assert known_price("mystery:model-x") is None and known_price("echo") == (0.0, 0.0)

    code, out, err = run(capsys, "stats", "--json", "--db", db)
    assert code == 0 and err == (
        "chat-outline: no known price for 'mystery:model-x': its calls are left out of the "
        "cost (give --input-price and --output-price)\n"
    )
    meter = json.loads(out)
    a, b = meter["models"]
    assert (a["model"], a["input_price"], a["output_price"]) == ("mystery:model-x", None, None)
    assert a["cost"] is None and a["calls"] > 0
    assert (b["model"], b["input_price"], b["output_price"]) == ("openai:gpt-4.1-nano", *nano)
    assert b["cost"] == pytest.approx(
        (b["input_tokens"] * nano[0] + b["output_tokens"] * nano[1]) / 1e6
    )
    assert [(t["thread"], t["cost"]) for t in meter["threads"]] == [("a", b["cost"]), ("b", 0.0)]
    assert meter["cost"] == b["cost"] and meter["input_price"] is None

    code, out, err = run(
        capsys, "stats", "--json", "--input-price", "1", "--output-price", "2", "--db", db
    )
    meter = json.loads(out)
    assert code == 0 and err == ""
    assert all((m["input_price"], m["output_price"]) == (1.0, 2.0) for m in meter["models"])
    tokens = meter["input_tokens"] * 1.0 + meter["output_tokens"] * 2.0
    assert meter["cost"] == pytest.approx(tokens / 1e6)
    code, out, _ = run(capsys, "stats", "--db", db)
    assert code == 0 and "openai:gpt-4.1-nano" in out and "?" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["threads", "--bogus"],
            "chat-outline threads: unrecognized arguments: --bogus (see "
            "chat-outline threads --help)",
        ),
        (
            ["show"],
            "chat-outline show: the following arguments are required: thread "
            "(see chat-outline show --help)",
        ),
        (
            ["search", "t", "x", "--limit", "0"],
            "chat-outline search: argument --limit: must "
            "be a whole number above 0, got '0' (see "
            "chat-outline search --help)",
        ),
    ],
)
def test_a_usage_mistake_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert capsys.readouterr() == ("", message + "\n")
