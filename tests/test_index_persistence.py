"""The persisted index survives crashes and concurrent start-ups.

These tests are about files and processes, not about retrieval quality, so the processes use a
small deterministic embedder (word hashing) instead of loading the transformer model in each one.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import psutil
import pytest

from rasa_context_retrieval.faiss.builder import IndexSettings, ensure_index
from rasa_context_retrieval.faiss.index import (
    IndexDirectory,
    IndexFolderNotWritable,
    KnowledgeIndex,
)

DIMENSION = 32


class HashingEmbedder:
    """Deterministic bag-of-words vectors; optionally slow, optionally counting into a file."""

    model = "hashing-test-embedder"
    config = {"provider": "test", "model": "hashing-test-embedder"}

    def __init__(self, delay: float = 0.0, tally: str | None = None) -> None:
        self.delay = delay
        self.tally = tally

    def embed(self, texts: list[str]) -> SimpleNamespace:
        time.sleep(self.delay * len(texts))
        if self.tally:
            with open(self.tally, "a", encoding="utf-8") as handle:
                handle.write(f"{os.getpid()} {len(texts)}\n")
        vectors = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                bucket = int(hashlib.md5(word.encode()).hexdigest(), 16) % DIMENSION
                vectors[row, bucket] += 1.0
        return SimpleNamespace(data=(vectors + 1e-3).tolist())


def make_docs(folder: Path, count: int, version: str = "v1") -> Path:
    docs = folder / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        (docs / f"doc{n}.md").write_text(f"Q: Question {n} {version}?\nA: Answer {n}.\n")
    return docs


def settings_for(docs: Path) -> IndexSettings:
    return IndexSettings(
        docs=docs,
        index_path=docs.parent / "index",
        chunk_size=500,
        chunk_overlap=50,
        embedding_batch_size=4,
        exact_search_below=100_000,
    )


def test_a_failed_rebuild_leaves_the_previous_index_published(tmp_path, monkeypatch):
    docs = make_docs(tmp_path, 5)
    first = ensure_index(settings_for(docs), HashingEmbedder(), progress=False)
    make_docs(tmp_path, 6, version="v2")

    def crash_half_way(self: KnowledgeIndex, folder: Path) -> None:
        folder.mkdir(parents=True)
        (folder / "chunks.json").write_text("[{", encoding="utf-8")
        raise OSError("disk full")

    monkeypatch.setattr(KnowledgeIndex, "write", crash_half_way)
    with pytest.raises(IndexFolderNotWritable, match="disk full"):
        ensure_index(settings_for(docs), HashingEmbedder(), progress=False)
    monkeypatch.undo()

    directory = IndexDirectory(settings_for(docs).index_path)
    assert directory.current_fingerprint() == first.knowledge.fingerprint
    survivor = KnowledgeIndex.read(directory.current())  # type: ignore[arg-type]
    assert len(survivor) == 5


def _build_in_child(docs: str, delay: float, tally: str | None) -> None:
    ensure_index(settings_for(Path(docs)), HashingEmbedder(delay, tally), progress=False)


def _wait_until(condition: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    """Poll ``condition`` until it holds; fail after ``timeout`` seconds (a loaded machine may
    take many seconds to start a process, never minutes)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {timeout:g} s")
        time.sleep(0.02)


def test_a_build_killed_mid_way_leaves_the_previous_index_usable(tmp_path):
    docs = make_docs(tmp_path, 4)
    first = ensure_index(settings_for(docs), HashingEmbedder(), progress=False)
    make_docs(tmp_path, 40, version="v2")
    tally = tmp_path / "embedded.txt"
    context = multiprocessing.get_context("spawn")
    child = context.Process(target=_build_in_child, args=(str(docs), 0.2, str(tally)))
    child.start()
    # The first batch of 4 is embedded: parsing is over and 9 batches (7 s of embedding) remain.
    _wait_until(tally.exists, "the child's first embedded batch")
    parse_workers = psutil.Process(child.pid).children(recursive=True)
    assert child.is_alive(), "the build is still embedding when it is killed"
    os.kill(child.pid, signal.SIGKILL)  # type: ignore[arg-type]
    child.join()
    assert child.exitcode == -signal.SIGKILL
    assert len(tally.read_text(encoding="utf-8").splitlines()) < 10, "killed before the end"
    assert parse_workers, "40 files are parsed in worker processes"
    _, alive = psutil.wait_procs(parse_workers, timeout=30)
    assert alive == [], "the killed build's parse workers and fork server exit with it"

    directory = IndexDirectory(settings_for(docs).index_path)
    assert directory.current_fingerprint() == first.knowledge.fingerprint
    assert len(KnowledgeIndex.read(directory.current())) == 4  # type: ignore[arg-type]
    rebuilt = ensure_index(settings_for(docs), HashingEmbedder(), progress=False)
    assert len(rebuilt) == 40  # the dead process's lock does not block the next start


@pytest.mark.slow  # spawns three worker processes
def test_workers_starting_together_build_the_index_once(tmp_path):
    docs = make_docs(tmp_path, 12)
    tally = tmp_path / "embedded.txt"
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_build_in_child, args=(str(docs), 0.05, str(tally)))
        for _ in range(3)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    lines = tally.read_text(encoding="utf-8").split()
    embedded = sum(int(count) for count in lines[1::2])
    assert embedded == 12, "exactly one worker embeds; the others load what it published"
    index = KnowledgeIndex.read(IndexDirectory(settings_for(docs).index_path).current())  # type: ignore[arg-type]
    assert len(index) == 12


def test_restart_loads_without_embedding(tmp_path: Path):
    """What a restart costs in seconds is measured by bench/guard_costs.py and bench/startup.py."""
    docs = make_docs(tmp_path, 30)
    ensure_index(settings_for(docs), HashingEmbedder(), progress=False)

    refuses = HashingEmbedder(tally=str(tmp_path / "embedded-on-restart.txt"))

    index = ensure_index(settings_for(docs), refuses, progress=False)
    assert len(index) == 30
    assert not (tmp_path / "embedded-on-restart.txt").exists(), "a restart must embed nothing"
