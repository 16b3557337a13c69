"""Queries embedded through the ONNX export give Rasa's vectors, or Rasa's client is used.

The export is made once per test run (session fixture) from the bundled all-MiniLM-L6-v2 and
compared with Rasa's own ``huggingface_local`` client.
"""

from __future__ import annotations

import shutil
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from structlog.testing import capture_logs

from rasa_context_retrieval.config import StoreConfig
from rasa_context_retrieval.conversation import Conversation, Turn
from rasa_context_retrieval.engine.search import QUERY_MODEL_FOLDER, KnowledgeSearch
from rasa_context_retrieval.query_embedding.batcher import QueryBatcher
from rasa_context_retrieval.query_embedding.embedder import (
    OnnxQueryEmbedder,
    PreparingQueryEmbedder,
    RasaQueryEmbedder,
    open_query_embedder,
)
from rasa_context_retrieval.query_embedding.onnx import LocalModel, cached_export, export_file
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow  # exports the model to ONNX, several times

WAIT_S = 10.0

QUESTIONS = [
    "How much does the premium plan cost?",
    "and how many devices can I connect?",
    "can I get a refund if I cancel?",
    "How do I enable offline files on android?",
    "My files are not syncing on windows",
    "where is my data stored in the EU?",
    "How do I share a folder with 12 people?",
    "I forgot my password",
    "¿Puedo usar Lumen Drive sin conexión?",
    "two-factor login   ",
]


@pytest.fixture(scope="session")
def export_dir(
    tmp_path_factory: pytest.TempPathFactory, model_path: Path, seed_query_export: Any
) -> Path:
    """A cache folder holding the fp32 export: a link to the one the run checked at start-up
    (``tests/conftest.py``). The tests below that export (two at once, a user's saved model,
    int8) make exports of their own."""
    folder = tmp_path_factory.mktemp("index")
    seed_query_export(folder)
    return folder / QUERY_MODEL_FOLDER


@pytest.fixture(scope="session")
def onnx_embedder(embedder: Any, export_dir: Path) -> OnnxQueryEmbedder:
    opened = open_query_embedder("auto", embedder, export_dir, background=False)
    assert isinstance(opened, OnnxQueryEmbedder), "the self-check failed on the real model"
    return opened


def test_query_vectors_are_the_ones_rasas_client_gives(onnx_embedder: OnnxQueryEmbedder, embedder):
    rasa = RasaQueryEmbedder(embedder)
    cosines = [float(onnx_embedder.embed(q) @ rasa.embed(q)) for q in QUESTIONS]
    assert min(cosines) >= 0.9999, cosines


def test_a_restart_reuses_the_cached_export(export_dir: Path, model_path: Path, tmp_path: Path):
    copy = tmp_path / "cache"
    shutil.copytree(export_dir, copy)
    before = {path.name: path.stat().st_mtime_ns for path in copy.iterdir()}
    reused = cached_export(LocalModel.describe(model_path), copy)
    assert reused.parent == copy
    assert {path.name: path.stat().st_mtime_ns for path in copy.iterdir()} == before


def test_a_corrupted_export_is_reported_once_and_rasas_client_is_used(
    export_dir: Path, model_path: Path, embedder: Any, tmp_path: Path
):
    fingerprint = LocalModel.describe(model_path).fingerprint()
    corrupted = export_file(tmp_path, fingerprint, int8=False)
    corrupted.write_bytes(export_file(export_dir, fingerprint, int8=False).read_bytes()[:4096])
    with capture_logs() as logs:
        opened = open_query_embedder("auto", embedder, tmp_path, background=False)
    assert isinstance(opened, RasaQueryEmbedder)
    warnings = [log for log in logs if log["event"] == "query_embedder.onnx.unused"]
    assert len(warnings) == 1 and "could not be used" in warnings[0]["reason"]
    assert (
        float(opened.embed(QUESTIONS[0]) @ RasaQueryEmbedder(embedder).embed(QUESTIONS[0])) > 0.9999
    )


