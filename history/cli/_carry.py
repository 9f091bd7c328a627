"""`chat-outline export [THREAD] --out FILE` and `chat-outline load FILE`: a store's threads,
lines and recorded calls carried to another store as JSONL; what a store holds is skipped."""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import anyio

from ..errors import ConfigurationError, InputError
from ._options import THREAD_HELP, Commands, command, db_option, json_option
from ._output import print_json
from ._stores import must_exist, opened

if TYPE_CHECKING:
    from ..carry import Exported
    from ..store._records import ThreadRecords


def register(commands: Commands) -> None:
    export = command(
        commands,
        "export",
        _export,
        help="write a thread (or every thread) with its lines and calls to JSONL",
    )
    export.add_argument("thread", nargs="?", help=f"{THREAD_HELP} (every thread when left out)")
    export.add_argument(
        "--out",
        required=True,
        help="the JSONL file to write (a regular file, replaced whole, or a new one), or - for "
        "standard output",
    )
    db_option(export)
    json_option(export)

    load = command(
        commands,
        "load",
        _load,
        help="load an export into a store; what it holds already is skipped",
    )
    load.add_argument("file", type=Path, help="an export (JSONL), or - for standard input")
    db_option(load)
    json_option(load)


def _export(args: argparse.Namespace) -> int:
    from ..carry import export
    from ._report import resolve

    must_exist(args.db)
    if args.json and args.out == "-":
        raise ConfigurationError(
            "export --json prints its figures on stdout: write the export to a file with --out FILE"
        )
    if args.out != "-":
        _check_target(Path(args.out))

    async def to(out: TextIO) -> Exported:
        async with opened(args.db, create=True, read_only=True) as store:
            thread = None if args.thread is None else await resolve(store, args.thread)
            return await export(store, out, thread)

    if args.out == "-":
        try:
            done = anyio.run(to, sys.stdout)
        except BrokenPipeError:  # the reader stopped early (`| head`): not an error of ours
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
    else:
        try:
            done = _write_aside(Path(args.out), to)
        except OSError as exc:
            raise InputError(f"cannot write {args.out!r}: {exc.strerror or exc}") from None
    if args.json:
        print_json({"out": args.out, "threads": done.threads, "records": done.records})
    else:
        print(f"exported {done.threads} thread(s), {done.records} records", file=sys.stderr)
    return 0


def _check_target(target: Path) -> None:
    """Refuse what `--out` may not replace: a symbolic link (the file it points to would be
    replaced by a file of ours, or written through), and anything but a regular file (a FIFO,
    a device such as /dev/null, a directory). Write to standard output with `--out -`."""
    try:
        found = os.lstat(target)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(f"cannot write {str(target)!r}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(found.st_mode):
        raise InputError(
            f"--out {str(target)!r} is a symbolic link: name the file itself, or - for "
            "standard output",
            field="out",
        )
    if not stat.S_ISREG(found.st_mode):
        raise InputError(
            f"--out {str(target)!r} is not a regular file: name a file (it is replaced whole), "
            "or - for standard output",
            field="out",
        )


def _write_aside(target: Path, write: Callable[[TextIO], Awaitable[Exported]]) -> Exported:
    """Write a new file aside, then move it into place: a failed export leaves no partial file.

    The file aside is created afresh (`O_EXCL`, an unpredictable name, in the target's
    directory so the move is atomic): nothing planted there beforehand, a symbolic link say,
    is ever followed or written to.
    """
    fd, partial = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            done = anyio.run(write, out)
            out.flush()
            os.fsync(out.fileno())  # on disk before it replaces the old file
        _check_target(target)  # nothing put there meanwhile
        os.replace(partial, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
    return done


def _load(args: argparse.Namespace) -> int:
    return anyio.run(_load_records, args.db, _read(args.file), args.json)


def _read(path: Path) -> list[ThreadRecords]:
    from .._limits import lines_of
    from ..carry import read_records

    if str(path) == "-":
        return read_records(lines_of(sys.stdin.buffer, name="<stdin>"), source="<stdin>")
    try:
        with path.open("rb") as source:
            return read_records(lines_of(source, name=str(path)), source=str(path))
    except OSError as exc:
        raise InputError(f"cannot read {str(path)!r}: {exc.strerror}") from None


async def _load_records(db: str, records: list[ThreadRecords], as_json: bool) -> int:
    async with opened(db, create=True) as store:
        done = await store.load_records(records)
    if as_json:
        print_json(
            {"store": db, "threads": done.threads, "written": done.written, "skipped": done.skipped}
        )
        return 0
    print(
        f"loaded {done.threads} thread(s): {done.written} records written, {done.skipped} "
        "already stored"
    )
    return 0
