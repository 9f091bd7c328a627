"""Every Python example of the README and of the docs/ pages runs as written, offline.

The examples run one after another in one fresh interpreter (pydantic-ai is imported once),
each in its own folder and namespace, as a user would paste them into a file; what each prints
is kept, so a test can check what an example shows, not only that it ran. The pages' links to
files and headings hold too.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from history.store import open_store

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python\n(.*?)^```$", re.M | re.S)
BLOCKS = [
    (page.relative_to(ROOT).as_posix(), number, code)
    for page in PAGES
    for number, code in enumerate(FENCE.findall(page.read_text()), 1)
]
RUNNER = """
import contextlib, io, json, os, sys, traceback
blocks, folder = json.loads(sys.stdin.read()), sys.argv[1]
results = []
for number, (page, block, code) in enumerate(blocks):
    os.chdir(os.path.join(folder, str(number)))
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(code, f"{page} block {block}", "exec"), {"__name__": "__main__"})
        results.append({"error": "", "printed": printed.getvalue(), "folder": os.getcwd()})
    except BaseException:
        error = traceback.format_exc()
        results.append({"error": error, "printed": printed.getvalue(), "folder": os.getcwd()})
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], dict[str, str]]:
    """What each block raised (empty when it ran) and printed, and the folder it ran in, run with
    no key and no network."""
    folder = tmp_path_factory.mktemp("pages")
    for number in range(len(BLOCKS)):
        (folder / str(number)).mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run(
        [sys.executable, "-c", RUNNER, str(folder)],
        input=json.dumps(BLOCKS),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    found: list[dict[str, str]] = json.loads(result.stdout.splitlines()[-1])
    return {(page, number): done for (page, number, _), done in zip(BLOCKS, found, strict=True)}


def test_every_python_fence_is_a_block_that_runs() -> None:
    """A fence the pattern would miss (a typo, an indented close) is not silently skipped."""
    for page in PAGES:
        text = page.read_text()
        assert text.count("```python\n") == len(FENCE.findall(text)), page.name
    pages = {page for page, _, _ in BLOCKS}
    assert {"README.md", "docs/agents.md", "docs/python.md", "docs/commands.md"} <= pages
    assert sum(page == "README.md" for page, _, _ in BLOCKS) >= 3


def test_the_readme_is_a_first_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    first = re.findall(r"^```bash\n(.*?)\n```", readme, re.M | re.S)
    assert first[0].endswith("chat-outline demo") and first[1] == "python -m pytest -n auto"
    sections = (
        "Start here",
        "An agent",
        "In a web backend",
        "Choosing a budget",
        "When things fail",
        "Testing offline",
        "Commands",
        "More",
    )
    order = [readme.index(f"\n## {title}") for title in sections]
    assert order == sorted(order)
    assert "pip install 'chat-outline[serve]'" in readme  # the viewer's extra, and its picture
    assert "](docs/viewer.png)" in readme and (ROOT / "docs" / "viewer.png").is_file()


def test_ci_runs_the_readmes_test_command_after_the_checks() -> None:
    readme = (ROOT / "README.md").read_text()
    found = re.search(r"^The tests .*?```bash\n(.*?)\n```", readme, re.M | re.S)
    assert found is not None
    steps = (ROOT / ".ci" / "run").read_text().splitlines()
    assert steps[-1] == found.group(1)
    assert {
        "python -m mypy",
        "python -m ruff check history processors tests benchmarks examples",
    } <= set(steps)


def anchor(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_a_pages_links_lead_somewhere(page: Path) -> None:
    for target in re.findall(r"\]\(([^)#:]*)(?:#([^)]*))?\)", page.read_text()):
        path, heading = target
        linked = (page.parent / path).resolve() if path else page
        assert linked.is_file(), f"{page.name} links to {path!r}"
        if heading:
            headings = re.findall(r"^#+ (.*)$", linked.read_text(), re.M)
            assert heading in {anchor(h) for h in headings}, f"{page.name} links to #{heading}"


@pytest.mark.slow
def test_the_readmes_agents_answer(outcomes: dict[tuple[str, int], dict[str, str]]) -> None:
    """TestModel answers the agent example with what its tools said; the backend says `Noted.`"""
    printed = [outcome["printed"] for (page, _), outcome in outcomes.items() if page == "README.md"]
    assert any("nothing in this conversation matches" in text for text in printed)
    assert "Noted.\n" in printed


@pytest.mark.slow
def test_the_readmes_agents_keep_their_threads(
    outcomes: dict[tuple[str, int], dict[str, str]],
) -> None:
    """Each example records its run in the thread it names, in the store it names: the question
    and the agent's answer, in order."""

    async def said(path: Path) -> list[tuple[str, str]]:
        store = open_store(path, read_only=True)
        await store.open()
        try:
            return [
                (s.message.author, s.message.text)
                for s in await store.messages_after("launch", -1, 50)
            ]
        finally:
            await store.close()

    folders = [Path(o["folder"]) for (page, _), o in outcomes.items() if page == "README.md"]
    kept = {
        path.name: anyio.run(said, path) for folder in folders for path in folder.glob("*.sqlite")
    }
    assert set(kept) == {"chat.sqlite", "app.sqlite"}
    assert kept["app.sqlite"] == [("Ana", "Price it at 49 € a year."), ("north", "Noted.")]
    asked, *answered = kept["chat.sqlite"]
    assert asked[1] == "What did we settle about the price?"
    assert answered and answered[-1][0] == "north"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("page", "number"),
    [(page, number) for page, number, _ in BLOCKS],
    ids=[f"{page}-block-{number}" for page, number, _ in BLOCKS],
)
def test_an_example_runs_as_written(
    outcomes: dict[tuple[str, int], dict[str, str]], page: str, number: int
) -> None:
    assert outcomes[page, number]["error"] == "", outcomes[page, number]["error"]
