"""BM25 keyword index over chunk texts, searched exactly within a filter mask.

Dense embeddings miss exact names, codes and rare words (product names, "LCIS", "SEPA"); BM25
catches them. The heavy lifting is ``bm25s`` (sparse matrices, its own ``.npy``/JSON persistence,
no pickle). This module adds what the retrieval pipeline needs on top:

* a boolean ``mask`` (one entry per row, from the metadata filter) honoured *exactly*: scores are
  computed for every row and only allowed rows compete for the top ``k``. ``bm25s``'s
  ``weight_mask`` alone is not enough: it multiplies scores by the mask, so a masked row with score
  0 can still fill up a top ``k`` that has too few matching rows;
* rows without a single query term are never returned (BM25 score 0 carries no ranking signal and
  would only add noise to rank fusion);
* tokenisation settings (stemming, stopwords) saved next to the index, so a loaded index tokenises
  queries exactly as the corpus was tokenised.

Rows are positions in the list of texts the index was built from, the same order as the dense
index, so a row means the same chunk in both.

Measured on TREC CAsT 2021 (bench/results/cast2021.md): English Snowball stemming plus English
stopwords is the best of the four stem/stopword combinations, hence the defaults. Another
``language`` picks that language's stemmer and stop words (``retrieve.languages``).
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import Stemmer
import structlog

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.retrieve.languages import ANALYZERS, DEFAULT_LANGUAGE

logger = structlog.get_logger()

SETTINGS_FILENAME = "lexical.json"
SETTINGS_VERSION = 1

WORD_TOKENS = r"(?u)\b\w\w+\b"
"""bm25s's default: words of two or more characters."""
NUMBER_TOKENS = r"(?u)\b\d+(?:[.,:]\d+)*\b|\b\w\w+\b"
"""Numbers of any length (with their decimal, version or time separators) first, then words."""


class LexicalIndexError(ContextRetrievalError, ValueError):
    """Raised for a mask that does not fit the index or a folder that holds no lexical index."""


@dataclass(frozen=True)
class LexicalSettings:
    """How texts are turned into terms; fixed at build time and saved with the index."""

    stemming: bool = True
    stopwords: bool = True
    language: str = DEFAULT_LANGUAGE
    """ISO 639-1 code of the stemmer and stop words; indexes saved before it existed are "en"."""
    numbers: bool = True
    """Every number is a term, however short, and a version or decimal ("6.4", "2,5") is one
    term. bm25s's default pattern keeps words of two or more characters only, so "What changed
    in version 6.4?" lost its one distinctive term. Indexes saved before it existed are False,
    and tokenise as they were built until they are rebuilt."""

    @property
    def token_pattern(self) -> str:
        return NUMBER_TOKENS if self.numbers else WORD_TOKENS


