"""The bundled all-MiniLM-L6-v2 must match its published sha256 before it embeds anything."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rasa_context_retrieval.config import StoreConfig
from rasa_context_retrieval.engine.search import KnowledgeSearch
from rasa_context_retrieval.knowledge.model_integrity import (
    ModelIntegrityError,
    is_bundled_model,
    verify_bundled_model,
)


@pytest.fixture
def tampered_copy(tmp_path: Path, model_path: Path) -> Path:
    copy = tmp_path / "all-MiniLM-L6-v2"
    shutil.copytree(model_path, copy)
    weights = copy / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte deep inside the tensors
    weights.write_bytes(bytes(data))
    return copy


def test_the_published_weights_pass(model_path: Path):
    verify_bundled_model(model_path)


def test_a_tampered_copy_is_refused_with_the_fix(tampered_copy: Path):
    with pytest.raises(ModelIntegrityError, match="expected 53aa5117.*Re-export it"):
        verify_bundled_model(tampered_copy)


def test_a_missing_weights_file_is_refused(tampered_copy: Path):
    (tampered_copy / "model.safetensors").unlink()
    with pytest.raises(ModelIntegrityError, match="missing"):
        verify_bundled_model(tampered_copy)


class NeverEmbeds:
    """An embedding client configured with the tampered model; it must never be asked."""

    def __init__(self, model: Path) -> None:
        self.model = str(model)

    def embed(self, texts: list[str]) -> None:
        raise AssertionError("embedded with a model that failed its integrity check")


def test_the_store_refuses_to_index_with_a_tampered_model(tmp_path: Path, tampered_copy: Path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Q: Is this indexed?\nA: Not with a tampered model.\n")
    config = StoreConfig.from_kwargs({"docs": str(docs), "index_path": str(tmp_path / "index")})
    with pytest.raises(ModelIntegrityError):
        KnowledgeSearch.open(config, NeverEmbeds(tampered_copy), progress=False)
    assert not (tmp_path / "index").exists()


@pytest.fixture(scope="module")
def fine_tuned_copy(tmp_path_factory: pytest.TempPathFactory, model_path: Path) -> Path:
    """The bundled model with changed weights, saved the way sentence-transformers saves a model."""
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_path), device="cpu")
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(1.01)  # stands in for a fine-tuning step: every weight changes
    folder = tmp_path_factory.mktemp("models") / "all-MiniLM-L6-v2-finetuned"
    model.save(str(folder))
    return folder


def test_a_fine_tuned_copy_named_after_the_bundled_model_is_not_held_to_its_digest(
    tmp_path: Path, fine_tuned_copy: Path
):
    from rasa.shared.utils.llm import embedder_factory

    assert not is_bundled_model(str(fine_tuned_copy))
    embeddings = embedder_factory(
        {"provider": "huggingface_local", "model": str(fine_tuned_copy), "show_progress": False},
        {},
    )
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Q: Is this indexed?\nA: Yes, with the fine-tuned model.\n")
    # Rasa's client embeds: the digest is the subject here, and an ONNX export of the copy
    # (which query_embedder "auto" would make before embedding) costs half a minute of a core.
    config = StoreConfig.from_kwargs(
        {"docs": str(docs), "index_path": str(tmp_path / "index"), "query_embedder": "rasa"}
    )
    search = KnowledgeSearch.open(config, embeddings, progress=False)
    assert len(search.live) == 1


def test_the_bundled_copy_is_recognised_by_content_whatever_its_folder_is_called(
    tmp_path: Path, model_path: Path
):
    renamed = tmp_path / "encoder"
    shutil.copytree(model_path, renamed)
    assert is_bundled_model(str(renamed))
    (renamed / "model.safetensors").write_bytes(b"not the published weights")
    with pytest.raises(ModelIntegrityError, match="corrupt or not that model"):
        KnowledgeSearch.open(
            StoreConfig.from_kwargs({"docs": str(tmp_path), "index_path": str(tmp_path / "i")}),
            NeverEmbeds(renamed),
            progress=False,
        )
