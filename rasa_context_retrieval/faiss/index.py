"""The searchable knowledge index: chunks, their vectors, BM25 and columnar metadata, on disk.

An index is written into a fresh folder named after its fingerprint and then published by
atomically replacing a small ``CURRENT`` pointer file. A crash or kill in the middle of a rebuild
therefore leaves the previous index in place and usable, and readers never see half a folder.
Several processes (Rasa workers) starting at once serialise on a file lock and the later ones
find the index already built. Nothing is pickled: FAISS's own format, bm25s's own format, numpy
arrays and JSON.

Format 2 reads back without parsing anything per chunk (format 1 parsed every chunk and every
metadata value on each restart, see bench/results/scale.md): vectors (FAISS's and a plain ``.npy``
copy) and BM25 arrays are memory-mapped, chunks sit in a ``ChunkTable`` parsed row by row, metadata
filters come from persisted columns. A folder of format 1 (the previous release) is still read, so
an upgrade rebuilds it in format 2 without re-embedding; any other format is refused, never guessed
at, and then rebuilt.

Nor are its bytes: the manifest lists every file's size and XXH3-128 digest, checked on each load
(a stray write into ``records.bin``, NaN written over ``vectors.npy`` or a truncated file would
otherwise fail every search that touches a row, or silently find nothing, across restarts); a
mismatch, or vectors that are not finite, reads as a corrupt index, which is rebuilt.

The folder is not trusted further than that: ``CURRENT`` must name a published index folder
directly inside ``index_path`` (no absolute path, no ``..``, no link leading out), otherwise it
is ignored and the index is rebuilt, and a folder that cannot be written gives one message that
names it and the fix.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import uuid
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import structlog
import xxhash
from filelock import FileLock

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.faiss.chunk_table import ChunkTable
from rasa_context_retrieval.faiss.dense import DenseIndex, factory_for
from rasa_context_retrieval.filters.column_files import read_columns, write_columns
from rasa_context_retrieval.filters.columns import MetadataColumns
from rasa_context_retrieval.ingestion.knowledge import EmbeddedKnowledge
from rasa_context_retrieval.ingestion.settings import FORMAT_VERSION
from rasa_context_retrieval.knowledge.listing import is_inside
from rasa_context_retrieval.knowledge.loader import IngestProblem
from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.retrieve.languages import DEFAULT_LANGUAGE
from rasa_context_retrieval.retrieve.lexical import LexicalIndex

logger = structlog.get_logger()

READABLE_FORMATS = (1, FORMAT_VERSION)
"""Format 1 (the previous release's) is read so that an upgrade can reuse its vectors."""
CURRENT_FILE = "CURRENT"
LOCK_FILE = ".build.lock"
MANIFEST_FILE = "manifest.json"
CHUNKS_FILE = "chunks.json"
"""Format 1: every chunk in one JSON document."""
CHUNK_TABLE_FOLDER = "chunks"
COLUMNS_FOLDER = "columns"
DENSE_FILE = "dense.faiss"
VECTORS_FILE = "vectors.npy"
"""Format 2: the vectors again, as a plain array that numpy maps (see faiss/dense.py)."""
LEXICAL_FOLDER = "lexical"
KEEP_PREVIOUS = 1
"""Older published indexes kept besides the current one (a reader may still have one open)."""
CHECKSUM_BLOCK_BYTES = 1 << 20
"""Files are hashed in blocks of this size: a memory-mapped array is read once, never held."""
PUBLISHED_NAME = re.compile(r"index-[0-9a-f]{16}-[0-9a-f]{8}")
"""The only names ``publish`` writes into ``CURRENT``."""

_DENSE_OF: weakref.WeakKeyDictionary[EmbeddedKnowledge, DenseIndex] = weakref.WeakKeyDictionary()
"""The dense index read or built for each knowledge alive in this process (see ``of``)."""
_KNOWN_LOCK = threading.Lock()


class IndexCorruptError(ContextRetrievalError, RuntimeError):
    """A persisted index cannot be read; rebuilding it fixes this."""


class IndexFolderNotWritable(ContextRetrievalError, ValueError):
    """``index_path`` cannot be written; the message names the folder and the fix."""

    def __init__(self, root: Path, error: OSError) -> None:
        super().__init__(
            f"vector_store.index_path: cannot write the index into '{root}' "
            f"({error.strerror or error}). Make it a folder the user running Rasa can write to, "
            "with free space, or point index_path at such a folder."
        )


@dataclass(frozen=True)
class KnowledgeIndex:
    """FAISS's index over one ``EmbeddedKnowledge``: its dense index, and the folder format.

    The knowledge (chunks, vectors, BM25, columns) is ingestion's; this class adds the dense
    index and writes and reads both as one published folder. An index read or built in this
    process is found again by its knowledge (``of``), so publishing knowledge read from disk
    never rebuilds an HNSW graph.
    """

    knowledge: EmbeddedKnowledge
    dense: DenseIndex

    def __post_init__(self) -> None:
        with _KNOWN_LOCK:
            _DENSE_OF[self.knowledge] = self.dense

    @classmethod
    def of(cls, knowledge: EmbeddedKnowledge, exact_search_below: int) -> KnowledgeIndex:
        """The index of ``knowledge``: the one read or built for it here, else built now (an
        exact index below ``exact_search_below`` chunks, HNSW from there)."""
        with _KNOWN_LOCK:
            dense = _DENSE_OF.get(knowledge)
        if dense is None:
            dense = DenseIndex.build(
                knowledge.vectors, factory_for(len(knowledge), exact_search_below)
            )
        return cls(knowledge, dense)

    def __len__(self) -> int:
        return len(self.knowledge)

    @classmethod
    def build(
        cls,
        fingerprint: str,
        embedder: str,
        chunks: list[Chunk],
        vectors: np.ndarray,
        problems: Sequence[IngestProblem],
        exact_search_below: int,
        language: str = DEFAULT_LANGUAGE,
    ) -> KnowledgeIndex:
        """Chunks and their vectors, indexed: ``EmbeddedKnowledge.of`` then ``of``."""
        return cls.built(
            EmbeddedKnowledge.of(fingerprint, embedder, chunks, vectors, problems, language),
            exact_search_below,
        )

    @classmethod
    def built(cls, knowledge: EmbeddedKnowledge, exact_search_below: int) -> KnowledgeIndex:
        """A new dense index over ``knowledge``; the knowledge served with it then reads the
        vectors from FAISS's storage, so they are held once."""
        dense = DenseIndex.build(knowledge.vectors, factory_for(len(knowledge), exact_search_below))
        return cls(replace(knowledge, vectors=dense.vectors), dense)

    def write(self, folder: Path) -> None:
        knowledge = self.knowledge
        folder.mkdir(parents=True)
        self.dense.write(folder / DENSE_FILE)
        np.save(folder / VECTORS_FILE, knowledge.vectors, allow_pickle=False)
        knowledge.lexical.save(folder / LEXICAL_FOLDER)
        ChunkTable.write(knowledge.chunks, folder / CHUNK_TABLE_FOLDER)
        write_columns(knowledge.columns, folder / COLUMNS_FOLDER)
        manifest = {
            "format": FORMAT_VERSION,
            "fingerprint": knowledge.fingerprint,
            "embedder": knowledge.embedder,
            "chunks": len(knowledge.chunks),
            "dimension": int(knowledge.vectors.shape[1]) if knowledge.vectors.size else 0,
            "problems": [vars(problem) for problem in knowledge.problems],
            "files": file_checksums(folder),
        }
        _write_json(folder / MANIFEST_FILE, manifest)  # written last: marks the folder complete

    @classmethod
    def read(cls, folder: Path) -> KnowledgeIndex:
        """Read a folder of format 2 or 1; raises ``IndexCorruptError`` for anything else."""
        try:
            manifest = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
            version = manifest.get("format")
            if version not in READABLE_FORMATS:
                raise IndexCorruptError(
                    f"index format {version!r} is not supported (this release reads "
                    f"{READABLE_FORMATS}); it is rebuilt from the documents"
                )
            verify_checksums(folder, manifest.get("files"))
            vectors = None
            if version != 1:
                vectors = np.load(folder / VECTORS_FILE, mmap_mode="r", allow_pickle=False)
            dense = DenseIndex.read(folder / DENSE_FILE, vectors)
            lexical = LexicalIndex.load(folder / LEXICAL_FOLDER, mmap=version != 1)
            chunks: Sequence[Chunk]
            if version == 1:
                records = json.loads((folder / CHUNKS_FILE).read_text(encoding="utf-8"))
                chunks, columns = [Chunk(r["id"], r["text"], r["metadata"]) for r in records], None
            else:
                chunks = ChunkTable.read(folder / CHUNK_TABLE_FOLDER)
                columns = read_columns(folder / COLUMNS_FOLDER, len(chunks))
        except (OSError, ValueError, KeyError, TypeError, RuntimeError) as error:
            raise IndexCorruptError(f"cannot read the index in '{folder}': {error}") from error
        if not (manifest.get("chunks") == len(chunks) == len(dense) == len(lexical)):
            raise IndexCorruptError(f"index parts in '{folder}' disagree on the number of chunks")
        if not _all_finite(dense.vectors):
            raise IndexCorruptError(f"the vectors in '{folder}' hold NaN or infinite values")
        problems = [IngestProblem(**problem) for problem in manifest.get("problems", [])]
        knowledge = EmbeddedKnowledge(
            fingerprint=manifest["fingerprint"],
            embedder=manifest.get("embedder", ""),
            chunks=chunks,
            vectors=dense.vectors,
            lexical=lexical,
            columns=columns or MetadataColumns([chunk.metadata for chunk in chunks]),
            problems=tuple(problems),
        )
        return cls(knowledge, dense)


def file_checksums(folder: Path) -> dict[str, dict[str, Any]]:
    """Size and XXH3-128 digest of every file under ``folder``, by its relative path."""
    return {
        path.relative_to(folder).as_posix(): {
            "size": path.stat().st_size,
            "xxh3_128": _digest(path),
        }
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def verify_checksums(folder: Path, expected: Any) -> None:
    """Raise ``IndexCorruptError`` naming the first file whose size or bytes changed.

    An index published before checksums were written (no ``files`` in its manifest) is not
    checked. Sizes are compared first, so a truncated file is caught without hashing anything.
    """
    if expected is None:
        return
    if not isinstance(expected, dict):
        raise IndexCorruptError(f"the manifest in '{folder}' lists its files wrongly")
    for name, recorded in expected.items():
        path = folder / name
        try:
            size = path.stat().st_size
        except OSError as error:
            raise IndexCorruptError(f"'{name}' in '{folder}' is missing: {error}") from None
        if size != recorded.get("size"):
            raise IndexCorruptError(
                f"'{name}' in '{folder}' has {size} bytes, {recorded.get('size')} were written"
            )
    for name, recorded in expected.items():
        if _digest(folder / name) != recorded.get("xxh3_128"):
            raise IndexCorruptError(f"'{name}' in '{folder}' does not match its checksum")


def _digest(path: Path) -> str:
    """XXH3-128 of the file, read in blocks (a fast non-cryptographic hash: this finds damage,
    not tampering, and a 100k-chunk index is read once per load)."""
    hasher = xxhash.xxh3_128()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHECKSUM_BLOCK_BYTES), b""):
            hasher.update(block)
    return hasher.hexdigest()


