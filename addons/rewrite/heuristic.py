"""Turn a follow-up into a standalone search query without an LLM.

"How deadly is it?" retrieves nothing useful on its own: the subject lives in earlier turns.
EnterpriseSearchPolicy's default query (latest message + the bot's previous answer) drags a long
answer into the query, which mostly finds that answer again. This module keeps the user's message
as typed and, when it looks like a follow-up (a pronoun, an elided subject, very few content
words), appends the *content words* of earlier user turns: the first one (the topic the
conversation started with) and the previous one (the subject just discussed). Bot text is left out
by default: it is long and finds itself.

The result is a plain string, because it is shown to users and logged as ``metadata["query"]``;
anything that mixes embeddings instead of words would not be explainable there.

Every mode was measured on TREC CAsT 2021 (bench/cast2021.py, bench/results/cast2021.md);
``DEFAULT_MODE`` is the best of them there, the others stay selectable for comparison.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from enum import StrEnum

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from addons.conversation import Conversation, Turn


class RewriteMode(StrEnum):
    """How earlier turns contribute to the standalone query."""

    LATEST = "latest"
    """The latest user message alone."""
    PREVIOUS_USER = "previous_user"
    """Latest message + the previous user message."""
    FIRST_AND_PREVIOUS_USER = "first_and_previous_user"
    """Latest message + the first and the previous user messages."""
    ALL_USER = "all_user"
    """Latest message + every earlier user message."""
    TOPIC_WORDS = "topic_words"
    """Follow-ups only: latest + content words of the first and previous user messages."""
    TOPIC_WORDS_ALWAYS = "topic_words_always"
    """Like ``TOPIC_WORDS`` but for every message, follow-up or not."""
    FREQUENT_WORDS = "frequent_words"
    """Follow-ups only: latest + content words of all user messages, most repeated first."""
    TOPIC_AND_BOT_WORDS = "topic_and_bot_words"
    """Like ``TOPIC_WORDS`` plus the most repeated content words of the last bot message."""


DEFAULT_MODE = RewriteMode.TOPIC_WORDS

# Words that carry the conversation, not the subject ("wow", "tell me more").
DIALOGUE_WORDS = frozenset(
    {
        "wow",
        "cool",
        "ok",
        "okay",
        "really",
        "thanks",
        "thank",
        "great",
        "interesting",
        "tell",
        "know",
        "want",
        "like",
        "let",
        "let's",
        "talk",
        "learn",
        "hmm",
        "oh",
        "yes",
        "sure",
        "good",
        "nice",
        "just",
        "did",
        "does",
        "explain",
        "about",
        "more",
    }
)
STOP_WORDS = ENGLISH_STOP_WORDS | DIALOGUE_WORDS

# Words that point back at something said earlier.
ANAPHORA = frozenset(
    {
        "it",
        "its",
        "it's",
        "itself",
        "they",
        "them",
        "their",
        "theirs",
        "themselves",
        "this",
        "that",
        "these",
        "those",
        "he",
        "him",
        "his",
        "she",
        "her",
        "hers",
        "there",
        "such",
        "one",
        "ones",
        "other",
        "others",
        "same",
        "former",
        "latter",
    }
)
# Openings of an elliptical follow-up ("and for Android?", "what about the price?").
ELLIPSIS_OPENINGS = ("and ", "or ", "what about ", "how about ", "also ", "but ", "so ")

# A message with fewer content words than this is too thin to stand alone.
MIN_STANDALONE_CONTENT_WORDS = 3
# Cap on words carried over, so a long history cannot drown the user's own words.
MAX_CARRIED_WORDS = 12
# Cap on words taken from a bot message (long answers otherwise flood the query).
MAX_BOT_WORDS = 4

WORD_PATTERN = re.compile(r"[^\W_](?:[\w'’-]*[^\W_])?")


def standalone_query(conversation: Conversation, mode: RewriteMode = DEFAULT_MODE) -> str:
    """A search query for the latest user message that makes sense without the conversation.

    A standalone question comes back unchanged; a follow-up comes back as typed, followed by
    words from earlier turns. Never raises; an empty conversation gives ``""``.
    """
    latest = conversation.latest_user_text
    earlier_user = [turn.text for turn in conversation.history if turn.role == "user"]
    if mode is RewriteMode.LATEST or not earlier_user:
        return latest
    if mode is RewriteMode.PREVIOUS_USER:
        return _join(latest, earlier_user[-1:])
    if mode is RewriteMode.FIRST_AND_PREVIOUS_USER:
        return _join(latest, _unique([earlier_user[0], earlier_user[-1]]))
    if mode is RewriteMode.ALL_USER:
        return _join(latest, list(reversed(earlier_user)))
    if mode is not RewriteMode.TOPIC_WORDS_ALWAYS and not looks_like_follow_up(latest):
        return latest
    if mode is RewriteMode.FREQUENT_WORDS:
        carried = _most_repeated(earlier_user)
    else:
        carried = _content_words(" ".join(_unique([earlier_user[0], earlier_user[-1]])))
    if mode is RewriteMode.TOPIC_AND_BOT_WORDS:
        carried += _most_repeated(_last_bot_text(conversation.history))[:MAX_BOT_WORDS]
    return _join(latest, [" ".join(_new_words(carried, latest)[:MAX_CARRIED_WORDS])])


def looks_like_follow_up(message: str) -> bool:
    """Whether ``message`` leans on earlier turns: a pronoun, an elided subject, or too short."""
    lowered = message.lower().strip()
    words = [word.lower() for word in WORD_PATTERN.findall(message)]
    if any(word in ANAPHORA for word in words) or lowered.startswith(ELLIPSIS_OPENINGS):
        return True
    return len(_content_words(message)) < MIN_STANDALONE_CONTENT_WORDS


def _content_words(text: str) -> list[str]:
    """Words that carry the subject, in order, first spelling kept, duplicates dropped."""
    return _unique(word for word in WORD_PATTERN.findall(text) if _is_content_word(word.lower()))


def _is_content_word(lowered: str) -> bool:
    return (
        lowered not in STOP_WORDS
        and lowered not in ANAPHORA
        and (len(lowered) > 1 or lowered.isdigit())
    )


def _most_repeated(texts: Sequence[str] | str) -> list[str]:
    """Content words across ``texts``, most frequent first, ties by first appearance."""
    texts = [texts] if isinstance(texts, str) else texts
    words = [word for text in texts for word in WORD_PATTERN.findall(text)]
    counts: dict[str, int] = {}
    spelling: dict[str, str] = {}
    for word in words:
        key = word.lower()
        if _is_content_word(key):
            counts[key] = counts.get(key, 0) + 1
            spelling.setdefault(key, word)
    ranked = sorted(counts, key=lambda key: -counts[key])  # stable: ties keep first appearance
    return [spelling[key] for key in ranked]


def _last_bot_text(history: Sequence[Turn]) -> str:
    return next((turn.text for turn in reversed(history) if turn.role == "bot"), "")


def _new_words(words: Iterable[str], message: str) -> list[str]:
    """``words`` not already in ``message`` (case-insensitive), duplicates dropped."""
    present = {word.lower() for word in WORD_PATTERN.findall(message)}
    return [word for word in _unique(words) if word.lower() not in present]


def _unique(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    kept: list[str] = []
    for item in items:
        if item.lower() not in seen:
            seen.add(item.lower())
            kept.append(item)
    return kept


def _join(latest: str, context: Sequence[str]) -> str:
    return " ".join(part for part in (latest, *context) if part.strip())
