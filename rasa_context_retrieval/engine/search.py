"""One search, end to end: conversation → plan → retrieve → scored results with an explanation.

This is the engine behind both the Rasa plugin and the console, so both run the same code path.
CPU work (embedding the query, FAISS, BM25) runs in a worker thread: Rasa serves many
conversations on one event loop and must not stall while one of them searches. Searches may run
concurrently; the index they read is replaced, never mutated, when documents change
(``engine.live_index``). The engine talks to its backend only through the ``SearchBackend``
protocol (``engine.backend``) and never learns whether FAISS or Milvus answers.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import structlog
from langchain_core.structured_query import FilterDirective

from rasa_context_retrieval.access.entitlements import AccessFilter
from rasa_context_retrieval.config import StoreConfig
from rasa_context_retrieval.conversation import Conversation
from rasa_context_retrieval.engine.backend import SearchBackend
from rasa_context_retrieval.engine.live_index import LiveIndex
from rasa_context_retrieval.filters.syntax import to_filter_syntax
from rasa_context_retrieval.knowledge.models import ScoredChunk
from rasa_context_retrieval.planning.plan import LLMPlanner, Planner, SearchPlan
from rasa_context_retrieval.query_embedding.embedder import (
    QueryEmbedder,
    RasaQueryEmbedder,
    open_query_embedder,
)
from rasa_context_retrieval.query_embedding.mixing import view_vectors
from rasa_context_retrieval.query_embedding.onnx import EXPORT_FOLDER
from rasa_context_retrieval.query_embedding.query_vectors import QueryVectors
from rasa_context_retrieval.retrieve.answer_prior import (
    AnswerPrior,
    answer_prior,
    quotes_a_document,
    source_of,
)
from rasa_context_retrieval.retrieve.languages import warn_about_english_only_steps
from rasa_context_retrieval.retrieve.request import RetrievalRequest
from rasa_context_retrieval.retrieve.specific_first import specific_first
from rasa_context_retrieval.workers import off_loop

logger = structlog.get_logger()

QUERY_VECTOR_CACHE_SIZE = 1024
AUDIT_VALUES = 20
"""Entitlement values an audit line shows per attribute (the count is always there)."""
AUDIT_VALUE_CHARS = 64
"""Characters an audit line shows of one entitlement value."""
AUDIT_FILTER_CHARS = 2_000
"""Characters an audit line shows of the access filter, so that no entitlement makes it long."""
QUERY_MODEL_FOLDER = EXPORT_FOLDER
"""Under ``index_path``: the cached ONNX export of the embedding model."""
ANSWER_PRIOR_CANDIDATES = 5
"""Chunks the last bot message's own search asks for: the best one that passes the filter check
names the previous answer's document, and the others tell whether that document has more."""
CARRIED_DOUBTFUL_RELEVANCE = 0.45
"""Below this best relevance under a carried filter, the search is tried once without it."""
UNCARRIED_CONFIDENT_RELEVANCE = 0.5
"""A result of the search without the carried filter at or above this is a confident match of
the latest message; when the carried filter hides every one of them, it is dropped."""


