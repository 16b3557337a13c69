"""Conversational retrieval on TREC CAsT 2021 and 2022: does a follow-up find its answer?

Each set follows its README: the corpus is every distinct answer (2021: passage, 2022: non-empty
response); the conversation at turn n is, for each earlier turn, the user's utterance and the
answer as the bot's message, then the utterance of turn n; the gold is turn n's own answer. On
CAsT 2022 every root-to-leaf path counts, so early turns repeated across paths count each time.
A turn *needs a rewrite* when its published manual rewrite differs from what the user typed;
otherwise it is a *no-rewrite* turn, where context can only hurt.

Every row uses the same embeddings (all-MiniLM-L6-v2 through Rasa's ``huggingface_local``), so
rows differ only in the query. Rows: Rasa's FAISS_Store with EnterpriseSearchPolicy's default
query, the plugin itself (default configuration), dense search with the latest message alone,
the words rewrites, the single-vector ``weighted_turns`` model, the ``words_and_turns`` model
(default: the turns view and the words view, each ranked ``DEFAULT_CANDIDATES`` deep and fused
by reciprocal rank fusion as the plugin does) with a small grid of the turns view's weights
and the words view's rewrite, and the manual rewrite (the upper bound of any rewriter).

Usage (from the repository root)::

    python bench/conversational.py [--cast2021 DIR] [--cast2022 DIR]
        [--output bench/results/conversational.md]

Only the part of the output file between the ``results`` markers is replaced.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import structlog

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cast2021 import (  # noqa: E402
    DEPTH,
    Corpus,
    DenseSearch,
    Scores,
    context_retrieval_retriever,
    embedding_client,
    rasa_faiss_retriever,
    score,
    write_results,
)

from rasa_context_retrieval.config import DEFAULT_CANDIDATES  # noqa: E402
from rasa_context_retrieval.conversation import Conversation, Turn  # noqa: E402
from rasa_context_retrieval.query_embedding.mixing import view_vectors  # noqa: E402
from rasa_context_retrieval.retrieve.fusion import reciprocal_rank_fusion  # noqa: E402
from rasa_context_retrieval.rewrite.context import (  # noqa: E402
    TURNS_VIEW_WEIGHTS,
    ContextModel,
    ContextWeights,
    query_views,
)
from rasa_context_retrieval.rewrite.heuristic import (  # noqa: E402
    DEFAULT_MODE,
    RewriteMode,
    standalone_query,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
BENCH_DATA = REPO_ROOT / ".." / "shared" / "bench-data"
CAST2021_FILE = "2021_manual_evaluation_topics_v1.0.json"
CAST2022_FILE = "2022_evaluation_topics_flattened_duplicated_v1.0.json"
DEFAULT_OUTPUT = REPO_ROOT / "bench" / "results" / "conversational.md"

# The sensitivity grid of words_and_turns: each weight of the turns view moved on its own, the
# topic added back, then the words view's rewrite swapped (weights: previous question, topic,
# last bot message).
GRID = (
    (ContextWeights(0.2, 0.0, 0.1), DEFAULT_MODE),
    (ContextWeights(0.0, 0.0, 0.1), DEFAULT_MODE),
    (ContextWeights(0.1, 0.0, 0.0), DEFAULT_MODE),
    (ContextWeights(0.1, 0.0, 0.2), DEFAULT_MODE),
    (ContextWeights(0.2, 0.0, 0.2), DEFAULT_MODE),
    (ContextWeights(0.5, 0.0, 0.5), DEFAULT_MODE),
    (ContextWeights(0.1, 0.1, 0.1), DEFAULT_MODE),
    (TURNS_VIEW_WEIGHTS, RewriteMode.PREVIOUS_WORDS),
    (TURNS_VIEW_WEIGHTS, RewriteMode.CHAINED_AND_BOT_WORDS),
)

DEPTH_FUSED = DEFAULT_CANDIDATES
"""How deep each view is ranked before fusion: the plugin's default ``candidates``."""

Retriever = Callable[[Conversation], list[str]]


