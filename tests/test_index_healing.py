"""A damaged index heals: the next load sees the damage, says why, and rebuilds from the documents.

Without this, garbage bytes in the chunk records failed every search touching them and NaN
vectors silently found nothing, both across restarts, and a folder named ``CURRENT`` stopped
every start with "cannot write the index".
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from structlog.testing import capture_logs

from rasa_context_retrieval.faiss.builder import IndexSettings, ensure_index
from rasa_context_retrieval.faiss.chunk_table import RECORDS_FILE
from rasa_context_retrieval.faiss.index import (
    CHUNK_TABLE_FOLDER,
    CURRENT_FILE,
    DENSE_FILE,
    VECTORS_FILE,
    IndexDirectory,
    KnowledgeIndex,
)
from tests.test_index_persistence import HashingEmbedder, make_docs

CHUNKS = 12


def garbage_in_records(folder: Path) -> None:
    records = folder / CHUNK_TABLE_FOLDER / RECORDS_FILE
    content = bytearray(records.read_bytes())
    middle = len(content) // 2
    content[middle : middle + 16] = b"\xff\xfe garbage \x00\x01\x02"[:16]
    records.write_bytes(bytes(content))


def nan_vectors(folder: Path) -> None:
    vectors = np.load(folder / VECTORS_FILE)
    np.save(folder / VECTORS_FILE, np.full_like(vectors, np.nan), allow_pickle=False)


def truncated_dense(folder: Path) -> None:
    dense = folder / DENSE_FILE
    dense.write_bytes(dense.read_bytes()[: dense.stat().st_size // 2])


def heals(index: KnowledgeIndex) -> None:
    assert len(index) == CHUNKS
    assert all(chunk.text.startswith("Q: Question") for chunk in index.knowledge.chunks)
    assert np.isfinite(np.asarray(index.knowledge.vectors)).all()


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        (garbage_in_records, RECORDS_FILE),
        (nan_vectors, VECTORS_FILE),
        (truncated_dense, DENSE_FILE),
    ],
)
def test_a_damaged_index_file_is_noticed_at_load_and_rebuilt(
    tmp_path: Path, damage: Callable[[Path], None], named: str
):
    settings = IndexSettings(make_docs(tmp_path, CHUNKS), tmp_path / "index", 400, 40, 16, 200_000)
    ensure_index(settings, HashingEmbedder(), progress=False)
    damaged = IndexDirectory(settings.index_path).current()
    assert damaged is not None
    damage(damaged)
    with capture_logs() as logs:
        healed = ensure_index(settings, HashingEmbedder(), progress=False)  # a restart
    heals(healed)
    why = [log["error"] for log in logs if log["event"] == "knowledge.index.unreadable"]
    assert why and all(named in error for error in why), why
    assert IndexDirectory(settings.index_path).current() != damaged
    heals(ensure_index(settings, HashingEmbedder(), progress=False))  # and stays healed


def test_a_folder_named_current_is_replaced_by_the_pointer(tmp_path: Path):
    settings = IndexSettings(make_docs(tmp_path, CHUNKS), tmp_path / "index", 400, 40, 16, 200_000)
    (settings.index_path / CURRENT_FILE).mkdir(parents=True)
    (settings.index_path / CURRENT_FILE / "stray.txt").write_text("left here by a tool")
    with capture_logs() as logs:
        heals(ensure_index(settings, HashingEmbedder(), progress=False))
    assert (settings.index_path / CURRENT_FILE).is_file()
    assert any(log["event"] == "knowledge.index.pointer_replaced" for log in logs)
    with capture_logs() as logs:
        heals(ensure_index(settings, HashingEmbedder(), progress=False))  # a restart loads it
    assert any(log["event"] == "knowledge.index.loaded" for log in logs)
