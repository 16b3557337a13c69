"""A document lost to a dying parser process comes back by itself; one that kills its parser every
time is left alone until it changes.

A worker process parsing a file can die for reasons that have nothing to do with the file (the
out-of-memory killer on an overloaded machine). That file is reported and the rest is served, but
the index is not taken as current: the next start or refresh parses the file again and serves it.
A file that takes its parser down on the retry too stays a problem, and the index built then is
current, so it costs no rebuild at every refresh until its bytes change.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from rasa_context_retrieval.config import StoreConfig
from rasa_context_retrieval.engine.live_index import LiveIndex
from rasa_context_retrieval.engine.withdrawal import changed_chunk_ids
from rasa_context_retrieval.faiss import builder
from rasa_context_retrieval.faiss.builder import ensure_index
from rasa_context_retrieval.faiss.index import IndexDirectory, KnowledgeIndex
from rasa_context_retrieval.ingestion.knowledge import EmbeddedKnowledge
from rasa_context_retrieval.ingestion.settings import PARSE_CACHE_FILE
from rasa_context_retrieval.knowledge import loader
from tests.test_build_parsing import mixed_folder
from tests.test_index_persistence import HashingEmbedder, settings_for
from tests.worker_tasks import dies_every_time, dies_while_overloaded

LOST = "exports.md"
ANSWER = "Q: How do I export invoices?\nA: From the billing page, as a CSV file.\n"
REFRESH_WAIT_SECONDS = 60


@pytest.fixture(autouse=True)
def in_worker_processes(monkeypatch) -> None:
    """Parse in worker processes on any machine (one core would parse in the test's process)."""
    monkeypatch.setattr(loader, "worker_processes", lambda: 2)


def overloaded_folder(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """A knowledge base whose file ``LOST`` kills its parser process while the returned flag
    exists."""
    docs = mixed_folder(tmp_path)
    flag = tmp_path / "overloaded"
    flag.touch()
    (docs / LOST).write_text(f"overloaded: {flag}\n\n{ANSWER}", encoding="utf-8")
    monkeypatch.setattr(loader, "parse_file", dies_while_overloaded)
    return docs, flag


def refreshing_config(docs: Path) -> StoreConfig:
    """An assistant on ``docs`` (index where ``settings_for`` puts it) that checks for changes
    every 10 ms."""
    return StoreConfig.from_kwargs(
        {
            "docs": str(docs),
            "index_path": str(docs.parent / "index"),
            "refresh_seconds": 0.01,
            "query_embedder": "rasa",
        }
    )


def embedded(knowledge: KnowledgeIndex | EmbeddedKnowledge | None) -> EmbeddedKnowledge:
    assert knowledge is not None
    return knowledge.knowledge if isinstance(knowledge, KnowledgeIndex) else knowledge


def sources(knowledge: KnowledgeIndex | EmbeddedKnowledge | None) -> set[str]:
    return {str(chunk.metadata["source"]) for chunk in embedded(knowledge).chunks}


def reasons(knowledge: KnowledgeIndex | EmbeddedKnowledge | None, file: str) -> list[str]:
    return [problem.reason for problem in embedded(knowledge).problems if problem.file == file]


def test_a_file_lost_to_a_dying_parser_is_parsed_again_and_served_at_the_next_start(
    tmp_path, monkeypatch
):
    docs, flag = overloaded_folder(tmp_path, monkeypatch)
    settings = settings_for(docs)
    first = ensure_index(settings, HashingEmbedder(), progress=False)
    assert LOST not in sources(first)
    assert reasons(first, LOST) == [loader.CRASHED_REASON]
    cached = json.loads((settings.index_path / PARSE_CACHE_FILE).read_text(encoding="utf-8"))
    assert "items" not in cached["files"][LOST], "a lost parse is not kept as the file's parse"

    flag.unlink()  # the machine is no longer overloaded; the file itself never changed
    second = ensure_index(settings, HashingEmbedder(), progress=False)
    assert LOST in sources(second)
    assert sources(second) - {LOST} == sources(first), "the others were served all along"
    assert reasons(second, LOST) == []
    published = IndexDirectory(settings.index_path).current()
    ensure_index(settings, HashingEmbedder(), progress=False)
    assert IndexDirectory(settings.index_path).current() == published, "settled: not rebuilt"


def test_a_refresh_parses_a_lost_file_again_and_serves_it(tmp_path, monkeypatch):
    docs, flag = overloaded_folder(tmp_path, monkeypatch)
    live = LiveIndex.open(refreshing_config(docs), HashingEmbedder(), progress=False)
    try:
        assert LOST not in sources(live.knowledge)
        assert reasons(live.knowledge, LOST) == [loader.CRASHED_REASON]
        flag.unlink()
        started = live.knowledge
        deadline = time.monotonic() + REFRESH_WAIT_SECONDS
        while live.knowledge is started and time.monotonic() < deadline:
            time.sleep(0.05)
            live.refresh_if_due()
        assert live.knowledge is not started, "no refresh rebuilt the index"
        assert LOST in sources(live.knowledge)
        assert reasons(live.knowledge, LOST) == []
    finally:
        live.close()


def test_a_file_that_kills_its_parser_every_time_is_tried_twice_then_left_until_it_changes(
    tmp_path, monkeypatch
):
    docs = mixed_folder(tmp_path)
    deaths = tmp_path / "deaths"
    path = docs / LOST
    path.write_text(f"deaths: {deaths}\n\n{ANSWER}", encoding="utf-8")
    monkeypatch.setattr(loader, "parse_file", dies_every_time)
    settings = settings_for(docs)
    directory = IndexDirectory(settings.index_path)

    first = ensure_index(settings, HashingEmbedder(), progress=False)
    assert reasons(first, LOST) == [loader.CRASHED_REASON]
    tried_once = len(deaths.read_text().splitlines())
    second = ensure_index(settings, HashingEmbedder(), progress=False)
    assert reasons(second, LOST) == [loader.REPEATEDLY_CRASHED_REASON]
    assert len(sources(second)) > 20, "the other documents are served"
    tried_twice = len(deaths.read_text().splitlines())
    assert tried_twice > tried_once
    published = directory.current()

    for _ in range(3):  # starts (and refreshes, by the same rule) load it, parse nothing
        again = ensure_index(settings, HashingEmbedder(), progress=False)
        assert reasons(again, LOST) == [loader.REPEATEDLY_CRASHED_REASON]
    assert directory.current() == published, "no rebuild while nothing changed"
    assert len(deaths.read_text().splitlines()) == tried_twice, "not parsed again"
    live = LiveIndex.open(refreshing_config(docs), HashingEmbedder(), progress=False)
    try:
        served = live.knowledge
        for _ in range(5):
            time.sleep(0.02)
            live.refresh_if_due()
            with live._refreshing:  # the refresh, if one started, has finished
                pass
        assert live.knowledge is served, "a refresh rebuilt"
    finally:
        live.close()
    assert len(deaths.read_text().splitlines()) == tried_twice, "not parsed again"

    path.write_text(f"deaths: {deaths}\n\nEdited. {ANSWER}", encoding="utf-8")
    edited = ensure_index(settings, HashingEmbedder(), progress=False)
    assert len(deaths.read_text().splitlines()) > tried_twice, "a changed file is tried again"
    assert reasons(edited, LOST) == [loader.CRASHED_REASON]


def test_a_refresh_checking_for_changed_text_uses_up_no_try_of_a_lost_file(tmp_path, monkeypatch):
    """A refresh first reads the documents to withhold changed text, then rebuilds: on a machine
    still overloaded during that check, the file must still get its retry in the rebuild."""
    docs, flag = overloaded_folder(tmp_path, monkeypatch)
    settings = settings_for(docs)
    first = ensure_index(settings, HashingEmbedder(), progress=False)
    assert reasons(first, LOST) == [loader.CRASHED_REASON]
    for _ in range(2):  # the parser process dies in each check
        assert changed_chunk_ids(first.knowledge, settings) == frozenset()
    flag.unlink()
    rebuilt = ensure_index(settings, HashingEmbedder(), progress=False)
    assert LOST in sources(rebuilt)


def test_starts_at_once_parse_a_lost_file_once_not_once_each(tmp_path, monkeypatch):
    """Several processes starting at once wait for the one that builds; they serve its index
    even though a file is missing from it, rather than each parse that file again at once."""
    docs = mixed_folder(tmp_path)
    deaths = tmp_path / "deaths"
    (docs / LOST).write_text(f"deaths: {deaths}\n\n{ANSWER}", encoding="utf-8")
    monkeypatch.setattr(loader, "parse_file", dies_every_time)
    settings = settings_for(docs)
    lock = builder._acquired
    started: list[bool] = []
    others: list[KnowledgeIndex] = []
    deaths_of_one_build: list[int] = []

    @contextmanager
    def another_start_builds_first(directory: IndexDirectory) -> Iterator[None]:
        if not started:  # the other process takes the lock first and builds
            started.append(True)
            others.append(ensure_index(settings, HashingEmbedder(), progress=False))
            deaths_of_one_build.append(len(deaths.read_text().splitlines()))
        with lock(directory):
            yield

    monkeypatch.setattr(builder, "_acquired", another_start_builds_first)
    served = ensure_index(settings, HashingEmbedder(), progress=False)
    assert embedded(served).fingerprint == embedded(others[0]).fingerprint
    assert reasons(served, LOST) == [loader.CRASHED_REASON], "still due its retry"
    assert len(deaths.read_text().splitlines()) == deaths_of_one_build[0], "not parsed again"
