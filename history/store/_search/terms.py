"""The words search indexes and looks for: folded, stemmed, with dates in words.

Both stores index the same terms, made here, so SQLite and PostgreSQL find and rank alike:

- a text's words are its runs of letters and digits (punctuation and `_` separate them, so
  `f1.pdf` is `f1` and `pdf`), lowercased, Latin letters without their accents (`é` is `e`;
  other scripts keep theirs), an ordinal's suffix dropped (`1st` is `1`);
- each word is reduced to its stem by the Snowball stemmer of the store's language
  (`researching` and `researched` are `research`), or kept as it is with `simple`;
- a message's `at` is indexed in words too, as its day, month name, year and weekday (`1 may
  2022 sunday`), so that a question naming a date finds it; a line has the words of the first
  and last days it covers.

In the store each thread's terms are numbered apart for each agent (`search_word`), so a search
reads the postings of one thread, not of every thread the store holds. Which languages there are
is `history._languages`'s, on the data floor, where the settings check theirs.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from functools import lru_cache

from ..._languages import SIMPLE

MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "after",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "been",
        "before",
        "being",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "done",
        "for",
        "from",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
    ]
)
"""English words a query leaves out when it has others: they are in nearly every message, so
they weigh next to nothing and would only make a search read more."""
_WORD = re.compile(r"[^\W_]+")
_SEPARATORS = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})
"""Every ASCII character that is not a letter or a digit, made a space: on an ASCII text,
splitting what this leaves is `_WORD` (three times as fast as the expression)."""
_MARK = re.compile(r"[\u0300-\u036f]")
"""A combining accent, which a text already in NFD may hold (typed apart from its letter)."""
_ORDINAL = re.compile(r"(\d+)(?:st|nd|rd|th)")
_ORDINAL_IN = re.compile(r"\d(?:st|nd|rd|th)")
"""Where a text has none, none of its words is an ordinal."""
_LATIN_ACCENT = re.compile(r"(?<=[A-Za-z])[\u0300-\u036f]+")
"""Accents on a Latin letter (after NFD); a lookbehind, so a long accented text is folded
without a group copied per letter (six times faster on a megabyte of them)."""


@lru_cache(maxsize=64)
def stemmer(language: str) -> Callable[[str], str]:
    if language == SIMPLE:
        return lambda word: word
    import snowballstemmer

    snowball = snowballstemmer.stemmer(language)

    @lru_cache(maxsize=65_536)
    def stem(word: str) -> str:
        # No stemmer changes a number (checked on every language in the tests), and numbers
        # are most of a chat's words that the cache has not seen: prices, ids, dates.
        if word.isascii() and word.isdigit():
            return word
        return str(snowball.stemWord(word))

    return stem


def words(text: str) -> list[str]:
    """A text's words as search compares them: folded and lowercased, not yet stemmed."""
    if text.isascii():  # no accents to fold, NFD and NFC leave it as it is
        folded = text.lower()
        found = folded.translate(_SEPARATORS).split()
    else:
        folded = _fold(text).lower()
        found = _WORD.findall(folded)
    if not _ORDINAL_IN.search(folded):  # no word can be an ordinal: none to look at
        return found
    return [_ordinal(word) if word[0].isdigit() else word for word in found]


def _fold(text: str) -> str:
    """`text` in NFC without the accents of its Latin letters. A text with nothing to
    decompose and no combining mark (dashes, quotes, arrows, emoji) is only put in NFC."""
    if unicodedata.is_normalized("NFD", text) and not _MARK.search(text):
        return unicodedata.normalize("NFC", text)
    return unicodedata.normalize("NFC", _LATIN_ACCENT.sub("", unicodedata.normalize("NFD", text)))


def _ordinal(word: str) -> str:
    match = _ORDINAL.fullmatch(word)
    return match[1] if match else word


def terms(text: str, language: str) -> list[str]:
    """A text's words, stemmed in `language`, in order, repeats kept."""
    return list(map(stemmer(language), words(text)))


def date_words(at: datetime) -> str:
    """A day in words, in UTC: `1 may 2022 sunday`."""
    return _day_words(at.astimezone(UTC).date())


def _day_words(day: date) -> str:
    return f"{day.day} {MONTHS[day.month - 1]} {day.year} {WEEKDAYS[day.weekday()]}"


def indexed(text: str, first: datetime, last: datetime, language: str) -> list[str]:
    """What is indexed for a message (`first` = `last` = its `at`) or a line over a span: the
    words of its days, then of its text."""
    return [
        *_days(first.astimezone(UTC).date(), last.astimezone(UTC).date(), language),
        *terms(text, language),
    ]


@lru_cache(maxsize=4_096)
def _days(first: date, last: date, language: str) -> tuple[str, ...]:
    """The stemmed words of a span's first and last days (one day once): a thread's messages
    share a few hundred days, so each is worded and stemmed once."""
    days = [first] if last == first else [first, last]
    return tuple(terms(" ".join(map(_day_words, days)), language))


def query_terms(query: str, language: str) -> dict[str, tuple[str, ...]]:
    """A query's stems, each with the words of the query that gave it, in the query's order.

    In English the stop words are left out, unless the query has nothing else.
    """
    stem = stemmer(language)
    found = words(query)
    if language in ("english", "porter"):
        found = [w for w in found if w not in STOP_WORDS] or found
    stems: dict[str, tuple[str, ...]] = {}
    for word in found:
        given = stems.setdefault(stem(word), ())
        if word not in given:
            stems[stem(word)] = (*given, word)
    return stems


def spaced(stems: Sequence[str]) -> str:
    """Terms as a row waiting for its postings holds them, a space on either side (` a  b `):
    counted whole by `" a ".count`, and split by the store into its postings."""
    if not stems:
        return ""
    return " " + "  ".join(stems) + " "
