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
subject: they are cut from earlier messages before those serve as context (scope reaches the
search as a filter, from slots or the self-query, never as words or vectors).

Weights are round values chosen on TREC CAsT 2021 and 2022 together, with the sensitivity of each
reported in bench/results/conversational.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from rasa_context_retrieval.conversation import Conversation
from rasa_context_retrieval.rewrite.heuristic import (
    content_words,
    looks_like_follow_up,
    without_scope_statements,
)


class ContextModel(StrEnum):
    """How earlier turns reach the query of a follow-up."""

    WEIGHTED_TURNS = "weighted_turns"
    """The query vector mixes the embeddings of the latest message and a few earlier turns."""
    WORDS = "words"
    """The query is the words rewrite alone (``rewrite_heuristic``), embedded as one text."""


DEFAULT_CONTEXT_MODEL = ContextModel.WEIGHTED_TURNS

LATEST_WEIGHT = 1.0


@dataclass(frozen=True)
class ContextWeights:
    """Weight of each earlier text relative to the latest message's 1.0."""

    previous_question: float = 0.2
    topic: float = 0.1
    last_bot: float = 0.1


DEFAULT_WEIGHTS = ContextWeights()

ELLIPSIS_CONTENT_WORDS = 1
"""A follow-up with at most this many content words ("and on Android?", "how much does it
cost?") names almost nothing itself; the subject's words join it (``weighted_query_texts``)."""


@dataclass(frozen=True)
class QueryText:
    """One text that goes into the query vector, with its weight."""

    text: str
    weight: float


def is_elliptical(text: str) -> bool:
    """A message that names at most one thing itself ("and on Android?")."""
    return len(content_words(text)) <= ELLIPSIS_CONTENT_WORDS


def weighted_query_texts(
    conversation: Conversation, weights: ContextWeights = DEFAULT_WEIGHTS
) -> tuple[QueryText, ...]:
    """The texts whose weighted embeddings form the query vector, the latest message first.

    A first or standalone message gives only itself; an empty conversation gives ``()``.
    An elliptical follow-up ("how much does it cost?") is led by itself plus the content words
    of the conversation's subject: the topic and the follow-ups since ("how much does it cost?
    enable offline files Android"). Alone it names no subject, and its embedding would outweigh
    the context. Never raises.
    """
    latest = conversation.latest_user_text
    if not latest.strip():
        return ()
    earlier = _earlier_user_texts(conversation)
    if not earlier or not looks_like_follow_up(latest):
        return (QueryText(latest, LATEST_WEIGHT),)
    previous = earlier[-1]
    topic = next((text for text in reversed(earlier) if not looks_like_follow_up(text)), None)
    lead = latest
    if is_elliptical(latest):
        lead = " ".join([latest, *_subject_words(earlier, topic)])
    texts = [QueryText(lead, LATEST_WEIGHT), QueryText(previous, weights.previous_question)]
    if topic is not None and topic != previous:
        texts.append(QueryText(topic, weights.topic))
    last_bot = next((t.text for t in reversed(conversation.history) if t.role == "bot"), "")
    if last_bot:
        texts.append(QueryText(last_bot, weights.last_bot))
    return tuple(text for text in texts if text.weight > 0)


def _subject_words(earlier: list[str], topic: str | None) -> list[str]:
    """Content words of the topic and of every user message after it, first spelling kept."""
    start = len(earlier) - 1 - earlier[::-1].index(topic) if topic in earlier else len(earlier) - 1
    return content_words(" ".join(earlier[start:]))


def _earlier_user_texts(conversation: Conversation) -> list[str]:
    """The user's earlier messages, with statements about the user cut (they are scope)."""
    return [
        text
        for turn in conversation.history
        if turn.role == "user" and (text := without_scope_statements(turn.text))
    ]
