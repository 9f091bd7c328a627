"""Display names: who an author is shown as, and how a name is put into a text that holds
another (docs/generations.md, sections 2 and 3.2). A message keeps its author as given."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace

from ._generated import Name
from .contract import Message
from .errors import InputError
from .lines import line_of

Display = Mapping[str, str]
"""An author's display name by id, for the authors that have one in a thread."""


def display(names: Iterable[Name], thread: str) -> dict[str, str]:
    """The names that apply in `thread`: its own over the store-wide ones, those that differ
    from the id only."""
    found = {n.author: n.name for n in names if n.thread == ""}
    found |= {n.author: n.name for n in names if n.thread == thread}
    return {author: name for author, name in found.items() if name != author}


def shown_as(author: str, names: Display) -> str:
    return names.get(author, author)


def named(m: Message, names: Display) -> Message:
    """The message with its author and `to` as their display names: for its line and header."""
    if not names or (m.author not in names and m.to not in names):
        return m
    return replace(m, author=shown_as(m.author, names), to=shown_as(m.to, names))


def named_line(m: Message, names: Display) -> str:
    """`line_of(m)` under the names."""
    return line_of(named(m, names))


def whole_word(text: str, old: str, new: str) -> str:
    """`text` with `old` replaced by `new` wherever it stands as a whole word: neither the
    character before it nor the one after it is a word character (`str.isalnum()` or `_`)."""
    if not old:
        return text
    return re.sub(rf"(?<!\w){re.escape(old)}(?!\w)", lambda _: new, text)


def whole_words(text: str, names: Display) -> str:
    """`text` with each id of `names` that stands as a whole word replaced by its name, all at
    once: at each position the longest such id, left to right."""
    ids = sorted((i for i in names if i), key=lambda i: (-len(i), i))
    if not ids:
        return text
    pattern = "|".join(re.escape(i) for i in ids)
    return re.sub(rf"(?<!\w)(?:{pattern})(?!\w)", lambda found: names[found[0]], text)


def check_name(name: object) -> str:
    """A display name as a rename takes it; anything else is an InputError naming it."""
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"a name must be a non-empty string, got {name!r}", field="name")
    if any(c in name for c in "\r\n\x00"):
        raise InputError(f"a name must be one line without NUL, got {name!r}", field="name")
    return name


def named_query(query: str, names: Display) -> str:
    """A search query with the id of each author whose display name it holds (as whole words,
    case aside) added: lines and messages keep their ids in the search index."""
    ids = [
        author
        for author, name in names.items()
        if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", query, re.IGNORECASE)
    ]
    return " ".join([query, *ids])
