"""`ingest --name AUTHOR=NAME`: display names given with an import, checked before anything is
stored and set once its messages are processed (docs/generations.md, section 2)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from .._names import check_name
from ..contract import Message
from ..errors import HistoryError, InputError
from ..ingest import Parsed


def author_name(text: str) -> tuple[str, str]:
    """An argparse type: `AUTHOR=NAME`."""
    author, equals, name = text.partition("=")
    if not equals:
        raise argparse.ArgumentTypeError(f"must be AUTHOR=NAME, got {text!r}")
    try:
        return author, check_name(name)
    except HistoryError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


async def check_names(db: str, files: Sequence[Parsed], names: Sequence[tuple[str, str]]) -> None:
    """Refuse, before anything is stored, a name for an author neither the files nor the store
    has, two names for one author, or a name another author shows as."""
    from .._names import display
    from ..store import open_store

    store = open_store(db)
    await store.open()
    try:
        known = await store.authors()
        shown = display([n for n in await store.names() if not n.thread], "")
    finally:
        await store.close()
    for parsed in files:
        for record in parsed.records:
            if isinstance(record.event, Message):
                known |= {record.event.author, record.event.to} - {""}
    given = dict(names)
    if len(given) < len(names):
        raise InputError("--name names one author twice", field="name")
    for author, name in names:
        if author not in known:
            raise InputError(f"--name {author}={name}: no message is by or to {author!r}")
        others = {shown.get(o, o) if o not in given else given[o] for o in known - {author}}
        if name in others:
            raise InputError(f"--name {author}={name}: another author is shown as {name!r}")


async def give_names(db: str, names: Sequence[tuple[str, str]]) -> None:
    """Set the names once the import is processed; each thread's agents take them at once."""
    from ..plugin import History
    from ..settings import HistorySettings

    async with History(HistorySettings(summarizer="echo"), store=db, process=False) as history:
        for author, name in names:
            await history.rename(author, name, now=True)
