"""The persisted index: format 2 reads back what was written, format 1 upgrades, nothing is misread.

Format 2 keeps chunks in a memory-mapped table and metadata filters in persisted columns, so a
restart parses nothing per chunk. An index folder of the previous release (format 1, the fixture
under tests/fixtures/index-v1) is still read, and ``ensure_index`` republishes it in format 2
without embedding anything again. A folder of an unknown format or with damaged parts is refused
with ``IndexCorruptError`` and rebuilt, never read as something it is not.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from rasa_context_retrieval.faiss.builder import IndexSettings, ensure_index
from rasa_context_retrieval.faiss.chunk_table import ChunkTable
from rasa_context_retrieval.faiss.index import (
    FORMAT_VERSION,
    IndexCorruptError,
    IndexDirectory,
    KnowledgeIndex,
)
from rasa_context_retrieval.faiss.retriever import filter_mask
from rasa_context_retrieval.filters.syntax import parse_filter
from rasa_context_retrieval.knowledge.models import Chunk
from tests.test_index_persistence import HashingEmbedder

FIXTURE = Path(__file__).parent / "fixtures" / "index-v1"
FILTERS = [
    'eq("plan", "premium")',
    'and(eq("region", "eu"), gte("price_per_month", 5))',
    'ne("platform", "ios")',
    'gt("updated", "2024-05-01")',
    'eq("unknown", "x")',
]


@pytest.fixture
def upgraded_copy(tmp_path: Path) -> IndexSettings:
    """The format-1 fixture copied to a scratch folder, with the settings it was built with."""
    shutil.copytree(FIXTURE, tmp_path / "kb")
    return IndexSettings(tmp_path / "kb" / "docs", tmp_path / "kb" / "index", 500, 50, 8, 10)


def refusing_embedder() -> HashingEmbedder:
    embedder = HashingEmbedder()
    embedder.embed = lambda texts: pytest.fail("an upgrade must not re-embed")  # type: ignore[method-assign]
    return embedder


def format_of(folder: Path) -> int:
    return int(json.loads((folder / "manifest.json").read_text())["format"])


def v1_folder(settings: IndexSettings) -> Path:
    folder = IndexDirectory(settings.index_path).current()
    assert folder is not None and format_of(folder) == 1
    return folder


def test_a_format_1_folder_of_the_previous_release_is_read(upgraded_copy: IndexSettings):
    index = KnowledgeIndex.read(v1_folder(upgraded_copy))
    assert len(index) == 24
    assert index.dense.approximate
    first = index.knowledge.chunks[0]
    assert first.text.startswith("Q: How do I use feature 0")
    assert first.metadata["plan"] == ["free", "plus"]
    assert index.knowledge.columns.values_of("region") == {"eu", "us", "apac"}
    mask = filter_mask(index.knowledge, parse_filter('eq("plan", "premium")'))
    assert mask is not None and mask.sum() == sum(
        "premium" in chunk.metadata["plan"] for chunk in index.knowledge.chunks
    )


def test_an_upgrade_republishes_format_2_without_re_embedding(upgraded_copy: IndexSettings):
    old = KnowledgeIndex.read(v1_folder(upgraded_copy))
    upgraded = ensure_index(upgraded_copy, refusing_embedder(), progress=False)
    folder = IndexDirectory(upgraded_copy.index_path).current()
    assert folder is not None and format_of(folder) == FORMAT_VERSION
    assert upgraded.knowledge.fingerprint != old.knowledge.fingerprint
    assert list(upgraded.knowledge.chunks) == list(old.knowledge.chunks)
    np.testing.assert_array_equal(upgraded.knowledge.vectors, old.knowledge.vectors)

    restarted = ensure_index(upgraded_copy, refusing_embedder(), progress=False)
    assert isinstance(restarted.knowledge.chunks, ChunkTable), (
        "a restart loads format 2, not the JSON"
    )
    assert IndexDirectory(upgraded_copy.index_path).current() == folder
    for text in FILTERS:
        directive = parse_filter(text)
        np.testing.assert_array_equal(
            filter_mask(restarted.knowledge, directive),
            filter_mask(old.knowledge, directive),
            err_msg=text,
        )
    for query in old.knowledge.vectors[:5]:
        assert restarted.dense.search(query, 5) == old.dense.search(query, 5)
    # BM25 is rebuilt with numbers as terms (lexical.NUMBER_TOKENS): its scores move with the
    # longer chunks, its ranking for words does not.
    assert [row for row, _ in restarted.knowledge.lexical.search("feature sync", 5)] == [
        row for row, _ in old.knowledge.lexical.search("feature sync", 5)
    ]


def test_format_2_reads_back_chunks_columns_and_rankings(tmp_path: Path):
    chunks = [
        Chunk("a", "Résumé 😀 with a NUL \x00 and a lone \ud800 surrogate", {"plan": ["plus"]}),
        Chunk("b", "plain text about invoices", {"plan": "Premium", "price": "9.99"}),
        Chunk("c", "", {"updated": "2024-03-01T10:00:00Z", "flag": True, "n": 3}),
    ]
    vectors = np.eye(3, 8, dtype=np.float32)
    built = KnowledgeIndex.build("fp", "emb", chunks, vectors, [], exact_search_below=100)
    built.write(tmp_path / "index")
    read = KnowledgeIndex.read(tmp_path / "index")
    assert list(read.knowledge.chunks) == chunks
    assert read.knowledge.chunks[-1] == chunks[2] and read.knowledge.chunks[1:] == chunks[1:]
    assert read.knowledge.row_of == {"a": 0, "b": 1, "c": 2}
    np.testing.assert_array_equal(read.knowledge.vectors, vectors)
    assert read.knowledge.columns.attributes() == built.knowledge.columns.attributes()
    for text in ['eq("plan", "premium")', 'lt("price", 10)', 'eq("flag", true)', 'ne("plan", "x")']:
        directive = parse_filter(text)
        np.testing.assert_array_equal(
            filter_mask(read.knowledge, directive),
            filter_mask(built.knowledge, directive),
            err_msg=text,
        )
    assert read.knowledge.lexical.search("invoices", 3) == built.knowledge.lexical.search(
        "invoices", 3
    )
    with pytest.raises(IndexError):
        read.knowledge.chunks[3]


def test_an_empty_chunk_table_reads_back(tmp_path: Path):
    ChunkTable.write([], tmp_path / "table")
    assert list(ChunkTable.read(tmp_path / "table")) == []


@pytest.fixture
def published(upgraded_copy: IndexSettings) -> tuple[IndexSettings, Path]:
    ensure_index(upgraded_copy, refusing_embedder(), progress=False)
    folder = IndexDirectory(upgraded_copy.index_path).current()
    assert folder is not None
    return upgraded_copy, folder


def _future_format(folder: Path) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "format": FORMAT_VERSION + 1}))


def _short_offsets(folder: Path) -> None:
    offsets = np.load(folder / "chunks" / "offsets.npy")
    np.save(folder / "chunks" / "offsets.npy", offsets[:-1])


def _records_cut(folder: Path) -> None:
    records = folder / "chunks" / "records.bin"
    records.write_bytes(records.read_bytes()[:-5])


def _columns_for_other_rows(folder: Path) -> None:
    attributes = folder / "columns" / "attributes.json"
    manifest = json.loads(attributes.read_text())
    attributes.write_text(json.dumps({**manifest, "rows": manifest["rows"] + 1}))


def _column_codes_out_of_range(folder: Path) -> None:
    path = folder / "columns" / "0" / "row_codes.npy"
    np.save(path, np.load(path) + 1000)


def _vectors_of_another_shape(folder: Path) -> None:
    vectors = np.load(folder / "vectors.npy")
    np.save(folder / "vectors.npy", vectors[:, :-1])


def _manifest_of_another_corpus(folder: Path) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "chunks": 23}))


@pytest.mark.parametrize(
    "damage",
    [
        _future_format,
        _short_offsets,
        _records_cut,
        _columns_for_other_rows,
        _column_codes_out_of_range,
        _vectors_of_another_shape,
        _manifest_of_another_corpus,
    ],
)
def test_a_folder_that_does_not_fit_is_refused_and_rebuilt(published, damage):
    settings, folder = published
    damage(folder)
    with pytest.raises(IndexCorruptError):
        KnowledgeIndex.read(folder)
    rebuilt = ensure_index(settings, HashingEmbedder(), progress=False)
    assert len(rebuilt) == 24
    assert format_of(IndexDirectory(settings.index_path).current()) == FORMAT_VERSION  # type: ignore[arg-type]
