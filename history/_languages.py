"""The languages search stems words in, which the `search_language` setting names: Snowball's,
and `simple` for none.

On the data floor, below the store's search package that stems (`history.store._search.terms`):
the settings check the language they are given when they are made, and they never import the
store.
"""

from __future__ import annotations

from .errors import ConfigurationError

DEFAULT_LANGUAGE = "english"
SIMPLE = "simple"
"""The language that stems nothing: words are matched as they are written."""


def languages() -> tuple[str, ...]:
    """The languages search can stem, and `simple`."""
    import snowballstemmer  # its import loads every language's stemmer: only where needed

    return (SIMPLE, *snowballstemmer.algorithms())


def check_language(language: object) -> str:
    """`language` if search knows it; a ConfigurationError naming the known ones if not."""
    if not isinstance(language, str) or language not in languages():
        raise ConfigurationError(
            f"search_language must be one of {', '.join(languages())}; got {language!r}"
        )
    return language