@dataclass(frozen=True)
class Case:
    """One turn: its conversation so far, its gold answer and whether it needs a rewrite."""

    conversation: Conversation
    gold: str
    manual_rewrite: str

    @property
    def needs_rewrite(self) -> bool:
        return self.manual_rewrite.strip() != self.conversation.latest_user_text.strip()


def load_cast2021(data_dir: Path) -> tuple[Corpus, list[Case]]:
    topics = json.loads((data_dir / CAST2021_FILE).read_text(encoding="utf-8"))
    passages: dict[str, str] = {}
    cases: list[Case] = []
    for topic in topics:
        turns: list[Turn] = []
        for turn in topic["turn"]:
            passage_id = f"{turn['canonical_result_id']}-{turn['passage_id']}"
            passages.setdefault(passage_id, turn["passage"])
            conversation = Conversation(turns=(*turns, Turn("user", turn["raw_utterance"])))
            cases.append(Case(conversation, passage_id, turn["manual_rewritten_utterance"]))
            turns += [Turn("user", turn["raw_utterance"]), Turn("bot", turn["passage"])]
    return Corpus(list(passages), list(passages.values())), cases


def load_cast2022(data_dir: Path) -> tuple[Corpus, list[Case]]:
    """Every path of every topic; a turn without a response is context only, never gold.

    Responses are compared after stripping surrounding white space (the answer id is its text).
    """
    paths = json.loads((data_dir / CAST2022_FILE).read_text(encoding="utf-8"))
    responses: dict[str, str] = {}
    cases: list[Case] = []
    for path in paths:
        turns: list[Turn] = []
        for turn in path["turn"]:
            response = (turn.get("response") or "").strip()
            user = Turn("user", turn["utterance"])
            if response:
                responses.setdefault(response, response)
                conversation = Conversation(turns=(*turns, user))
                cases.append(Case(conversation, response, turn["manual_rewritten_utterance"]))
            turns += [user, Turn("bot", response)] if response else [user]
    return Corpus(list(responses), list(responses.values())), cases


class Queries:
    """Dense rankings for a text query or a weighted mix of texts, vectors embedded in batch."""

    def __init__(self, dense: DenseSearch):
        self.dense = dense

    def text(self, query: Callable[[Conversation], str], cases: Sequence[Case]) -> Retriever:
        self.dense.prefetch(query(case.conversation) for case in cases)
        return lambda conversation: self.dense.ranking(query(conversation), DEPTH)

    def views(
        self,
        model: ContextModel,
        cases: Sequence[Case],
        weights: ContextWeights | None = None,
        words: RewriteMode = DEFAULT_MODE,
    ) -> Retriever:
        """The plugin's query views for ``model``, each ranked, fused as the plugin fuses them."""

        def views_of(conversation: Conversation) -> tuple[tuple[Any, ...], ...]:
            standalone = standalone_query(conversation, words)
            return query_views(conversation, standalone, model, weights=weights)

        self.dense.prefetch(
            part.text for case in cases for view in views_of(case.conversation) for part in view
        )

        def retrieve(conversation: Conversation) -> list[str]:
            rankings = []
            for vector in view_vectors(views_of(conversation), self.dense.cache):
                scores = self.dense.vectors @ vector
                rankings.append([self.dense.ids[row] for row in np.argsort(-scores)[:DEPTH_FUSED]])
            if len(rankings) == 1:
                return rankings[0][:DEPTH]
            return [chunk for chunk, _ in reciprocal_rank_fusion(rankings)[:DEPTH]]

        return retrieve


def fused_label(weights: ContextWeights, words: RewriteMode) -> str:
    w = weights
    return f"`words_and_turns` {w.previous_question:g}/{w.topic:g}/{w.last_bot:g} + `{words}`"


