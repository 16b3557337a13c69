"""Which texts of the conversation form the query vectors of a follow-up, and with what weight.

Picking *words* from earlier turns (``heuristic.py``) was tuned on one benchmark and carried over
poorly to others. Mixing *embeddings* carries over better: a query vector can be the normalised
weighted sum of the embeddings of a few texts, so a follow-up leans towards its conversation
without any word of it being guessed. Each alone misses what the other finds: the words name the
subject of a chain of follow-ups but guess, the mixed turns never guess but blur the subject.

The default (``words_and_turns``) searches two *views* of a follow-up and fuses their rankings by
rank (``retrieve/fusion.py``), like the rankings of LLM paraphrases:

* the turns: the latest user message as typed (weight 1), mixed with the previous user question
  (what "it" most likely refers to) and, weighted low, the last bot message (evidence of what
  was being discussed, without finding the same answer again: EnterpriseSearchPolicy's default
  query glues it on at full weight). A message that names at most one thing ("and on
  Android?") is led by itself plus the subject's words, or its own embedding would outweigh
  the context; so is the answer to a question the bot asked ("Which card do you have?" ...
  "the gold one"): the search is about the user's question before it, qualified by the
  answer. A facet swap that names the thing it means beside a word an earlier turn used
  with its alternative ("and for the business account?" after "... on a personal account")
  asks the previous question again about that thing: it is led by itself plus that question
  with the alternative replaced ("What does a business overdraft cost?"), which also stands
  in for the previous question. Its own two words alone find the thing in general, not the
  aspect just discussed. This view leads: relevance scores are cosines to it;
* the words: the standalone query (``rewrite_heuristic``, by default the chained words, which
  keep the subject of "and on Android?" ... "and on iOS?"), as one text.

Both views are mixes of texts the search embeds anyway, so fusing costs a second index search,
never a further embedding. ``weighted_turns`` (one mixed vector with the topic and a special
lead for elliptical messages) and ``words`` (the words alone) stay selectable for comparison.

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
from rasa_context_retrieval.follow_up import (
    answers_the_bot,
    clarifying_question,
    is_complete_question,
)
from rasa_context_retrieval.rewrite.heuristic import (
    content_words,
    earlier_user_texts,
    looks_like_follow_up,
    swapped_answer,
    swapped_question,
)


class ContextModel(StrEnum):
    """How earlier turns reach the query of a follow-up."""

    WORDS_AND_TURNS = "words_and_turns"
    """Two views fused by rank: the message mixed with earlier turns, and the words rewrite."""
    WEIGHTED_TURNS = "weighted_turns"
    """One query vector mixing the latest message with the topic and a few earlier turns."""
    WORDS = "words"
    """The query is the words rewrite alone (``rewrite_heuristic``), embedded as one text."""


DEFAULT_CONTEXT_MODEL = ContextModel.WORDS_AND_TURNS

LATEST_WEIGHT = 1.0


@dataclass(frozen=True)
class ContextWeights:
    """Weight of each earlier text relative to the latest message's 1.0."""

    previous_question: float = 0.2
    topic: float = 0.1
    last_bot: float = 0.1
    previous_answer: float = 0.0
    """Not a text of the mix: the weight of the previous answer's document as one more ranking
    (``retrieve.answer_prior``), found by the last bot message's vector (so only with
    ``last_bot`` above 0)."""


DEFAULT_WEIGHTS = ContextWeights()

PREVIOUS_ANSWER_WEIGHT = 0.0
"""The previous answer's document next to the search's own ranking (1): off by default. Measured
on the dev halves of three help centres (bench/results/grounded_all.md), it helped one (energy)
and hurt the other two on follow-ups and switches; an assistant whose follow-ups stay within
one document can set ``context_weights: {previous_answer: 0.03}``."""

TURNS_VIEW_WEIGHTS = ContextWeights(
    previous_question=0.1, topic=0.0, last_bot=0.1, previous_answer=PREVIOUS_ANSWER_WEIGHT
)
"""The turns view of ``words_and_turns``: a tenth each for the previous question and the last
bot message; no topic, the words view carries the subject."""

ELLIPSIS_CONTENT_WORDS = 1
"""A follow-up with at most this many content words ("and on Android?", "how much does it
cost?") names almost nothing itself; the subject's words join it (``weighted_query_texts``)."""


@dataclass(frozen=True)
class QueryText:
    """One text that goes into the query vector, with its weight."""

    text: str
    weight: float


QueryView = tuple[QueryText, ...]
"""The texts whose weighted embeddings, summed and normalised, form one query vector."""


