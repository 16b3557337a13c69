"""Turn a follow-up into a standalone search query without an LLM.

"How deadly is it?" retrieves nothing useful on its own: the subject lives in earlier turns.
EnterpriseSearchPolicy's default query (latest message + the bot's previous answer) drags a whole
answer into the query, which mostly finds that same answer again. This module keeps the user's
message as typed and, only when it looks like a follow-up (a pronoun, an elided subject, very few
content words), appends a few *content words* from earlier turns:

* the subject of the previous question, as that question was itself made standalone: a chain of
  follow-ups ("the Premium plan?" -> "does it include roaming?" -> "and the cancellation
  period?") keeps the subject it started from;
* the two words the bot's last answer repeats most (its subject, e.g. "soy milk"), never more:
  a whole answer would drown the question.

A facet swap that names its thing beside a word an earlier turn used with an alternative ("and
for the business account?" after "... on a personal account") carries no word it replaces
("personal"): carried along, the alternative pulls the search back to what the user moved away
from (``swapped_facets``).

The result is a plain string, because it is shown to users and logged as ``metadata["query"]``;
mixing embeddings instead of words could not be shown there.

Every mode was measured on TREC CAsT 2021 (bench/cast2021.py, bench/results/cast2021.md) and,
with the context models, on CAsT 2021 and 2022 together (bench/conversational.py).
``DEFAULT_MODE`` (``CHAINED_WORDS``) keeps the subject along a chain of follow-ups; alone it
is no better than ``PREVIOUS_WORDS``, but as the words view fused with the mixed turns
(``rewrite/context.py``) it is the best on both sets. ``PREVIOUS_WORDS`` ranks the answer first
most often on 2021 alone; ``CHAINED_AND_BOT_WORDS`` finds it in the top 5 most often. All stay
selectable with ``rewrite_heuristic``.

Tokenisation is a regular expression plus scikit-learn's English stop words (and a few dialogue
words such as "wow", "okay"): content words need no tagger or parser, so none is loaded. The
English words are phrase data in ``follow_up.yaml`` (section ``rewrite``), beside the follow-up
decision's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from enum import StrEnum

from rasa_context_retrieval import phrase_data
from rasa_context_retrieval.conversation import Conversation, Turn
from rasa_context_retrieval.follow_up import (
    MIN_STANDALONE_CONTENT_WORDS,
    Stage,
    answers_the_bot,
    content_words,
    follows_up,
    is_content_word,
    is_greeting,
    opens_elliptically,
    sentences,
    unique_words,
    word_tokens,
)


class RewriteMode(StrEnum):
    """How earlier turns contribute to the standalone query."""

    LATEST = "latest"
    """The latest user message alone."""
    PREVIOUS_WORDS = "previous_words"
    """Follow-ups: latest + content words of the previous user message."""
    TOPIC_WORDS = "topic_words"
    """Follow-ups: latest + content words of the first and the previous user messages."""
    CHAINED_WORDS = "chained_words"
    """Follow-ups: latest + content words of the previous user message made standalone."""
    CHAINED_AND_BOT_WORDS = "chained_and_bot_words"
    """Like ``CHAINED_WORDS`` plus the words the bot's last message repeats most."""


DEFAULT_MODE = RewriteMode.CHAINED_WORDS

COMMON_SHARE = 0.25
"""A word held by more than this share of the knowledge base's chunks is common there."""
COMMON_RARITY = math.log(1 / COMMON_SHARE)
"""BM25's IDF of a word held by ``COMMON_SHARE`` of the chunks (about ``log(1 / share)``)."""

WordRarity = Callable[[str], float]
"""How distinctive a word is in the knowledge base (higher: rarer); 0 for a word it lacks."""

# A facet swap names its thing and the word it modifies, and little else ("and for the business
# account?"); a longer message that opens with "and" asks something new ("and how many devices
# can I connect?"), and a word pair in it would swap a word of the question before by chance.
SWAP_MAX_CONTENT_WORDS = 3
# Words carried from earlier user turns: more raise top-10 recall on CAsT but pull the first hit
# towards the passage that answered the earlier turn (measured: 4 is the best balance).
MAX_CARRIED_WORDS = 4
# Words taken from the bot's last message, and how often it must repeat them to count.
MAX_BOT_WORDS = 2
MIN_BOT_WORD_REPEATS = 2

WORDS = phrase_data.words("rewrite")
"""The rewrite's word lists in ``follow_up.yaml`` (the openings of a statement about the user)."""


