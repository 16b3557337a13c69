"""Whether a value is one of the commonest words of English ("first", "high", "new", "free").

Such a value said bare is almost never meant ("in the first place", "at high risk"): it needs a
cue ("first class"). Frequencies come from ``wordfreq`` (its data ships in the package), on its
Zipf scale: 6 is a million times in a billion words. Only the very commonest are held back:
"sales" or "red" are wanted as often as not (bench/results/self_query_rules.md).
"""

from __future__ import annotations

from functools import lru_cache

from rasa_context_retrieval.self_query import english

_LISTS = english.words("common_words")

COMMON_WORD_ZIPF = 5.5
"""At or above this, a one-word value needs a cue ("first" 6.1, "high" 5.8, "free" 5.7); below
it ("low" 5.3, "sales" 5.0, "garden" 4.6) it is a filter where the other rules say so."""


@lru_cache(maxsize=4096)
def is_common_word(word: str) -> bool:
    """Whether ``word`` (one word, any case) is among the commonest words of English."""
    if not word.isalpha():
        return False
    from wordfreq import zipf_frequency  # its word lists load on first use, once

    return zipf_frequency(word, _LISTS.LANGUAGE) >= COMMON_WORD_ZIPF


def load_word_frequencies() -> None:
    """Read the word lists now (about 0.3 s, once per process) rather than in the first search."""
    is_common_word("the")