def query_views(
    conversation: Conversation,
    searched: str,
    model: ContextModel = DEFAULT_CONTEXT_MODEL,
    *,
    message_searched: bool = True,
    weights: ContextWeights | None = None,
) -> tuple[QueryView, ...]:
    """The views whose rankings are fused, the leading one (it scores relevance) first.

    ``searched`` is the text the search matches: the standalone query, minus filter words when
    the self-query removed some. ``message_searched`` says whether it is still the words rewrite
    of the message as typed; when it is not (filter words removed, an LLM's query), it leads
    the turns instead of the message, whose filter words would pull towards the filter's values.
    A standalone or first message gives one view of ``searched`` alone. ``weights`` replaces
    the model's own (benchmarks measure their sensitivity). Never raises.
    """
    alone: QueryView = (QueryText(searched, LATEST_WEIGHT),)
    if model is ContextModel.WORDS or not searched.strip():
        return (alone,)
    if weights is None:
        fused = model is ContextModel.WORDS_AND_TURNS
        weights = TURNS_VIEW_WEIGHTS if fused else DEFAULT_WEIGHTS
    texts = weighted_query_texts(conversation, weights)
    if len(texts) < 2:
        return (alone,)
    lead = texts[0].text if message_searched else searched
    turns = (QueryText(lead, LATEST_WEIGHT), *texts[1:])
    if model is ContextModel.WEIGHTED_TURNS:
        return (turns,)
    return (turns, alone)


QUOTED_LAST_BOT_WEIGHT = 0.2
"""The last bot message's weight in the turns view when it quotes a help-centre document
(``retrieve.answer_prior.quotes_a_document``): the previous answer then names the subject a
follow-up leans on. 0.2 was the best fixed weight on the dev halves of three help centres
(0.3 lost follow-ups on one); on TREC CAsT a fixed 0.2 cost 0.016 MRR, which the evidence
avoids (CAsT's bot turns are whole passages, not parts of one)."""


CLARIFYING_QUESTION_WEIGHT = 0.5
"""The last bot message's weight in the turns view when the latest message answers its
clarifying question (``follow_up.answers_the_bot``): "Do you want to keep your number when you
leave?" names the subject that "nah dont need it" leaves out. A clarifying question is short and
quotes no answer, so a high weight does not find the previous answer again. Measured on the dev
halves of seven help centres (bench/results/grounded_all.md): 0.5 helped three and cost none,
0.3 scored the same; with ``last_bot: 0`` it stays off."""


def answered_question(conversation: Conversation) -> str | None:
    """The bot's clarifying question that the latest message answers, when the turns view
    mixes it in at ``CLARIFYING_QUESTION_WEIGHT``; None otherwise. For the search's notes."""
    lead = _FollowUpLead.of(conversation)
    return lead.last_bot if lead is not None and lead.answers else None


def with_quoted_answer(views: tuple[QueryView, ...], previous: str) -> tuple[QueryView, ...]:
    """``views`` with ``previous`` (the last bot message) weighing at least
    ``QUOTED_LAST_BOT_WEIGHT`` in the views that mix it in."""
    return tuple(
        tuple(
            QueryText(part.text, max(part.weight, QUOTED_LAST_BOT_WEIGHT))
            if number > 0 and part.text == previous
            else part
            for number, part in enumerate(view)
        )
        for view in views
    )


def previous_answer(views: tuple[QueryView, ...], conversation: Conversation) -> str | None:
    """The last bot message when the views mix it in and the latest message is no complete new
    question (``follow_up.is_complete_question``, the reading that keeps carried filters from
    crossing a change of subject): the text whose vector finds the previous answer's document
    (``retrieve.answer_prior``); None otherwise. A question that names its own subject must
    not be pulled back to the document of the answer before."""
    last_bot = next((t.text for t in reversed(conversation.history) if t.role == "bot"), "")
    latest = conversation.latest_user_text
    if is_complete_question(latest) and not answers_the_bot(latest, last_bot):
        return None
    mixed = {part.text for view in views if len(view) > 1 for part in view[1:]}
    return last_bot if last_bot and last_bot in mixed else None


def is_elliptical(text: str) -> bool:
    """A message that names at most one thing itself ("and on Android?")."""
    return len(content_words(text)) <= ELLIPSIS_CONTENT_WORDS


