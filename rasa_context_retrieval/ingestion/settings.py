"""What decides the knowledge ingestion makes, and therefore its fingerprint.

The fingerprint covers the knowledge base's bytes, the embedding model and the chunking settings,
so a restart with unchanged documents loads the published index without embedding anything, while
a changed, added or removed document triggers a rebuild. It also names the format of the published
index folder, so a release that writes a new format rebuilds (reusing the vectors it can read).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rasa_context_retrieval.knowledge.chunking import CHUNKER_VERSION
from rasa_context_retrieval.knowledge.embedding import embedder_identity
from rasa_context_retrieval.knowledge.faq_table import DEFAULT_FAQ_COLUMNS, FaqColumns
from rasa_context_retrieval.knowledge.fingerprints import settings_fingerprint
from rasa_context_retrieval.knowledge.loader import content_digest
from rasa_context_retrieval.retrieve.languages import DEFAULT_LANGUAGE

FORMAT_VERSION = 2
"""Of the published index folder (``faiss.index`` writes and reads it)."""


@dataclass(frozen=True)
class IndexSettings:
    """What decides the contents of an index (and therefore its fingerprint)."""

    docs: Path
    index_path: Path
    chunk_size: int
    chunk_overlap: int
    embedding_batch_size: int
    exact_search_below: int
    language: str = DEFAULT_LANGUAGE
    """Of the lexical analyzer (stemmer, stop words); a change rebuilds BM25, reusing vectors."""
    access_attributes: tuple[str, ...] = ()
    """The document attributes ``access_filters`` map to: they decide which documents the loader
    refuses (``knowledge.access_attributes``), so a change re-reads every document."""
    extra_suffixes: tuple[str, ...] = ()
    """The opted-in formats besides .md/.txt/.jsonl (``.pdf``); part of the docs digest."""
    faq_columns: FaqColumns = DEFAULT_FAQ_COLUMNS
    """Which columns of an FAQ table hold the question and the answer."""

    def fingerprint(self, embeddings: Any) -> str:
        return settings_fingerprint(
            {
                "format": FORMAT_VERSION,
                "chunker": CHUNKER_VERSION,
                "docs": content_digest(self.docs, self.extra_suffixes),
                "embedder": embedder_identity(embeddings),
                "chunk_size": self.chunk_size,
                "chunk_overlap": self.chunk_overlap,
                # decides the dense index type; a change rebuilds (reusing every vector)
                "exact_search_below": self.exact_search_below,
                "language": self.language,
                # which documents are refused; part of every fingerprint since front matter is
                # read exactly, so an index built by the lenient reader of earlier releases is
                # rebuilt
                "access_attributes": sorted(set(self.access_attributes)),
                "faq_columns": [self.faq_columns.question, self.faq_columns.answer],
            }
        )
