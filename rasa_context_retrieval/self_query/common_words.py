"""Whether a value is one of the commonest words of English ("first", "high", "new", "free").

A value of a field is usually a name or a term ("Lisbon", "diesel", "premium economy") and is a
filter wherever the user says it. Some values are also among the words every sentence uses: a
fare's cabin ``first`` ("in the first place"), a ticket's severity ``high`` ("at high risk").
Said bare, such a word is almost never the value: it needs a cue (its field's name or the noun
its description is about after it: "first class", "high severity"; a noun for the documents).

Word frequencies come from ``wordfreq`` (its data ships inside the package and is read offline),
on its Zipf scale: 6 is a word a million times in a billion words ("first"), 3 a thousand times.
Commonness alone does not make a value everyday ("sales", "dogs" and "red" are wanted as often
as not; see bench/results/self_query_rules.md for the threshold's trade-off), so only the very
commonest words are held back.
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