def test_int8_is_opt_in_and_an_export_with_other_vectors_fails_the_self_check(
    export_dir: Path, model_path: Path, embedder: Any, tmp_path: Path
):
    shutil.copytree(export_dir, tmp_path / "int8")  # int8 quantizes the fp32 export it finds
    int8 = open_query_embedder("int8", embedder, tmp_path / "int8", background=False)
    assert isinstance(int8, OnnxQueryEmbedder) and int8.encoder.path.name.endswith("-int8.onnx")
    # the int8 file in place of the fp32 one: it loads, but its vectors are not Rasa's
    wrong = tmp_path / "wrong"
    fingerprint = LocalModel.describe(model_path).fingerprint()
    wrong.mkdir()
    shutil.copyfile(int8.encoder.path, export_file(wrong, fingerprint, int8=False))
    with capture_logs() as logs:
        opened = open_query_embedder("auto", embedder, wrong, background=False)
    assert isinstance(opened, RasaQueryEmbedder)
    reasons = [log["reason"] for log in logs if log["event"] == "query_embedder.onnx.unused"]
    assert len(reasons) == 1 and "differ from Rasa's" in reasons[0]


def test_concurrent_callers_each_get_their_own_vector(onnx_embedder: OnnxQueryEmbedder):
    alone = {q: onnx_embedder.embed_many([q])[0] for q in QUESTIONS}
    batcher = QueryBatcher(onnx_embedder.encode, window_seconds=0.05)
    with ThreadPoolExecutor(max_workers=len(QUESTIONS)) as pool:
        for _ in range(3):
            vectors = list(pool.map(batcher.embed, QUESTIONS))
    for question, vector in zip(QUESTIONS, vectors, strict=True):
        assert np.allclose(vector, alone[question], atol=1e-5), question
    assert max(batcher.batch_sizes) > 1, batcher.batch_sizes
    assert sum(batcher.batch_sizes) == 3 * len(QUESTIONS)


LONG_MIX = [
    "Right-click a file or folder and choose Make available offline, then wait for the sync. " * 4,
    "and on Android?",
]


class _InFlight:
    """Wraps a real ``embed_many`` and records the most calls that were running at once."""

    def __init__(self, embed_many: Any) -> None:
        self.embed_many = embed_many
        self.running = 0
        self.most = 0
        self._lock = threading.Lock()

    def __call__(self, texts: Any, cores: int = 1) -> np.ndarray:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            return np.asarray(self.embed_many(texts, cores))
        finally:
            with self._lock:
                self.running -= 1


@pytest.mark.parametrize("leaders", [1, 2])
def test_searches_that_need_the_model_together_run_one_call_per_core_at_once(
    onnx_embedder: OnnxQueryEmbedder, leaders: int
):
    """With one leader, a second search's texts waited for the first search's model call to
    end while a core stood idle; the model releases the GIL, so calls run side by side, up to
    ``max_leaders``, and every caller still gets its own vectors."""
    alone = onnx_embedder.encode(LONG_MIX)
    calls = _InFlight(onnx_embedder.encode)
    batcher = QueryBatcher(calls, max_leaders=leaders)
    start = threading.Barrier(2)

    def search(_: int) -> list[np.ndarray]:
        start.wait()
        return [vector for _ in range(8) for vector in batcher.embed_many(LONG_MIX)]

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(search, range(2)))
    assert calls.most == leaders
    for vectors in results:
        for found, expected in zip(vectors, [*alone] * 8, strict=True):
            assert np.allclose(found, expected, atol=1e-5)