def standalone_query(
    conversation: Conversation,
    mode: RewriteMode = DEFAULT_MODE,
    rarity: WordRarity | None = None,
) -> str:
    """A search query for the latest user message that makes sense without the conversation.

    A standalone question comes back unchanged; a follow-up, or an answer to the bot's
    clarifying question (``follow_up.answers_the_bot``), comes back as typed, followed by
    words from earlier turns: the ``MAX_CARRIED_WORDS`` most distinctive by ``rarity`` (the
    knowledge base's own statistics, ``retrieve.lexical``), or the first ones without it.
    Never raises; an empty conversation gives ``""``.
    """
    latest = conversation.latest_user_text
    earlier_user = earlier_user_texts(conversation)
    last_bot = _last_bot_text(conversation.history)
    if mode is RewriteMode.LATEST or not earlier_user:
        return latest
    if not (looks_like_follow_up(latest) or answers_the_bot(latest, last_bot)):
        return latest
    if mode is RewriteMode.PREVIOUS_WORDS:
        context = content_words(earlier_user[-1])
    elif mode is RewriteMode.TOPIC_WORDS:
        context = content_words(" ".join(unique_words([earlier_user[0], earlier_user[-1]])))
    else:
        context = _chained_context(earlier_user, latest, rarity)
    contrasted = swapped_facets(latest, [earlier_user[-1], last_bot])
    carried = [word for word in _new_words(context, latest) if word.lower() not in contrasted]
    carried = most_distinctive(carried, MAX_CARRIED_WORDS, rarity)
    if mode is RewriteMode.CHAINED_AND_BOT_WORDS:
        bot_words = _repeated_words(last_bot)
        carried += _new_words(bot_words, " ".join([latest, *carried]))[:MAX_BOT_WORDS]
    return " ".join([latest, *carried]) if carried else latest


def earlier_user_texts(conversation: Conversation) -> list[str]:
    """The user's earlier messages that can give a follow-up its subject, oldest first.

    Statements about the user are cut (they are scope, ``without_scope_statements``), and a
    greeting ("hi", "hello there") is no context: it must not add its words to a complete
    question after it ("... my gas debt? hello"). Other messages without a subject ("ok")
    stay: they close an exchange.
    """
    return [
        text
        for turn in conversation.history
        if turn.role == "user"
        and (text := without_scope_statements(turn.text))
        and not is_greeting(text)
    ]


def looks_like_follow_up(message: str) -> bool:
    """The rewrite's answer to the one follow-up decision (``follow_up.follows_up``)."""
    return follows_up(message, Stage.REWRITE)


def without_scope_statements(message: str) -> str:
    """``message`` minus its short statements about the user ("I live in Germany.").

    Such a statement is scope, not subject: it reaches the search as a filter (slots, the
    self-query), never as context for a later follow-up. A statement counts when it is a
    first-person sentence without a question mark and with few content words; a long one usually
    names a subject ("I remember Glasgow hosting COP26 last year ...") and stays.
    """
    said = sentences(message)
    kept = [part for part in said if not _is_statement_about_user(part)]
    return message if len(kept) == len(said) else " ".join(kept)


def _is_statement_about_user(sentence: str) -> bool:
    words = sentence.replace("’", "'").split()
    if not words or sentence.endswith("?"):
        return False
    opening = words[0].lower().strip(",;:")
    request = {word.lower() for word in word_tokens(sentence)[1:3]} & WORDS.REQUEST_WORDS
    return (
        opening in WORDS.FIRST_PERSON_OPENINGS
        and not request
        and len(content_words(sentence)) < MIN_STANDALONE_CONTENT_WORDS
    )


def _chained_context(
    user_messages: Sequence[str], latest: str, rarity: WordRarity | None = None
) -> list[str]:
    """Content words that ``latest`` draws on: the last of ``user_messages`` as made standalone.

    Each message is made standalone from the one before (oldest first), so the subject of a
    chain of follow-ups travels along; linear in the number of messages. A message that swaps
    one facet ("and on iOS?" after "and on Android?") draws on what the message it varies drew
    on: the facet it replaces is not carried.
    """
    context: list[str] = []
    base: list[str] = []  # what a facet swap in the next message draws on
    for message in user_messages:
        carried = _new_words(base if swaps_a_facet(message) else context, message)
        words = content_words(message)
        kept = most_distinctive(carried, MAX_CARRIED_WORDS, rarity)
        context = words + (kept if looks_like_follow_up(message) else [])
        if not swaps_a_facet(message):
            base = context
    return base if swaps_a_facet(latest) else context


def most_distinctive(words: Sequence[str], count: int, rarity: WordRarity | None) -> list[str]:
    """The first ``count`` of ``words`` once the knowledge base's common words among them are
    dropped, the most common first, as far as needed to get down to ``count``.

    A common word (held by more than ``COMMON_SHARE`` of the chunks, by ``rarity``) names no
    subject there ("use" in a bank's help centre) and takes the place of one that does
    ("abroad"). Only common words give way: reordering every word by rarity cost TREC CAsT
    2022 0.017 MRR (0.570 against 0.587), dropping words held by a tenth of the chunks 0.004,
    by a quarter nothing; the example eval gains the same with each. Without ``rarity``, the
    first ``count``.
    """
    if rarity is None or len(words) <= count:
        return list(words[:count])
    scores = [rarity(word) for word in words]
    common = [position for position, score in enumerate(scores) if 0 < score < COMMON_RARITY]
    common.sort(key=lambda position: scores[position])
    dropped = set(common[: len(words) - count])
    return [word for position, word in enumerate(words) if position not in dropped][:count]