@dataclass
class SearchOutcome:
    """The ranked results and everything needed to explain them."""

    results: list[ScoredChunk]
    plan: SearchPlan
    filter_relaxed: bool = False
    timings_ms: dict[str, float] = field(default_factory=dict)
    removed_by_access: int = 0
    """Results the backend returned that the exact access check rejected."""
    removed_by_check: int = 0
    """Results the backend returned that the filter asked rejected (access included)."""
    extracted_matches: int | None = None
    """Chunks in scope that the filter from the user's words selects, when it was examined
    because nothing cleared the threshold."""
    slot_matches: int | None = None
    """Chunks in scope that the slot filter selects, when it was examined because nothing was
    found: 0 means no document has the slot's value, not that the question went unanswered."""
    carried_filter_dropped: FilterDirective | None = None
    """The filter carried from earlier turns, when it hid every confident match of the latest
    message and the search ran without it (``KnowledgeSearch._unless_carried_hides``)."""
    answer_prior: AnswerPrior | None = None
    """The previous answer's document, when it weighed in the ranking of this follow-up."""
    _explained: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def filter_syntax(self) -> str | None:
        return _printed(self.plan.filters.as_written)

    @property
    def filter_outcome(self) -> str | None:
        """Why the filter from the user's words was relaxed or kept when nothing was found."""
        if self.slot_matches == 0:
            return "the slot filter matches no document: no document has the slot's value"
        if self.extracted_matches is None:
            return None
        if self.filter_relaxed:
            return "the filter from the message matched nothing in scope; searched without it"
        return (
            f"the filter from the message matched {self.extracted_matches} chunk(s) in scope; "
            "none cleared the threshold"
        )

    def explanation(self) -> dict[str, Any]:
        """What goes into ``SearchResultList.metadata``.

        Built once (printing filters is the costly part): the debug event, the audit event and
        Rasa's result list all read it on every turn. Call it only when the outcome is final.
        """
        if self._explained is None:
            self._explained = self._explain()
        return self._explained

    def _explain(self) -> dict[str, Any]:
        plan = self.plan
        access = plan.filters.access
        return {
            "query": plan.search_text,
            "standalone_query": plan.standalone_query,
            "query_texts": [
                {"text": part.text, "weight": part.weight, "view": number}
                for number, view in enumerate(plan.query_views)
                for part in view
            ],
            "filter": self.filter_syntax,
            "access_filter": _printed(access.directive) if access is not None else None,
            "static_filter": _printed(plan.filters.static),
            "slot_filter": _printed(plan.filters.slots),
            "extracted_filter": _printed(plan.filters.extracted),
            "carried_filter": _printed(plan.filters.carried),
            "carried_filter_dropped": _printed(self.carried_filter_dropped),
            "previous_answer": self.answer_prior.explained() if self.answer_prior else None,
            "filter_relaxed": self.filter_relaxed,
            "filter_outcome": self.filter_outcome,
            "slot_matches": self.slot_matches,
            "paraphrases": list(plan.paraphrases),
            "notes": list(plan.notes),
            "total_results": len(self.results),
            "source_files": [found.chunk.metadata.get("source") for found in self.results],
            "timings_ms": self.timings_ms,
        }

    def audit(self) -> dict[str, Any]:
        """One record per search that is safe to keep: filters as applied, never the user's text."""
        access = self.plan.filters.access
        explained = self.explanation()
        return {
            "entitlement_sources": access.sources if access is not None else None,
            "entitlement_counts": access.counts if access is not None else None,
            "access_filter": _audited_access(access),
            "static_filter": explained["static_filter"],
            "slot_filter": explained["slot_filter"],
            "word_filter": explained["extracted_filter"],
            "carried_filter": explained["carried_filter"],
            "filter_relaxed": self.filter_relaxed,
            "removed_by_access": self.removed_by_access,
            "removed_by_check": self.removed_by_check,
            "sources": [found.chunk.metadata.get("source") for found in self.results],
        }