def asks_a_question(bot_text: str) -> bool:
    """A bot message that ends by asking something about the user's question: a flow's
    clarifying question ("Is this for a personal or a business account?"), so the user's next
    follow-up answers it (``follow_up.clarifying_question``).

    An offer of more help ("Is there anything else I can help with?") asks nothing about the
    question: the message after it is led by itself as typed, like after any answer. Led by
    the earlier subject's words instead, "can my wife make a complaint for me" after such an
    offer was searched as the previous question (dev halves of ten help centres: two better,
    none worse; bench/results/grounded_all.md).
    """
    return clarifying_question(bot_text) is not None


def weighted_query_texts(
    conversation: Conversation, weights: ContextWeights = DEFAULT_WEIGHTS
) -> tuple[QueryText, ...]:
    """The texts whose weighted embeddings form the query vector, the latest message first.

    A first or standalone message gives only itself; an empty conversation gives ``()``. Texts
    of weight 0 are left out. An elliptical follow-up ("how much does it cost?") is led by
    itself plus the content words of the conversation's subject: the topic and the follow-ups
    since ("how much does it cost? enable offline files Android"). Alone it names no subject,
    and its embedding would outweigh the context. So is a follow-up that answers the bot's
    question ("business" after "Is this for a personal or a business account?"): it qualifies
    the question the user asked before, it does not replace it. A facet swap ("and for the
    business account?") is led by itself plus the previous question with the facet it replaces
    swapped (``swapped_question``), and that question replaces the previous one in the mix.
    Never raises.
    """
    latest = conversation.latest_user_text
    if not latest.strip():
        return ()
    lead = _FollowUpLead.of(conversation)
    if lead is None:
        return (QueryText(latest, LATEST_WEIGHT),)
    earlier, previous, last_bot = lead.earlier, lead.earlier[-1], lead.last_bot
    topic = next((text for text in reversed(earlier) if not looks_like_follow_up(text)), None)
    first = latest
    if lead.swapped_question is not None:
        first, previous = f"{latest} {lead.swapped_question}", lead.swapped_question
    elif lead.restated_answer is not None:
        first = f"{latest} {lead.restated_answer}"
    elif is_elliptical(latest) or asks_a_question(last_bot):
        first = " ".join([latest, *_subject_words(earlier, topic)])
    texts = [QueryText(first, LATEST_WEIGHT), QueryText(previous, weights.previous_question)]
    if topic is not None and topic != previous:
        texts.append(QueryText(topic, weights.topic))
    if last_bot:
        bot_weight = weights.last_bot
        if lead.answers and bot_weight > 0:
            bot_weight = max(bot_weight, CLARIFYING_QUESTION_WEIGHT)
        texts.append(QueryText(last_bot, bot_weight))
    return tuple(text for text in texts if text.weight > 0)


def restated_answer(conversation: Conversation) -> str | None:
    """The last bot message's sentences restated with the facet the latest message swaps,
    when they lead the turns view (``weighted_query_texts``): the question before does not
    name the facet, the answer does. None otherwise. For the search's notes."""
    lead = _FollowUpLead.of(conversation)
    return lead.restated_answer if lead is not None else None


@dataclass(frozen=True)
class _FollowUpLead:
    """How a follow-up's own text is completed: the one decision behind the turns view's first
    text and the search notes that explain it."""

    earlier: list[str]
    last_bot: str
    swapped_question: str | None
    """The previous question with the facet the message swaps (wins over the answer)."""
    restated_answer: str | None
    """The last bot message with that facet swapped, when the question does not name it."""
    answers: bool
    """Whether the message answers the bot's clarifying question (``follow_up.answers_the_bot``)."""

    @classmethod
    def of(cls, conversation: Conversation) -> _FollowUpLead | None:
        """None for a first or standalone message. An answer to the bot's clarifying question
        ("home, storm knocked the fence down" after "Is the claim for your home or your
        car?") follows up however much it names (``follow_up.answers_the_bot``)."""
        latest = conversation.latest_user_text
        earlier = earlier_user_texts(conversation)
        last_bot = next((t.text for t in reversed(conversation.history) if t.role == "bot"), "")
        answers = answers_the_bot(latest, last_bot)
        if not latest.strip() or not earlier or not (answers or looks_like_follow_up(latest)):
            return None
        swapped = swapped_question(latest, earlier[-1], [last_bot])
        restated = None if swapped is not None else swapped_answer(latest, last_bot, [earlier[-1]])
        return cls(earlier, last_bot, swapped, restated, answers)


def _subject_words(earlier: list[str], topic: str | None) -> list[str]:
    """Content words of the topic and of every user message after it, first spelling kept."""
    start = len(earlier) - 1 - earlier[::-1].index(topic) if topic in earlier else len(earlier) - 1
    return content_words(" ".join(earlier[start:]))
