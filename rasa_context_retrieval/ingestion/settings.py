"""What decides the knowledge ingestion makes, and therefore its fingerprint.

The fingerprint covers the knowledge base's bytes, the embedding model and the chunking settings,
so a restart with unchanged documents loads the published index without embedding anything, while
a changed, added or removed document triggers a rebuild. It also names the format of the published
index folder, so a release that writes a new format rebuilds (reusing the vectors it can read).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rasa_context_retrieval.knowledge.chunking import CHUNKER_VERSION
from rasa_context_retrieval.knowledge.embedding import embedder_identity
from rasa_context_retrieval.knowledge.faq_table import DEFAULT_FAQ_COLUMNS, FaqColumns
from rasa_context_retrieval.knowledge.fingerprints import settings_fingerprint
from rasa_context_retrieval.knowledge.loader import content_digest
from rasa_context_retrieval.knowledge.parse_cache import ParseCache
from rasa_context_retrieval.retrieve.languages import DEFAULT_LANGUAGE
from rasa_context_retrieval.retrieve.lexical import LexicalSettings

FORMAT_VERSION = 2
"""Of the published index folder (``faiss.index`` writes and reads it)."""

PARSE_CACHE_FILE = "parsed-files.json"
"""Under ``index_path``: what each file parsed to at the last load (``knowledge.parse_cache``)."""


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
    onnx_export: Path | None = None
    """Where the ONNX export of a local embedding model is cached, for embedding chunks with it
    (``query_embedding.documents``); None: Rasa's client embeds them. Not in the fingerprint:
    both give the same vectors, so switching re-embeds nothing."""
    bf16: bool = True
    """Whether a large build may embed in bfloat16 (``query_embedding.bf16``). Not in the
    fingerprint either: its vectors keep the same promise."""

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
                # how BM25 cuts text into terms; a change rebuilds BM25, reusing vectors
                "lexical_terms": LexicalSettings().token_pattern,
                # which documents are refused; part of every fingerprint since front matter is
                # read exactly, so an index built by the lenient reader of earlier releases is
                # rebuilt
                "access_attributes": sorted(set(self.access_attributes)),
                "faq_columns": [self.faq_columns.question, self.faq_columns.answer],
            }
        )

    def parse_cache(self, *, records_losses: bool = True) -> ParseCache:
        """What the files parsed to at the last load, under everything that decides a parse
        (``records_losses``: see ``ParseCache``)."""
        decides = {
            "chunker": CHUNKER_VERSION,  # bumped whenever a parser's output changes too
            "access_attributes": sorted(set(self.access_attributes)),
            "faq_columns": [self.faq_columns.question, self.faq_columns.answer],
        }
        return ParseCache(
            self.index_path / PARSE_CACHE_FILE,
            json.dumps(decides, sort_keys=True),
            records_losses=records_losses,
        )