class LexicalIndex:
    """A BM25 index over a fixed list of texts; rows are positions in that list.

    Searching is read-only on shared arrays, so one index serves several threads at once; the
    stemmer (a C object that is not safe to share) is kept per thread.
    """

    def __init__(self, retriever: bm25s.BM25 | None, size: int, settings: LexicalSettings):
        self._retriever = retriever
        self._size = size
        self.settings = settings
        self._thread_local = threading.local()
        self._words = re.compile(settings.token_pattern)
        self._stop_words = frozenset(self._stopwords())

    def __len__(self) -> int:
        return self._size

    @classmethod
    def build(cls, texts: Sequence[str], settings: LexicalSettings | None = None) -> LexicalIndex:
        """Index ``texts``; row ``i`` of every search result is ``texts[i]``."""
        settings = settings or LexicalSettings()
        index = cls(None, len(texts), settings)
        if texts:
            tokenized = bm25s.tokenize(
                list(texts),
                token_pattern=settings.token_pattern,
                stopwords=index._stopwords(),
                stemmer=index._stemmer(),
                show_progress=False,
            )
            # A corpus without a single term (e.g. only one-letter words) has nothing to score.
            if tokenized.vocab:
                retriever = bm25s.BM25()
                retriever.index(tokenized, show_progress=False)
                index._retriever = retriever
        logger.debug("lexical_index.build.done", rows=len(texts), **asdict(settings))
        return index

    def search(self, query: str, k: int, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The best ``k`` rows for ``query`` as ``(row, bm25 score)``, best first.

        ``mask`` (boolean, one entry per row) restricts the result to rows where it is ``True``;
        the best ``k`` *among those* are returned. Rows sharing no term with the query are left
        out, so fewer than ``k`` results is normal.
        """
        allowed = self._check_mask(mask)
        if k <= 0 or self._retriever is None:
            return []
        term_ids = self._retriever.get_tokens_ids(self._query_terms(query))
        if not term_ids:
            return []
        every_row = self._retriever.get_scores_from_ids(term_ids)
        found = every_row > 0.0
        candidates = np.flatnonzero(found if allowed is None else found & allowed)
        scores = every_row[candidates].astype(np.float64)  # only the candidates' are read
        if len(candidates) > k:
            # Keep everything tied with the k-th best, so ties are broken by row, not by chance.
            kept = scores >= -np.partition(-scores, k - 1)[k - 1]
            candidates, scores = candidates[kept], scores[kept]
        best = np.lexsort((candidates, -scores))[:k]  # by score, then by row
        return list(zip(candidates[best].tolist(), scores[best].tolist(), strict=True))

    def rarity(self, word: str) -> float:
        """How distinctive ``word`` is in this knowledge base: BM25's inverse document frequency
        of its term (0 for a word no chunk holds, or a stop word).

        The words view of a follow-up keeps the earlier turns' most distinctive words by this
        measure (``rewrite.heuristic``): "abroad" says more about a bank's documents than "use".
        """
        if self._retriever is None:
            return 0.0
        term_ids = self._retriever.get_tokens_ids(self._query_terms(word))
        if not term_ids:
            return 0.0
        indptr = self._retriever.scores["indptr"]
        frequency = min(int(indptr[term_id + 1] - indptr[term_id]) for term_id in term_ids)
        if frequency <= 0:
            return 0.0
        return math.log(1.0 + (self._size - frequency + 0.5) / (frequency + 0.5))

    def save(self, folder: str | Path) -> None:
        """Write the index into ``folder`` (bm25s's own files plus ``lexical.json``).

        File names do not clash with FAISS's ``index.faiss``/``store.json``, so the lexical index
        can live in the same folder as the dense one.
        """
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if self._retriever is not None:
            self._retriever.save(str(folder), show_progress=False)
        payload: dict[str, Any] = {
            "version": SETTINGS_VERSION,
            "rows": self._size,
            "has_terms": self._retriever is not None,
            "settings": asdict(self.settings),
        }
        (folder / SETTINGS_FILENAME).write_text(json.dumps(payload), encoding="utf-8")

    @classmethod
    def load(cls, folder: str | Path, *, mmap: bool = False) -> LexicalIndex:
        """Read an index written by :meth:`save`; ``mmap`` maps its arrays instead of reading."""
        folder = Path(folder)
        settings_path = folder / SETTINGS_FILENAME
        if not settings_path.exists():
            raise LexicalIndexError(
                f"No '{SETTINGS_FILENAME}' in '{folder}'. Build the lexical index and save it "
                "there first (re-run ingestion)."
            )
        payload = json.loads(settings_path.read_text(encoding="utf-8"))
        if payload.get("version") != SETTINGS_VERSION:
            raise LexicalIndexError(
                f"Unsupported '{SETTINGS_FILENAME}' version {payload.get('version')!r} in "
                f"'{folder}'; expected {SETTINGS_VERSION}. Re-run ingestion to rebuild it."
            )
        rows = int(payload["rows"])
        has_terms = bool(payload.get("has_terms"))
        retriever = (
            bm25s.BM25.load(str(folder), mmap=mmap, show_progress=False) if has_terms else None
        )
        return cls(retriever, rows, LexicalSettings(**{"numbers": False, **payload["settings"]}))

    def _check_mask(self, mask: np.ndarray | None) -> np.ndarray | None:
        if mask is None:
            return None
        allowed = np.asarray(mask)
        if allowed.dtype != np.bool_ or allowed.shape != (self._size,):
            raise LexicalIndexError(
                f"The mask must be a boolean array with one entry per row ({self._size}); got "
                f"dtype {allowed.dtype} and shape {allowed.shape}. Build it from the same chunk "
                "list as the index."
            )
        return allowed

    def _query_terms(self, query: str) -> list[str]:
        """The terms of ``query``, exactly as ``bm25s.tokenize`` makes them of the corpus.

        The same steps (lower case, the token pattern, stop words dropped before stemming,
        then the stemmer), without what ``bm25s.tokenize`` adds for a corpus: a vocabulary
        and an id list for the one query, a stop-word set built anew and three progress bars,
        about half of a search on the example knowledge base. The pattern and the stop-word
        set depend only on the settings, so they are made once, with the index."""
        words = [
            word for word in self._words.findall(query.lower()) if word not in self._stop_words
        ]
        stemmer = self._stemmer()
        return stemmer.stemWords(words) if stemmer is not None and words else words

    def _stopwords(self) -> list[str]:
        return list(ANALYZERS[self.settings.language].stopwords) if self.settings.stopwords else []

    def _stemmer(self) -> Stemmer.Stemmer | None:
        algorithm = ANALYZERS[self.settings.language].stemmer
        if not self.settings.stemming or algorithm is None:
            return None
        stemmer = getattr(self._thread_local, "stemmer", None)
        if stemmer is None:
            stemmer = Stemmer.Stemmer(algorithm)
            self._thread_local.stemmer = stemmer
        return stemmer