def swaps_a_facet(message: str) -> bool:
    """An ellipsis that names one thing in place of an earlier one ("and on iOS?")."""
    return opens_elliptically(message) and len(content_words(message)) <= 1


def swapped_facets(message: str, earlier: Sequence[str]) -> dict[str, str]:
    """What a facet swap replaces: each word of ``earlier`` (lowercased) that the message
    replaces, mapped to the message's word in its place.

    "and for the business account?" after "The overdraft on a personal account ..." gives
    ``{"personal": "business"}``: a swap names the thing it means where an earlier text named
    its alternative, both modifying the same word ("business account", "personal account").
    Carried along, the alternative would pull the search back to what the user moved away
    from. Only messages that open like a swap ("and ...", "what about ...") count; any other
    gives ``{}``.
    """
    if not opens_elliptically(message):
        return {}
    if len(content_words(message)) > SWAP_MAX_CONTENT_WORDS:
        return {}
    own = {head: modifier for modifier, head in _modifier_pairs(message)}
    mentioned = {_stem(word) for word in word_tokens(message)}
    return {
        modifier.lower(): own[head]
        for text in earlier
        for modifier, head in _modifier_pairs(text)
        if head in own and _stem(modifier) not in mentioned
    }


def swapped_question(message: str, question: str, earlier: Sequence[str]) -> str | None:
    """``question`` asked again with the facets ``message`` swaps ("What does a personal
    overdraft cost?" -> "What does a business overdraft cost?"), or ``None`` when it names
    none of them: a swap asks the question before about another thing."""
    swaps = swapped_facets(message, [question, *earlier])
    if not swaps:
        return None
    pattern = re.compile(r"\b(" + "|".join(re.escape(word) for word in swaps) + r")\b", re.I)
    swapped = pattern.sub(lambda match: swaps[match.group(0).lower()], question)
    return swapped if swapped != question else None


def swapped_answer(message: str, answer: str, earlier: Sequence[str]) -> str | None:
    """The sentences of the bot's ``answer`` that name a facet ``message`` swaps, with the
    swap made ("In the US, yearly subscriptions have ..." -> "In the US, monthly subscriptions
    have ..." for "what about monthly subscriptions?"), or ``None`` when no sentence names one.

    Used when the question before does not name the facet and only the answer did: the
    follow-up then asks the answer's statement again about the other thing. Only the sentences
    that name it are kept, so a long answer (a whole passage) does not drown the message.
    """
    swaps = swapped_facets(message, [answer, *earlier])
    if not swaps:
        return None
    pattern = re.compile(r"\b(" + "|".join(re.escape(word) for word in swaps) + r")\b", re.I)
    named = [part for part in sentences(answer) if pattern.search(part)]
    if not named:
        return None
    swap = lambda match: swaps[match.group(0).lower()]  # noqa: E731
    return " ".join(pattern.sub(swap, part) for part in named)


def _modifier_pairs(text: str) -> list[tuple[str, str]]:
    """Adjacent content words (the modifier as spelt, the head stemmed): "personal account".

    Both must be words, not numbers: in "files 7" or "iOS 17" the number names no facet, and
    read as a head it would pair any two texts that share a number.
    """
    words = word_tokens(text)
    return [
        (first, _stem(second))
        for first, second in zip(words, words[1:], strict=False)
        if _is_facet_word(first) and _is_facet_word(second)
    ]


def _is_facet_word(word: str) -> bool:
    return is_content_word(word.lower()) and not any(char.isdigit() for char in word)


def _stem(word: str) -> str:
    """A plural's singular, crudely ("accounts" -> "account"): enough to match a repeated noun."""
    lowered = word.lower()
    return lowered[:-1] if len(lowered) > 3 and lowered.endswith("s") else lowered


def _repeated_words(text: str) -> list[str]:
    """Content words ``text`` repeats, most repeated first, ties by first appearance."""
    counts: dict[str, int] = {}
    spelling: dict[str, str] = {}
    for word in word_tokens(text):
        key = word.lower()
        if is_content_word(key):
            counts[key] = counts.get(key, 0) + 1
            spelling.setdefault(key, word)
    repeated = [key for key in counts if counts[key] >= MIN_BOT_WORD_REPEATS]
    repeated.sort(key=lambda key: -counts[key])  # stable: ties keep first appearance
    return [spelling[key] for key in repeated]


def _last_bot_text(history: Sequence[Turn]) -> str:
    return next((turn.text for turn in reversed(history) if turn.role == "bot"), "")


def _new_words(words: Iterable[str], message: str) -> list[str]:
    """``words`` not already in ``message`` (case-insensitive), duplicates dropped."""
    present = {word.lower() for word in word_tokens(message)}
    return [word for word in unique_words(words) if word.lower() not in present]