def test_a_model_call_may_use_the_cores_no_other_call_is_using():
    """Alone, a search's call may spread its texts over every core; beside another search's
    call it keeps to its own core."""
    seen: dict[str, int] = {}
    first_inside, second_done = threading.Event(), threading.Event()

    def embed_many(texts: Any, cores: int) -> np.ndarray:
        seen[texts[0]] = cores
        if texts[0] == "first":
            first_inside.set()
            assert second_done.wait(WAIT_S)
        return np.zeros((len(texts), 2), dtype=np.float32)

    batcher = QueryBatcher(embed_many, max_leaders=2, window_seconds=0.0)
    with ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(batcher.embed_many, ["first"])
        assert first_inside.wait(WAIT_S)
        batcher.embed_many(["second"])
        second_done.set()
        first.result()
    batcher.embed_many(["third"])
    assert seen == {"first": 2, "second": 1, "third": 2}


def _example_config(index_path: Path, **overrides: Any) -> StoreConfig:
    endpoints = yaml.safe_load((REPO_ROOT / "endpoints.yml").read_text(encoding="utf-8"))
    block = {k: v for k, v in endpoints["vector_store"].items() if k != "type"}
    block.update(docs=REPO_ROOT / block["docs"], index_path=index_path, top_k=10, **overrides)
    return StoreConfig.model_validate(block)


async def test_the_off_switch_and_identical_top_10_on_the_example_knowledge_base(
    embedder: Any, export_dir: Path, tmp_path: Path
):
    shutil.copytree(export_dir, tmp_path / QUERY_MODEL_FOLDER)  # the export a restart finds
    fast = KnowledgeSearch.open(_example_config(tmp_path), embedder, progress=False)
    rasa = KnowledgeSearch.open(
        _example_config(tmp_path, query_embedder="rasa"), embedder, progress=False
    )
    assert isinstance(fast.query_embedder, PreparingQueryEmbedder)
    assert fast.query_embedder.ready.wait(timeout=120)
    assert isinstance(fast.query_embedder.current, OnnxQueryEmbedder)
    assert isinstance(rasa.query_embedder, RasaQueryEmbedder)
    for question in QUESTIONS:
        conversation = Conversation(turns=(Turn("user", question),))
        top = [
            [found.chunk.chunk_id for found in (await search.search(conversation)).results]
            for search in (fast, rasa)
        ]
        assert top[0] == top[1] and top[0], question


