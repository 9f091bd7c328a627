"""The example chat runs offline: north answers, /prompt shows the view, /tree the tree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SAID = [
    "Plan the launch for December",
    "We need a trailer",
    "And a landing page",
    "Who writes the copy?",
    "The price is 4,200 EUR per seat",
    "ok thanks",
]


def test_the_offline_chat_answers_and_shows_its_prompt_and_tree(tmp_path: Path) -> None:
    commands = [
        *SAID,
        "/prompt",
        "/prompt anthropic:claude-sonnet-4-5",
        "/tree",
        "/search price",
        "/zoom 9+3",
    ]
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "chat.py"), "--store", str(tmp_path / "c.sqlite")],
        input="\n".join(commands) + "\n",
        capture_output=True,
        text=True,
        env={**os.environ, "HISTORY_TAIL": "40,80", "COLUMNS": "200"},
        check=True,
        timeout=60,
    )
    out = result.stdout
    assert "north: You said: Ana → north: The price is 4,200 EUR per seat" in out
    assert "[outline]\n0+1|Ana → north: Plan the launch for December\n1+1|north → Ana: You" in out
    assert "[user]\nAna → north: ok thanks\n[assistant]\nYou said: Ana → north: ok thanks\n" in out
    assert (
        "chat: 8 lines, 4 messages whole\n├── 0+1 Ana → north: Plan the launch for December" in out
    )
    assert "└── 7+1 north → Ana: You said: Ana → north: Who writes the copy?" in out
    assert "anthropic:claude-sonnet-4-5: " in out and " of 4 cache marks; prefix to cache " in out
    assert "no line '9+3' in thread 'chat'" in out
