"""Which texts of the conversation form the query vector of a follow-up, and with what weight.

Picking *words* from earlier turns (``heuristic.py``) was tuned on one benchmark and carried over
poorly to others. Mixing *embeddings* carries over better: the query vector of a follow-up is the
normalised weighted sum of the embeddings of a few texts, so a follow-up leans towards its
conversation without any word of it being guessed. The texts:

* the latest user message, weight 1: what the user asked now;
* the previous user question: what "it" or "and on iOS?" most likely refers to;
* the topic: the most recent earlier user message that stood alone, so a chain of short
  follow-ups ("and on Android?", "and on iOS?") keeps the subject it started from;
* the last bot message, weighted low: evidence of what was being discussed, without finding the
  same answer again (EnterpriseSearchPolicy's default query glues it on at full weight).

A message that looks standalone (``looks_like_follow_up`` says no) is searched alone: a complete
question needs no context, and mixing some in can only move it off its subject. Short statements
the user makes about themselves ("I live in Germany", "I'm on the Free plan") are scope, not
subject: they are never used as context (scope reaches the search as a filter, from slots or the
self-query, never as words or vectors).

Weights are round values chosen on TREC CAsT 2021 and 2022 together, with the sensitivity of each
reported in bench/results/conversational.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from addons.conversation import Conversation
from addons.rewrite.heuristic import (
    MIN_STANDALONE_CONTENT_WORDS,
    WORD_PATTERN,
    content_words,
    looks_like_follow_up,
)


class ContextModel(StrEnum):
    """How earlier turns reach the query of a follow-up."""

    WEIGHTED_TURNS = "weighted_turns"
    """The query vector mixes the embeddings of the latest message and a few earlier turns."""
    WORDS = "words"
    """The query is the words rewrite alone (``rewrite_heuristic``), embedded as one text."""


DEFAULT_CONTEXT_MODEL = ContextModel.WEIGHTED_TURNS

LATEST_WEIGHT = 1.0
PREVIOUS_QUESTION_WEIGHT = 0.2
TOPIC_WEIGHT = 0.1
LAST_BOT_WEIGHT = 0.1

# A statement about the user starts with one of these and is not a question.
FIRST_PERSON_OPENINGS = frozenset({"i", "i'm", "im", "i've", "my", "we", "we're", "our"})
SENTENCE_PATTERN = re.compile(r"[^.!?]+[.!?]*")


@dataclass(frozen=True)
class QueryText:
    """One text that goes into the query vector, with its weight."""

    text: str
    weight: float


def weighted_query_texts(conversation: Conversation) -> tuple[QueryText, ...]:
    """The texts whose weighted embeddings form the query vector, the latest message first.

    A first or standalone message gives only itself; an empty conversation gives ``()``.
    Never raises.
    """
    latest = conversation.latest_user_text
    if not latest.strip():
        return ()
    texts = [QueryText(latest, LATEST_WEIGHT)]
    earlier = [
        turn.text
        for turn in conversation.history
        if turn.role == "user" and not is_scope_statement(turn.text)
    ]
    if not earlier or not looks_like_follow_up(latest):
        return tuple(texts)
    previous = earlier[-1]
    texts.append(QueryText(previous, PREVIOUS_QUESTION_WEIGHT))
    topic = next((text for text in reversed(earlier) if not looks_like_follow_up(text)), None)
    if topic is not None and topic != previous:
        texts.append(QueryText(topic, TOPIC_WEIGHT))
    last_bot = next((t.text for t in reversed(conversation.history) if t.role == "bot"), "")
    if last_bot:
        texts.append(QueryText(last_bot, LAST_BOT_WEIGHT))
    return tuple(texts)


def is_scope_statement(message: str) -> bool:
    """Whether ``message`` only says something short about the user ("I live in Germany.").

    Every sentence must be a first-person statement (no question mark) with few content words;
    a message that also asks something ("I live in Germany. Can I get a refund?") is not scope
    alone, and a long first-person sentence usually names a subject ("I remember Glasgow
    hosting COP26 ...").
    """
    sentences = [part.strip() for part in SENTENCE_PATTERN.findall(message) if part.strip()]
    return bool(sentences) and all(_is_short_statement_about_user(part) for part in sentences)


def _is_short_statement_about_user(sentence: str) -> bool:
    words = WORD_PATTERN.findall(sentence.replace("’", "'"))
    if not words or sentence.rstrip().endswith("?"):
        return False
    opening = sentence.replace("’", "'").split()[0].lower().strip(",;:")
    return (
        opening in FIRST_PERSON_OPENINGS
        and len(content_words(sentence)) < MIN_STANDALONE_CONTENT_WORDS
    )
