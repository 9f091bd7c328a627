"""Every Python example in the README runs as written, offline, in a folder of its own.

The examples run one after another in one fresh interpreter (pydantic-ai is imported once),
each in its own folder and namespace, as a user would paste them into a file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLOCKS = re.findall(r"^```python\n(.*?)^```$", (ROOT / "README.md").read_text(), re.M | re.S)
RUNNER = """
import json, os, sys, traceback
blocks, folder = json.loads(sys.stdin.read()), sys.argv[1]
results = []
for number, code in enumerate(blocks):
    os.chdir(os.path.join(folder, str(number)))
    try:
        exec(compile(code, f"README block {number + 1}", "exec"), {"__name__": "__main__"})
        results.append("")
    except BaseException:
        results.append(traceback.format_exc())
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """What each block raised (empty when it ran), run with no key and no network."""
    folder = tmp_path_factory.mktemp("readme")
    for number in range(len(BLOCKS)):
        (folder / str(number)).mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run(
        [sys.executable, "-c", RUNNER, str(folder)], input=json.dumps(BLOCKS), env=env,
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    found: list[str] = json.loads(result.stdout.splitlines()[-1])
    return found


def test_the_readme_has_its_examples() -> None:
    assert len(BLOCKS) >= 4


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


@pytest.mark.parametrize("number", range(len(BLOCKS)), ids=lambda n: f"block-{n + 1}")
def test_a_readme_example_runs_as_written(outcomes: list[str], number: int) -> None:
    assert outcomes[number] == "", outcomes[number]