class KnowledgeSearch:
    """The planner and the search, over the live index."""

    def __init__(
        self,
        config: StoreConfig,
        embeddings: Any,
        live: LiveIndex,
        llm: LLMPlanner | None = None,
        query_embedder: QueryEmbedder | None = None,
    ) -> None:
        self.config = config
        self.embeddings = embeddings
        self.query_embedder = query_embedder or RasaQueryEmbedder(embeddings)
        self.live = live
        self.planner = Planner(config, self.known_values, llm, self.word_rarity)
        self._query_vectors = QueryVectors(self.query_embedder, QUERY_VECTOR_CACHE_SIZE)

    @classmethod
    def open(
        cls,
        config: StoreConfig,
        embeddings: Any,
        llm: LLMPlanner | None = None,
        *,
        progress: bool = True,
        ingest: bool = False,
    ) -> KnowledgeSearch:
        """Open the live index (see ``LiveIndex.open``; ``ingest`` writes a Milvus collection
        even with ``ingest: console_only``) and the query embedder."""
        live = LiveIndex.open(config, embeddings, progress=progress, ingest=ingest)
        query_embedder = open_query_embedder(
            config.query_embedder, embeddings, config.index_path / QUERY_MODEL_FOLDER
        )
        search = cls(config, embeddings, live, llm, query_embedder)
        warn_about_english_only_steps(config.language, config.rewrite, config.self_query)
        return search

    def word_rarity(self, word: str) -> float:
        """How distinctive ``word`` is in the served knowledge base (BM25's IDF, 0 when no
        chunk holds it or no knowledge is open)."""
        knowledge = self.live.knowledge
        return knowledge.lexical.rarity(word) if knowledge is not None else 0.0

    def known_values(self, access: AccessFilter | None = None) -> Mapping[str, frozenset[str]]:
        """Distinct string values per declared attribute in the served chunks ``access`` admits
        (``LiveIndex.known_values``)."""
        return self.live.known_values(access)

    async def search(
        self, conversation: Conversation, threshold: float = 0.0, top_k: int | None = None
    ) -> SearchOutcome:
        """``top_k`` replaces the configured one for this search, at most the ranking depth."""
        started = time.perf_counter()
        deepest = max(self.config.candidates, self.config.top_k)
        wanted = min(top_k, deepest) if top_k else self.config.top_k
        if self.planner.local:  # all CPU work: one worker-thread hop for plan and retrieval
            outcome, planned = await off_loop(
                self._plan_and_retrieve, conversation, threshold, wanted
            )
        else:
            plan = await self.planner.plan(conversation)
            planned = time.perf_counter()
            outcome = await off_loop(self._retrieve, plan, threshold, wanted)
        outcome.timings_ms = {
            "plan": _ms(planned - started),
            "retrieve": _ms(time.perf_counter() - planned),
            "total": _ms(time.perf_counter() - started),
        }
        logger.debug("knowledge_search.search", **outcome.explanation())
        logger.info("knowledge_search.search.audit", **outcome.audit())
        return outcome

    async def search_plan(self, plan: SearchPlan, threshold: float = 0.0) -> SearchOutcome:
        """Retrieve for a ready plan, skipping planning.

        Evaluation uses it to search other query texts under the very filter a search used, so
        a carried filter is kept as it is (never dropped for another text).
        """
        return await off_loop(self._retrieve, plan, threshold, self.config.top_k, False)

    def _plan_and_retrieve(
        self, conversation: Conversation, threshold: float, top_k: int
    ) -> tuple[SearchOutcome, float]:
        """The outcome of a local planner's plan, and when planning ended."""
        plan = self.planner.plan_here(conversation)
        return self._retrieve(plan, threshold, top_k), time.perf_counter()

    def _retrieve(
        self, plan: SearchPlan, threshold: float, top_k: int, may_drop_carried: bool = True
    ) -> SearchOutcome:
        backend = self.live.backend  # one consistent view even if a refresh swaps it meanwhile
        vectors, by_text = self._embedded(plan)
        planned = plan
        plan, prior = self._previous_answer(backend, plan, by_text)
        if plan is not planned:  # the last bot message weighs more: mixed again, not embedded
            vectors[: len(plan.views)] = view_vectors(plan.views, by_text)
        outcome = self._run(backend, plan, threshold, top_k, vectors, prior)
        if plan.filters.carried is not None and may_drop_carried:
            outcome = self._unless_carried_hides(backend, outcome, threshold, top_k, vectors, prior)
            plan = outcome.plan
        if not outcome.results and plan.filters.slots is not None:
            outcome.slot_matches = backend.count(plan.filters.slots, plan.filters.access)
            if not outcome.slot_matches:
                return outcome  # relaxing the words' filter cannot help: the scope is empty
        if outcome.results or not plan.filters.has_words:
            return outcome
        # Relax only a filter from the user's words that selects nothing in scope: if it selects
        # documents and none clears the threshold, answering from others would contradict them.
        outcome.extracted_matches = backend.count(plan.filters.for_backend, plan.filters.access)
        if outcome.extracted_matches:
            return outcome
        relaxed = plan.without_extracted_filter("the filter from the message matched nothing")
        dropped = outcome.carried_filter_dropped
        outcome = self._run(backend, relaxed, threshold, top_k, vectors, prior)
        outcome.filter_relaxed, outcome.extracted_matches = True, 0
        outcome.carried_filter_dropped = dropped
        return outcome

    def _unless_carried_hides(
        self,
        backend: SearchBackend,
        carried: SearchOutcome,
        threshold: float,
        top_k: int,
        vectors: list[np.ndarray],
        prior: AnswerPrior | None,
    ) -> SearchOutcome:
        """The outcome without the carried filter when that filter hides every document the
        latest message finds confidently; ``carried`` otherwise.

        A carried filter is a guess that the subject goes on ("and on iOS?" after "on
        Android"). When the user changed the subject in a message that still reads like a
        follow-up ("how do I contact support?" after "offline files on Android"), the carried
        condition can hide the page asked for where documents lack its attribute. At most one
        further search, only when the best result under the carried filter is doubtful, with
        the same query vectors (nothing is embedded again).
        """
        best = carried.results[0].relevance if carried.results else 0.0
        if best >= CARRIED_DOUBTFUL_RELEVANCE:
            return carried
        plan = carried.plan
        uncarried = self._run(
            backend,
            plan.without_carried_filter(
                f"the filter carried from earlier turns ({_printed(plan.filters.carried)}) hid "
                "every document the latest message finds confidently: searched without it"
            ),
            threshold,
            top_k,
            vectors,
            prior,
        )
        kept = {found.chunk.chunk_id for found in carried.results}
        confident = [
            found for found in uncarried.results if found.relevance >= UNCARRIED_CONFIDENT_RELEVANCE
        ]
        if not confident or any(found.chunk.chunk_id in kept for found in confident):
            return carried
        uncarried.carried_filter_dropped = plan.filters.carried
        return uncarried

    def _run(
        self,
        backend: SearchBackend,
        plan: SearchPlan,
        threshold: float,
        wanted: int,
        vectors: list[np.ndarray] | None = None,
        prior: AnswerPrior | None = None,
    ) -> SearchOutcome:
        texts = [plan.search_text, *plan.paraphrases]
        if not plan.search_text.strip():
            return SearchOutcome([], plan)
        top_k = min(wanted, plan.limit or wanted)
        candidates = max(self.config.candidates, wanted)
        request = RetrievalRequest(
            texts=texts,
            vectors=self._embedded(plan)[0] if vectors is None else vectors,
            filter=plan.filters.for_backend,
            top_k=candidates,  # cut to top_k only after every result passed the check below
            threshold=threshold,
            candidates=candidates,
            hybrid=self.config.lexical_search,
        )
        found = backend.rank(request)
        allowed, rejected_by_access = plan.filters.check([result.chunk for result in found])
        kept = [result for result, ok in zip(found, allowed, strict=True) if ok]
        if prior is not None:
            kept = prior.reranked(kept)
        kept = kept[:top_k]
        if plan.filters.widened:  # absent_means_all admitted general documents too
            kept = specific_first(kept, plan.filters.as_written)
        return SearchOutcome(
            kept,
            plan,
            removed_by_access=rejected_by_access,
            removed_by_check=len(found) - sum(allowed),
            answer_prior=prior,
        )

    def _embedded(self, plan: SearchPlan) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
        """One mixed vector per view, then one per paraphrase, and each view text's own vector:
        every text embedded in one call."""
        views = plan.query_views
        texts = list(dict.fromkeys(part.text for view in views for part in view))
        vectors = self._query_vectors.vectors([*texts, *plan.paraphrases])
        by_text = dict(zip(texts, vectors, strict=False))
        return [*view_vectors(views, by_text), *vectors[len(texts) :]], by_text

    def _previous_answer(
        self, backend: SearchBackend, plan: SearchPlan, by_text: Mapping[str, np.ndarray]
    ) -> tuple[SearchPlan, AnswerPrior | None]:
        """What the previous answer tells a follow-up (``retrieve.answer_prior``): the best
        chunks for the last bot message's own vector, under the search's filter, so that
        nothing names a document this search may not show. When the message quotes a
        help-centre document it weighs more in the turns view (``SearchPlan.with_quoted_answer``);
        with a ``previous_answer`` weight, that document's chunks are raised too. One more index
        search, no further embedding (the turns view embedded the message already)."""
        vector = by_text.get(plan.previous_answer or "")
        if vector is None:
            return plan, None
        request = RetrievalRequest(
            texts=[plan.previous_answer or ""],
            vectors=[vector],
            filter=plan.filters.for_backend,
            top_k=ANSWER_PRIOR_CANDIDATES,
            threshold=0.0,
            candidates=ANSWER_PRIOR_CANDIDATES,
            hybrid=False,
        )
        found = backend.rank(request)
        allowed, _ = plan.filters.check([result.chunk for result in found])
        matches = [result for result, ok in zip(found, allowed, strict=True) if ok]
        if not quotes_a_document(plan.previous_answer or "", matches):
            return plan, None
        quoted = plan.with_quoted_answer(source_of(matches[0]), matches[0].relevance)
        return quoted, answer_prior(matches[0], plan.previous_answer_weight)

    def clear_query_cache(self) -> None:
        """Forget cached query vectors (benchmarks time a search with its embedding)."""
        self._query_vectors.clear()

    def refresh_if_due(self) -> None:
        """Pick up changed documents in the background (``LiveIndex.refresh_if_due``)."""
        self.live.refresh_if_due()


def _printed(directive: FilterDirective | None) -> str | None:
    """The filter in LangChain's syntax for the explanation; never fails the search.

    Some values have no spelling in that syntax (an infinite number, a string holding both kinds
    of quote, e.g. from a slot); those filters are shown as the IR's repr instead.
    """
    try:
        return to_filter_syntax(directive)
    except ValueError:
        return repr(directive)


def _audited_access(access: AccessFilter | None) -> str | None:
    """The access filter as the audit line shows it: a bounded number of values and characters
    (``entitlement_counts`` gives the totals)."""
    if access is None:
        return None
    printed = _printed(access.audited(AUDIT_VALUES, AUDIT_VALUE_CHARS)) or ""
    if len(printed) <= AUDIT_FILTER_CHARS:
        return printed
    return printed[:AUDIT_FILTER_CHARS] + "..."


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 2)
