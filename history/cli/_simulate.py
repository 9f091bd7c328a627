"""`chat-outline simulate FILE.jsonl`: the plugin's whole trace on a fresh store, the parity
contract (SPEC section 8) that the independent reference is checked against."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import anyio

from ._options import Commands, budgets, command, settings_of


def register(commands: Commands) -> None:
    simulate = command(
        commands,
        "simulate",
        _simulate,
        help="run the plugin on a fresh store over a JSONL file and print the trace",
    )
    simulate.add_argument("file", type=Path)
    simulate.add_argument("--json", action="store_true", help="print the trace as JSON")
    budgets(simulate)


def _simulate(args: argparse.Namespace) -> int:
    from .._limits import read_file, without_bom
    from .._trace import simulate

    settings = settings_of(args)
    try:
        data = without_bom(read_file(args.file))
    except OSError as exc:
        print(f"chat-outline: cannot read {str(args.file)!r}: {exc.strerror}", file=sys.stderr)
        return 2

    def report(number: int, reason: str) -> None:
        print(f"{args.file}:{number}: {reason}", file=sys.stderr)

    trace = anyio.run(lambda: simulate(data.split(b"\n"), settings, report=report))
    print(json.dumps(trace, ensure_ascii=False, indent=None if args.json else 2))
    return 0
