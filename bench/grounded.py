"""Follow-ups where the bot's answers come from the documents: a bank help centre.

TREC CAsT (``bench/conversational.py``) has long passages as bot turns and follow-ups that change
aspect. A typical Rasa assistant differs: its answers are sentences of the documents and its
flows ask clarifying questions ("Is this for a personal or a business account?"), which the user
answers in a word ("business"). ``bench/data/grounded/`` holds such a knowledge base (40 short
documents, several differing only by product) and 63 conversations in the evaluation format,
each labelled with the kind of its last question (standalone, follow-up, clarification, switch)
and a human rewrite, split 50/50 into ``dev.yml`` (tuning) and ``test.yml`` (reporting only).

Rows, all in one run, same all-MiniLM-L6-v2 embeddings, each document kept whole: Rasa's
FAISS_Store searched with EnterpriseSearchPolicy's default query (the last two messages, newest
first), the latest message alone, the plugin's default configuration through
``ContextRetrieval.search``, and the human rewrite (upper bound). A document counts as right
when it is one of the case's ``expected_sources``.

Usage (from the repository root)::

    python bench/grounded.py [--output bench/results/grounded.md]

Only the part of the output file between the ``results`` markers is replaced.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cast2021 import (  # noqa: E402
    DEPTH,
    Corpus,
    DenseSearch,
    context_retrieval_retriever,
    embedding_client,
    rasa_faiss_retriever,
    write_results,
)
from conversational import Queries  # noqa: E402

from rasa_context_retrieval.conversation import Conversation, Turn  # noqa: E402
from rasa_context_retrieval.evaluation.cases import EvalCase, group_by_kind, load_cases  # noqa: E402
from rasa_context_retrieval.evaluation.metrics import ranking_scores  # noqa: E402
from rasa_context_retrieval.knowledge.loader import knowledge_files  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "grounded"
DOCS = DATA / "docs"
SPLITS = ("dev", "test")
DEFAULT_OUTPUT = Path(__file__).resolve().parent / "results" / "grounded.md"

Retriever = Callable[[Conversation], list[str]]


@dataclass(frozen=True)
class Case:
    """One conversation, what its last question is, and the documents that answer it."""

    conversation: Conversation
    kind: str
    expected: frozenset[str]
    rewrite: str


def load_corpus() -> Corpus:
    files = knowledge_files(DOCS)
    ids = [file.relative_to(DOCS).as_posix() for file in files]
    return Corpus(ids, [file.read_text(encoding="utf-8") for file in files])


def as_case(case: EvalCase) -> Case:
    if case.kind is None or case.rewrite is None:
        raise ValueError(f"case {case.name!r} needs a `kind` and a `rewrite`")
    turns = tuple(Turn(turn.role, turn.text) for turn in case.turns)
    return Case(
        Conversation(turns=turns), case.kind, frozenset(case.expected_sources), case.rewrite
    )


def rows_for(
    corpus: Corpus, cases: Sequence[Case], client: object, workdir: Path
) -> dict[str, Retriever]:
    queries = Queries(DenseSearch(corpus, client))  # type: ignore[arg-type]
    rewrites = {case.conversation.turns: case.rewrite for case in cases}
    rows: dict[str, Retriever] = {
        "Rasa FAISS_Store, default query (last 2 messages)": rasa_faiss_retriever(
            corpus,
            client,  # type: ignore[arg-type]
        ),
        "latest message": queries.text(lambda c: c.latest_user_text, cases),
        "**ContextRetrieval, default configuration**": context_retrieval_retriever(
            corpus,
            client,  # type: ignore[arg-type]
            workdir,
        ),
    }
    rows["human rewrite (upper bound)"] = queries.text(lambda c: rewrites[c.turns], cases)
    return rows


def first_right_rank(case: Case, ranking: Sequence[str]) -> int | None:
    """Rank among distinct documents: the plugin returns a document's chunks (its Q/A pairs)
    one by one, Rasa's store and the dense rows whole documents."""
    documents = list(dict.fromkeys(ranking))[:DEPTH]
    return next((rank for rank, doc in enumerate(documents, 1) if doc in case.expected), None)


def table(rows: dict[str, Retriever], cases: Sequence[Case]) -> str:
    """MRR@10 / Hit@1 per kind and over all cases, grouped and scored as ``eval`` does."""
    groups = group_by_kind(range(len(cases)), lambda index: cases[index].kind)  # case indices
    groups["all"] = list(range(len(cases)))
    header = "| query | " + " | ".join(f"{g} ({len(m)}) MRR@10 / Hit@1" for g, m in groups.items())
    lines = [header + " |", "|---" * (len(groups) + 1) + "|"]
    for name, retriever in rows.items():
        ranks = [first_right_rank(case, retriever(case.conversation)) for case in cases]
        cells = []
        for members in groups.values():
            scores = ranking_scores([ranks[index] for index in members])
            cells.append(f"{scores.mrr:.3f} / {scores.hit_at_1:.3f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    client = embedding_client()
    corpus = load_corpus()
    splits = {
        split: [as_case(c) for c in load_cases(DATA / f"{split}.yml", DOCS)] for split in SPLITS
    }
    sections = [
        f"Run {datetime.date.today().isoformat()}, {os.cpu_count()} cores "
        f"({platform.processor() or platform.machine()}), Python {platform.python_version()}. "
        f"Embeddings: all-MiniLM-L6-v2 (Rasa `huggingface_local`), {len(corpus.ids)} documents "
        "kept whole (the plugin splits them into its usual chunks; ranks count distinct "
        "documents). Cells: MRR@10 / Hit@1 over the cases of that kind (count in brackets)."
    ]
    for split, cases in splits.items():
        with tempfile.TemporaryDirectory() as workdir:
            rows = rows_for(corpus, cases, client, Path(workdir))
            sections.append(f"### {split} ({len(cases)} conversations)\n\n{table(rows, cases)}")
        print(sections[-1], flush=True)
    write_results(args.output, "\n\n".join(sections))


if __name__ == "__main__":
    main()
