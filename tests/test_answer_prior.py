"""A follow-up leans on the document the previous answer came from, and only where that says
something: a document of several chunks, a bot message quoted from it, a weight above 0."""

from __future__ import annotations

from rasa_context_retrieval.knowledge.models import Chunk, ScoredChunk
from rasa_context_retrieval.retrieve.answer_prior import (
    QUOTED_ANSWER_MATCH,
    AnswerPrior,
    answer_prior,
    quotes_a_document,
)


def found(chunk_id: str, source: str, relevance: float = 0.5) -> ScoredChunk:
    return ScoredChunk(Chunk(chunk_id, chunk_id, {"source": source}), relevance)


def order(results: list[ScoredChunk]) -> list[str]:
    return [result.chunk.chunk_id for result in results]


SEARCHED = [
    found("fees-1", "fees.md"),
    found("fees-2", "fees.md"),
    found("export-1", "solar-export.md"),
    found("export-2", "solar-export.md"),
]


def test_chunks_of_the_previous_answers_document_rise_a_few_places() -> None:
    prior = AnswerPrior("solar-export.md", match=0.8, weight=0.02)

    assert order(prior.reranked(SEARCHED)) == ["fees-1", "export-1", "fees-2", "export-2"]


def test_a_heavier_prior_puts_the_previous_answers_document_first() -> None:
    prior = AnswerPrior("solar-export.md", match=0.8, weight=1.0)

    assert order(prior.reranked(SEARCHED))[:2] == ["export-1", "export-2"]


def test_a_document_of_one_chunk_is_the_previous_answer_itself_and_is_not_raised() -> None:
    passages = [found("p1", "passages.jsonl:1"), found("p2", "passages.jsonl:2")]
    prior = AnswerPrior("passages.jsonl:2", match=0.99, weight=1.0)

    assert order(prior.reranked(passages)) == ["p1", "p2"]


def test_relevance_stays_the_searchs_own() -> None:
    prior = AnswerPrior("solar-export.md", match=0.8, weight=1.0)

    assert {r.chunk.chunk_id: r.relevance for r in prior.reranked(SEARCHED)} == {
        r.chunk.chunk_id: r.relevance for r in SEARCHED
    }


def test_a_bot_message_that_quotes_no_chunk_gives_no_prior() -> None:
    below = found("fees-1", "fees.md", relevance=QUOTED_ANSWER_MATCH - 0.01)
    quoted = found("fees-1", "fees.md", relevance=QUOTED_ANSWER_MATCH + 0.1)

    assert answer_prior(below, weight=0.5) is None
    assert answer_prior(None, weight=0.5) is None
    assert answer_prior(quoted, weight=0.0) is None
    prior = answer_prior(quoted, weight=0.5)
    assert prior is not None and prior.explained()["source"] == "fees.md"


CHUNK = ScoredChunk(
    Chunk(
        "lost-card-1",
        "Q: What should I do if my card is lost or stolen?\n"
        "A: Freeze the card straight away in the app, then call us. We send a replacement.",
        {"source": "cards/lost-or-stolen-card.md"},
    ),
    0.85,
)


def test_a_bot_message_taken_out_of_a_chunk_quotes_its_document() -> None:
    answer = "Freeze the card straight away in the app, then call us. We send a replacement."

    assert quotes_a_document(answer, [CHUNK])


def test_a_bot_message_that_is_a_whole_passage_does_not_count_as_a_quote() -> None:
    passage = ScoredChunk(Chunk("p7", "A whole passage of the collection.", {}), 0.99)

    assert not quotes_a_document("A whole passage of the collection.", [passage])


def test_a_bot_message_far_from_every_chunk_quotes_nothing() -> None:
    weak = ScoredChunk(CHUNK.chunk, QUOTED_ANSWER_MATCH - 0.05)

    assert not quotes_a_document("Is it for electricity or gas?", [weak])
    assert not quotes_a_document("Is it for electricity or gas?", [])
