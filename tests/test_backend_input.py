"""Every backend takes one input, the knowledge ingestion makes, and no backend leans on another.

A third backend should be one new folder: it reads ``EmbeddedKnowledge`` and the shared layers
below it, and nothing of FAISS's or Milvus's. These tests hold the package to that shape (the
imports, the protocol's input) and check that FAISS serves knowledge it did not build itself, and
that knowledge read from a published folder is served without indexing it again.
"""

from __future__ import annotations

import ast
import inspect
from collections import defaultdict
from pathlib import Path

import numpy as np
from langchain_core.structured_query import Comparator, Comparison

from rasa_context_retrieval.engine.backend import SearchBackend
from rasa_context_retrieval.faiss.backend import FaissBackend
from rasa_context_retrieval.faiss.index import IndexDirectory, KnowledgeIndex
from rasa_context_retrieval.ingestion.knowledge import EmbeddedKnowledge
from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.retrieve.request import RetrievalRequest

PACKAGE = Path(__file__).resolve().parents[1] / "rasa_context_retrieval"
BACKENDS = ("faiss", "milvus")


def _folder_imports() -> dict[str, set[str]]:
    """Folder -> the package's folders its modules import, function-local imports included."""
    edges: dict[str, set[str]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        folder = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                parts = node.module.split(".")
                if parts[0] == PACKAGE.name and len(parts) > 1 and parts[1] != folder:
                    edges[folder].add(parts[1])
    return edges


def _reaches(edges: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), list(edges.get(start, ()))
    while todo:
        folder = todo.pop()
        if folder == goal:
            return True
        if folder not in seen:
            seen.add(folder)
            todo.extend(edges.get(folder, ()))
    return False


def test_no_backend_imports_another_and_folders_import_one_way() -> None:
    edges = _folder_imports()
    assert not edges["faiss"] & {"milvus", "engine"}
    assert not edges["milvus"] & {"faiss", "engine"}
    assert not edges["ingestion"] & {*BACKENDS, "engine"}
    cycles = sorted(folder for folder in edges if _reaches(edges, folder, folder))
    assert cycles == []


def test_the_backend_protocol_names_no_backend_and_publishes_ingested_knowledge() -> None:
    source = inspect.getsource(inspect.getmodule(SearchBackend))  # type: ignore[arg-type]
    imported = {
        node.module
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert not {module for module in imported if module.split(".")[1:2] == ["faiss"]}
    assert not {module for module in imported if module.split(".")[1:2] == ["milvus"]}
    parameters = inspect.signature(SearchBackend.publish).parameters
    assert [name for name in parameters if name != "self"] == ["knowledge"]
    assert parameters["knowledge"].annotation in ("EmbeddedKnowledge", EmbeddedKnowledge)


def _knowledge(plans: list[str]) -> EmbeddedKnowledge:
    vectors = np.eye(len(plans), dtype=np.float32)
    chunks = [Chunk(f"c{row}", f"text {row}", {"plan": plan}) for row, plan in enumerate(plans)]
    return EmbeddedKnowledge.of("0" * 64, "test", chunks, vectors)


def test_faiss_serves_knowledge_that_ingestion_made_without_it() -> None:
    knowledge = _knowledge(["premium", "free", "free"])
    backend = FaissBackend.serving(knowledge, exact_search_below=1000)
    request = RetrievalRequest(
        texts=["text"],
        vectors=[np.array([0.0, 0.6, 0.8], dtype=np.float32)],
        filter=Comparison(comparator=Comparator.EQ, attribute="plan", value="free"),
        top_k=5,
        threshold=0.0,
        candidates=10,
        hybrid=False,
    )
    assert [found.chunk.chunk_id for found in backend.rank(request)] == ["c2", "c1"]
    assert backend.size() == 3


def test_knowledge_read_from_a_published_folder_is_served_without_indexing_it_again(
    tmp_path: Path,
) -> None:
    built = KnowledgeIndex.built(_knowledge(["premium", "free"]), exact_search_below=1000)
    read = KnowledgeIndex.read(IndexDirectory(tmp_path).publish(built))
    served = FaissBackend.serving(read.knowledge, exact_search_below=1000).publish(read.knowledge)
    assert served.index.dense is read.dense
    assert served.index.knowledge is read.knowledge
