"""The previous answer's document as evidence for a follow-up: a same-document prior.

In a help centre the bot's answers are taken from the knowledge base, and the answer to a
follow-up ("and how often do you pay out?") usually sits in the same document as the answer
before it. The previous answer is therefore evidence the words of the follow-up lack. Which
document it came from is read off the knowledge base itself: the last bot message is searched
(its vector is one the turns view embeds anyway, so nothing is embedded again) and, when its best
chunk matches it closely (``QUOTED_ANSWER_MATCH``: the bot quoted or paraphrased that chunk), that
chunk's document is the previous answer's source.

The prior is one more ranking fused by weighted reciprocal rank (``retrieve.fusion``): the
candidates of that document, in the order the search found them, at a fraction of a full
ranking's weight. It only reorders what the search found (no chunk the filter hides can enter)
and the reported relevance stays the cosine to the leading query vector.

The same search tells whether the bot message quotes a part of a document
(``quotes_a_document``); the turns view then mixes it in more strongly (``rewrite.context``).

The prior only applies where it says something: a document with a single chunk among the
candidates is the previous answer itself (a passage collection such as TREC CAsT, where every
passage is its own document), and finding the same answer again is what a follow-up does not
want. A bot message that matches no chunk closely (a clarifying question, small talk) gives no
prior.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rasa_context_retrieval.knowledge.models import ScoredChunk
from rasa_context_retrieval.retrieve.fusion import reciprocal_rank_fusion

QUOTED_ANSWER_MATCH = 0.6
"""The cosine between the last bot message and its best chunk from which the bot message counts
as taken from that chunk's document (all-MiniLM-L6-v2: a sentence quoted from a help-centre
chunk scores about 0.6 to 0.9 against it; a clarifying question or a greeting well below)."""
QUOTED_PART = 0.9
"""A bot message shorter than this share of its best chunk's text is a part taken out of it."""
MIN_SAME_DOCUMENT_CHUNKS = 2
"""Candidates of the document needed for the prior to apply: one is the previous answer alone."""


@dataclass(frozen=True)
class AnswerPrior:
    """The document the previous answer came from, how closely the bot message matched it, and
    how much its ranking weighs next to the search's own (1)."""

    source: str
    match: float
    weight: float

    def reranked(self, results: Sequence[ScoredChunk]) -> list[ScoredChunk]:
        """``results`` with the chunks of ``source`` raised by the prior; unchanged when fewer
        than ``MIN_SAME_DOCUMENT_CHUNKS`` of them are there or the weight is 0."""
        same = [found.chunk.chunk_id for found in results if source_of(found) == self.source]
        if self.weight <= 0 or len(same) < MIN_SAME_DOCUMENT_CHUNKS:
            return list(results)
        by_id = {found.chunk.chunk_id: found for found in results}
        order = [found.chunk.chunk_id for found in results]
        fused = reciprocal_rank_fusion([order, same], weights=[1.0, self.weight])
        return [by_id[chunk_id] for chunk_id, _ in fused]

    def explained(self) -> dict[str, object]:
        """What the search metadata shows of the prior."""
        return {"source": self.source, "match": round(self.match, 3), "weight": self.weight}


def answer_prior(best_match: ScoredChunk | None, weight: float) -> AnswerPrior | None:
    """The prior from the last bot message's best chunk, or None when it matches none closely
    (``QUOTED_ANSWER_MATCH``) or the weight is 0."""
    if best_match is None or weight <= 0 or best_match.relevance < QUOTED_ANSWER_MATCH:
        return None
    return AnswerPrior(source_of(best_match), best_match.relevance, weight)


def quotes_a_document(previous: str, matches: Sequence[ScoredChunk]) -> bool:
    """Whether the last bot message ``previous``, by its best ``matches`` (best first), was
    taken from part of a knowledge-base document: its best chunk matches it closely
    (``QUOTED_ANSWER_MATCH``) and holds more than the message (``QUOTED_PART``), so the message
    is a sentence or an answer taken out of it, not the chunk itself.

    This is evidence measured in the conversation itself. A help-centre bot quotes or
    paraphrases a part of a document (an extractive assistant replies with the answer of a Q/A
    chunk), and the subject it names is what a follow-up leans on. In a passage collection
    (TREC CAsT) the bot's turn is a whole passage, and mixing it in more strongly finds that
    passage again.
    """
    if not matches or matches[0].relevance < QUOTED_ANSWER_MATCH:
        return False
    return len(previous.strip()) < QUOTED_PART * len(matches[0].chunk.text.strip())


def source_of(found: ScoredChunk) -> str:
    """The document a chunk comes from (its ``source``, "" when it has none)."""
    return str(found.chunk.metadata.get("source", ""))