def _all_finite(vectors: np.ndarray) -> bool:
    """Checked in blocks of rows, so that a memory-mapped array is never copied whole."""
    rows = max(1, CHECKSUM_BLOCK_BYTES // max(1, vectors.itemsize * vectors.shape[-1]))
    return all(
        bool(np.isfinite(vectors[start : start + rows]).all())
        for start in range(0, len(vectors), rows)
    )


class IndexDirectory:
    """The ``index_path`` folder: published indexes, the ``CURRENT`` pointer and the build lock."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def lock(self, timeout: float = -1) -> FileLock:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise IndexFolderNotWritable(self.root, error) from None
        return FileLock(str(self.root / LOCK_FILE), timeout=timeout)

    def current(self) -> Path | None:
        """The published index folder, or None when nothing (trustworthy) was published yet."""
        try:
            name = (self.root / CURRENT_FILE).read_bytes().decode("utf-8").strip()
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as error:
            logger.warning(
                "knowledge.index.pointer_unreadable", root=str(self.root), error=str(error)
            )
            return None
        folder = self.root / name
        if not PUBLISHED_NAME.fullmatch(name) or not is_inside(folder, self.root.resolve()):
            logger.warning(
                "knowledge.index.pointer_refused",
                root=str(self.root),
                pointer=name[:200],
                event_info="CURRENT does not name an index folder inside index_path; rebuilding",
            )
            return None
        return folder if (folder / MANIFEST_FILE).is_file() else None

    def current_fingerprint(self) -> str | None:
        folder = self.current()
        if folder is None:
            return None
        try:
            manifest = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        fingerprint = manifest.get("fingerprint")
        return fingerprint if isinstance(fingerprint, str) else None

    def publish(self, index: KnowledgeIndex) -> Path:
        """Write ``index`` beside the current one, then switch ``CURRENT`` to it atomically."""
        name = f"index-{index.knowledge.fingerprint[:16]}-{uuid.uuid4().hex[:8]}"
        staging = self.root / f".staging-{name}"
        final = self.root / name
        try:
            index.write(staging)
            os.replace(staging, final)
            self._clear_pointer_in_the_way()
            pointer = self.root / f".{CURRENT_FILE}.{uuid.uuid4().hex}"
            pointer.write_text(name, encoding="utf-8")
            os.replace(pointer, self.root / CURRENT_FILE)
        except OSError as error:  # read-only, full or not a folder: say which and how to fix
            shutil.rmtree(staging, ignore_errors=True)
            raise IndexFolderNotWritable(self.root, error) from None
        self._remove_old(keep=final)
        logger.info("knowledge.index.published", folder=str(final), chunks=len(index))
        return final

    def _clear_pointer_in_the_way(self) -> None:
        """A folder where ``CURRENT`` belongs (made by hand or by a tool) cannot be replaced by
        the pointer file; it holds no index, so it is removed, and the log says so."""
        pointer = self.root / CURRENT_FILE
        if pointer.is_dir() and not pointer.is_symlink():
            logger.warning(
                "knowledge.index.pointer_replaced",
                root=str(self.root),
                event_info="CURRENT was a folder, not the pointer file; replaced it",
            )
            shutil.rmtree(pointer)

    def _remove_old(self, keep: Path) -> None:
        published = sorted(
            (p for p in self.root.glob("index-*") if p.is_dir() and p != keep),
            key=lambda p: p.stat().st_mtime,
        )
        stale = published[: max(0, len(published) - KEEP_PREVIOUS)]
        stale += [p for p in self.root.glob(".staging-*") if p.is_dir()]
        for folder in stale:
            shutil.rmtree(folder, ignore_errors=True)


def _write_json(path: Path, payload: Any) -> None:
    path.write_text(json.dumps(payload, ensure_ascii=False), encoding="utf-8")