async def test_no_text_of_a_conversation_is_embedded_twice(
    embedder: Any, export_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A follow-up embeds only what is new since the last search: its message, the bot's reply
    and its rewrite. The previous question and every earlier reply come from the query cache,
    and a text two views share is embedded once."""
    shutil.copytree(export_dir, tmp_path / QUERY_MODEL_FOLDER)
    search = KnowledgeSearch.open(_example_config(tmp_path), embedder, progress=False)
    assert isinstance(search.query_embedder, PreparingQueryEmbedder)
    assert search.query_embedder.ready.wait(timeout=120)
    onnx = search.query_embedder.current
    assert isinstance(onnx, OnnxQueryEmbedder)
    embedded: Counter[str] = Counter()
    encode = onnx.encoder.encode

    def counted(texts: Any, cores: int = 1) -> np.ndarray:
        embedded.update(texts)
        return np.asarray(encode(texts, cores))

    monkeypatch.setattr(onnx.encoder, "encode", counted)
    turns: tuple[Turn, ...] = ()
    replies = []
    for message in [
        "How do I enable offline files on Android?",
        "does that work on the free plan?",
        "how much space do they use?",
        "and on iOS?",
    ]:
        turns = (*turns, Turn("user", message))
        outcome = await search.search(Conversation(turns=turns))
        mixed = {part.text for view in outcome.plan.query_views for part in view}
        assert mixed <= set(embedded), "every text of the mix went through the model"
        reply = outcome.results[0].chunk.text
        replies.append(reply)
        turns = (*turns, Turn("bot", reply))
    repeated = {text: count for text, count in embedded.items() if count > 1}
    assert not repeated, repeated
    assert all(embedded[reply] == 1 for reply in replies[:-1]), "each reply joined a follow-up"


def test_other_providers_are_untouched(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    from rasa.shared.utils.llm import embedder_factory

    monkeypatch.setenv("OPENAI_API_KEY", "a-key-never-used")
    openai = embedder_factory(
        {"provider": "openai", "model": "text-embedding-3-small", "api_base": "http://127.0.0.1:9"},
        {},
    )
    opened = open_query_embedder("auto", openai, tmp_path / "cache")
    assert isinstance(opened, RasaQueryEmbedder) and opened.client is openai
    assert not (tmp_path / "cache").exists(), "nothing is exported for a remote model"


def test_a_lone_search_never_waits_for_company_whatever_its_number_of_texts(
    onnx_embedder: OnnxQueryEmbedder,
):
    """The window waits for searches, not texts: a follow-up's four-text mix, then a one-text
    question, are both alone, so neither waits the (here deliberately long) window."""
    batcher = QueryBatcher(onnx_embedder.encode, window_seconds=1.0)
    waits: list[float | None] = []
    wait = batcher._arrived.wait

    def noted_wait(timeout: float | None = None) -> bool:
        waits.append(timeout)
        return wait(timeout)

    batcher._arrived.wait = noted_wait  # type: ignore[method-assign]
    batcher.embed_many(QUESTIONS[:4])
    batcher.embed_many(QUESTIONS[4:5])
    batcher.embed_many(QUESTIONS[:3])
    assert waits == [], "a lone search waited for company"
    assert list(batcher.batch_sizes) == [4, 1, 3]


def test_a_mix_of_short_and_long_texts_gives_each_text_its_own_vector(
    onnx_embedder: OnnxQueryEmbedder, embedder: Any
):
    """Grouped by length, padded per group: the same vectors as Rasa's client, text by text."""
    long_reply = (
        "Right-click a file or folder and choose Make available offline. Offline files are "
        "available on the Plus, Premium and Business plans and sync again when you reconnect. "
    ) * 3
    mix = ["and on Android?", long_reply, "How do I enable offline files?", "ok"]
    mixed = onnx_embedder.encode(mix)
    rasa = RasaQueryEmbedder(embedder)
    for text, vector in zip(mix, mixed, strict=True):
        assert float(np.dot(vector, rasa.embed(text))) >= 0.9999, text


def test_spreading_a_mix_over_idle_cores_changes_no_vector(onnx_embedder: OnnxQueryEmbedder):
    mix = [*QUESTIONS[:3], LONG_MIX[0], "and on iOS?"]
    together = onnx_embedder.encode(mix, cores=1)
    for cores in (2, 3, len(mix)):
        assert np.allclose(onnx_embedder.encode(mix, cores=cores), together, atol=1e-5), cores


def test_two_stores_exporting_at_once_in_one_process_both_get_a_working_export(
    model_path: Path, tmp_path: Path
):
    """torch's exporter is process-wide: two exports at once (two cache folders, so two file
    locks) used to fail the second with "in_onnx_export must be False"."""
    model = LocalModel.describe(model_path)
    with ThreadPoolExecutor(max_workers=2) as pool:
        exports = list(pool.map(lambda name: cached_export(model, tmp_path / name), ["a", "b"]))
    assert all(path.is_file() and path.stat().st_size > 1_000_000 for path in exports)


def test_a_model_saved_by_the_installed_sentence_transformers_gets_the_onnx_path(
    model_path: Path, tmp_path: Path
):
    """sentence-transformers 6 writes new module paths and keeps the sequence length in the
    tokenizer's config; a user's own saved model must still be recognised and pass the check."""
    from rasa.shared.utils.llm import embedder_factory
    from sentence_transformers import SentenceTransformer

    saved = tmp_path / "my-model"
    SentenceTransformer(str(model_path), device="cpu").save(str(saved))
    described = LocalModel.describe(saved)
    assert described.max_seq_length == LocalModel.describe(model_path).max_seq_length
    client = embedder_factory(
        {"provider": "huggingface_local", "model": str(saved), "show_progress": False}, {}
    )
    opened = open_query_embedder("auto", client, tmp_path / "cache", background=False)
    assert isinstance(opened, OnnxQueryEmbedder)