def rows_for(
    corpus: Corpus, cases: Sequence[Case], client: object, workdir: Path
) -> dict[str, Retriever]:
    dense = DenseSearch(corpus, client)  # type: ignore[arg-type]
    queries = Queries(dense)
    manual = {case.conversation.turns: case.manual_rewrite for case in cases}
    rows: dict[str, Retriever] = {
        "Rasa FAISS_Store, default query (last 2 messages)": rasa_faiss_retriever(
            corpus,
            client,  # type: ignore[arg-type]
        ),
        "**ContextRetrieval, default configuration**": context_retrieval_retriever(
            corpus,
            client,  # type: ignore[arg-type]
            workdir,
        ),
        "latest message": queries.text(lambda c: c.latest_user_text, cases),
        "words `previous_words`": queries.text(
            lambda c: standalone_query(c, RewriteMode.PREVIOUS_WORDS), cases
        ),
        "words `chained_words`": queries.text(
            lambda c: standalone_query(c, RewriteMode.CHAINED_WORDS), cases
        ),
        "words `chained_and_bot_words`": queries.text(
            lambda c: standalone_query(c, RewriteMode.CHAINED_AND_BOT_WORDS), cases
        ),
        "`weighted_turns` 0.2/0.1/0.1 (one vector)": queries.views(
            ContextModel.WEIGHTED_TURNS, cases
        ),
        f"**{fused_label(TURNS_VIEW_WEIGHTS, DEFAULT_MODE)} (default)**": queries.views(
            ContextModel.WORDS_AND_TURNS, cases
        ),
    }
    for weights, words in GRID:
        rows[fused_label(weights, words)] = queries.views(
            ContextModel.WORDS_AND_TURNS, cases, weights, words
        )
    rows["manual rewrite (upper bound)"] = queries.text(lambda c: manual[c.turns], cases)
    return rows


@dataclass(frozen=True)
class Split:
    all_turns: Scores
    needs_rewrite: Scores
    no_rewrite: Scores


def evaluate(rows: dict[str, Retriever], cases: Sequence[Case]) -> dict[str, Split]:
    results = {}
    for name, retriever in rows.items():
        rankings = [(case, retriever(case.conversation)) for case in cases]
        results[name] = Split(
            score(rankings),
            score([item for item in rankings if item[0].needs_rewrite]),
            score([item for item in rankings if not item[0].needs_rewrite]),
        )
    return results


def table(results: dict[str, Split]) -> str:
    header = (
        "| query | MRR@10 all | Hit@1 | Hit@5 | Hit@10 | MRR@10 needs rewrite | MRR@10 no rewrite |"
    )
    lines = [header, "|---|---|---|---|---|---|---|"]
    for name, split in results.items():
        whole = split.all_turns
        cells = [whole.mrr, whole.hits[1], whole.hits[5], whole.hits[10]]
        cells += [split.needs_rewrite.mrr, split.no_rewrite.mrr]
        lines.append(f"| {name} | " + " | ".join(f"{value:.3f}" for value in cells) + " |")
    return "\n".join(lines)


def section(title: str, corpus: Corpus, cases: Sequence[Case], results: dict[str, Split]) -> str:
    needing = sum(1 for case in cases if case.needs_rewrite)
    return (
        f"### {title}: {len(cases)} turns ({needing} need a rewrite, "
        f"{len(cases) - needing} do not), {len(corpus.ids)} answers\n\n{table(results)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cast2021", type=Path, default=BENCH_DATA / "cast2021")
    parser.add_argument("--cast2022", type=Path, default=BENCH_DATA / "cast2022")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    client = embedding_client()
    sections = [
        f"Run {datetime.date.today().isoformat()}, {os.cpu_count()} cores "
        f"({platform.processor() or platform.machine()}), Python {platform.python_version()}. "
        "Embeddings: all-MiniLM-L6-v2 (Rasa `huggingface_local`), answers kept whole. Weights "
        "a/b/c = previous user question a, topic (last standalone user message) b, last bot "
        "message c, latest message 1. `words_and_turns` fuses (RRF, k = 60, each view ranked "
        f"{DEPTH_FUSED} deep) the turns view with these weights and the named words rewrite."
    ]
    for title, loader, data_dir in (
        ("TREC CAsT 2021", load_cast2021, args.cast2021),
        ("TREC CAsT 2022 (every path)", load_cast2022, args.cast2022),
    ):
        corpus, cases = loader(data_dir)
        with tempfile.TemporaryDirectory() as workdir:
            results = evaluate(rows_for(corpus, cases, client, Path(workdir)), cases)
        sections.append(section(title, corpus, cases, results))
        print(sections[-1], flush=True)
    write_results(args.output, "\n\n".join(sections))


if __name__ == "__main__":
    main()
