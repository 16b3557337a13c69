"""A build parses files on every core, with the serial result, and never parses a file twice.

A large knowledge base is mostly parsing and embedding: files are parsed in worker processes
(one per core), the documents and problems come out exactly as a one-by-one parse gives them,
a file whose parser kills its worker is one more problem (not a lost build), and a file whose
bytes did not change since the last load is not parsed again.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from rasa_context_retrieval.engine.withdrawal import changed_chunk_ids
from rasa_context_retrieval.faiss.builder import ensure_index
from rasa_context_retrieval.knowledge import loader
from rasa_context_retrieval.knowledge.loader import FileToParse, load_knowledge_base
from rasa_context_retrieval.workers import Ready, WorkerCrashed, in_worker_processes
from tests.conftest import REPO_ROOT
from tests.test_index_persistence import HashingEmbedder, settings_for
from tests.worker_tasks import (
    CRASHING_FILE,
    crashes_in_a_worker,
    dies_on_three,
    pid_of_worker,
    pid_unless_three,
)


def mixed_folder(tmp_path: Path) -> Path:
    """The example knowledge base plus files that become problems."""
    docs = tmp_path / "docs"
    shutil.copytree(REPO_ROOT / "docs", docs)
    (docs / "broken.md").write_text("---\nplan: [free\n---\nText.\n", encoding="utf-8")
    (docs / "binary.txt").write_bytes(b"\0\1\2")
    (docs / "lines.jsonl").write_text('{"text": "ok"}\n{broken\n', encoding="utf-8")
    (docs / "empty.md").write_text("  \n", encoding="utf-8")
    return docs


@pytest.mark.parametrize("batch", [1, 4])
def test_tasks_run_in_other_processes_and_come_back_in_order(batch):
    tasks = [*range(6), Ready((99, 0)), *range(6, 12)]
    outcomes = list(in_worker_processes(pid_of_worker, tasks, workers=2, batch=batch))
    assert [task for task, _ in outcomes] == [*range(6), 99, *range(6, 12)]
    worker_pids = {pid for task, pid in outcomes if task != 99}
    assert os.getpid() not in worker_pids
    assert 1 <= len(worker_pids) <= 2


@pytest.mark.parametrize("batch", [1, 3])
def test_a_task_that_kills_its_worker_is_the_only_one_lost(batch):
    outcomes = list(in_worker_processes(dies_on_three, range(10), workers=2, batch=batch))
    assert isinstance(outcomes[3], WorkerCrashed)
    assert [o for n, o in enumerate(outcomes) if n != 3] == [n * 10 for n in range(10) if n != 3]


def test_after_a_worker_dies_the_tasks_in_flight_are_rerun_in_one_process_until_one_kills_it():
    """Every task in flight when a worker died is run again alone, but not each in a new
    process: one that starts by importing the parsers again, dozens of times per crash."""
    outcomes = list(in_worker_processes(pid_unless_three, range(12), workers=2))
    assert isinstance(outcomes[3], WorkerCrashed)
    processes = {pid for n, pid in enumerate(outcomes) if n != 3}
    assert os.getpid() not in processes
    # the pool's two workers, the fresh pool's two for the tasks not yet sent, and two for the
    # tasks re-run alone: the one task 3 killed and the one after it (a process per re-run task
    # made eight or more)
    assert len(processes) <= 6, sorted(processes)


def test_a_parallel_parse_gives_the_serial_documents_and_problems(tmp_path):
    docs = mixed_folder(tmp_path)
    serial = load_knowledge_base(docs, ["plan"], workers=1)
    parallel = load_knowledge_base(docs, ["plan"], workers=2)
    assert len(serial.documents) > 20 and len(serial.problems) >= 4
    assert parallel.documents == serial.documents
    assert parallel.problems == serial.problems


def test_a_parser_crash_costs_one_file_not_the_build(tmp_path, monkeypatch):
    docs = mixed_folder(tmp_path)
    (docs / CRASHING_FILE).write_text("Text that kills the parser.\n", encoding="utf-8")
    serial = load_knowledge_base(docs, workers=1)
    monkeypatch.setattr(loader, "parse_file", crashes_in_a_worker)
    parallel = load_knowledge_base(docs, workers=2)
    crashed = [p for p in parallel.problems if p.file == CRASHING_FILE]
    assert [p.reason for p in crashed] == [loader.CRASHED_REASON]
    assert parallel.documents == [d for d in serial.documents if d.source != CRASHING_FILE]
    assert [p for p in parallel.problems if p.file != CRASHING_FILE] == serial.problems


class CountedParses:
    """The names of the files parsed from now on (in this process, so that they can be counted;
    which process parses a file does not decide whether it is parsed)."""

    def __init__(self, monkeypatch) -> None:
        monkeypatch.setattr(loader, "PARALLEL_FROM_FILES", 10**9)
        self.files: list[str] = []
        parse = loader.parse_file

        def counted(task: FileToParse) -> list:
            self.files.append(task.name)
            return parse(task)

        monkeypatch.setattr(loader, "parse_file", counted)


def test_a_rebuild_parses_only_the_changed_file(tmp_path, monkeypatch):
    docs = mixed_folder(tmp_path)
    settings = settings_for(docs)
    parses = CountedParses(monkeypatch)
    first = ensure_index(settings, HashingEmbedder(), progress=False)
    assert len(parses.files) > 10
    parses.files.clear()
    (docs / "new.md").write_text("A new page about shared folders.\n", encoding="utf-8")
    second = ensure_index(settings, HashingEmbedder(), progress=False)
    assert parses.files == ["new.md"]
    assert second.knowledge.problems == first.knowledge.problems
    rechunked = ensure_index(replace(settings, chunk_size=300), HashingEmbedder(), progress=False)
    assert parses.files == ["new.md"]  # a chunking change parses nothing
    assert len(rechunked) > len(second)


def test_a_refresh_parses_an_edited_file_once(tmp_path, monkeypatch):
    docs = mixed_folder(tmp_path)
    settings = settings_for(docs)
    served = ensure_index(settings, HashingEmbedder(), progress=False)
    parses = CountedParses(monkeypatch)
    (docs / "new.md").write_text("A new page about shared folders.\n", encoding="utf-8")
    changed_chunk_ids(served.knowledge, settings)  # what a refresh does before rebuilding
    ensure_index(settings, HashingEmbedder(), progress=False)
    assert parses.files == ["new.md"]


def test_a_cached_parse_gives_what_a_fresh_parse_gives(tmp_path):
    docs = mixed_folder(tmp_path)
    settings = settings_for(docs)
    ensure_index(settings, HashingEmbedder(), progress=False)
    fresh = load_knowledge_base(docs, workers=1)
    cached = load_knowledge_base(docs, workers=1, cache=settings.parse_cache())
    assert cached.documents == fresh.documents
    assert cached.problems == fresh.problems


def test_a_changed_access_attribute_parses_every_file_again(tmp_path, monkeypatch):
    docs = mixed_folder(tmp_path)
    settings = settings_for(docs)
    ensure_index(settings, HashingEmbedder(), progress=False)
    parses = CountedParses(monkeypatch)
    ensure_index(replace(settings, access_attributes=("plan",)), HashingEmbedder(), progress=False)
    assert len(parses.files) > 10  # the access attributes decide which documents are refused
