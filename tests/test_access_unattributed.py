"""``unattributed_documents: private``: a document without the access attribute is denied too.

By default a document without the attribute named by ``access_filters`` is public. A team that
wants deny-by-default for documents as well as users sets ``unattributed_documents: private``;
then the rule holds in each place the decision is made: the exact check, the filter each backend
searches within (a FAISS mask, a Milvus expression), the re-check of results, the count of
chunks in scope, and a search through ``ContextRetrieval``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rasa.utils.endpoints import EndpointConfig

from rasa_context_retrieval.access.channel import ChannelMetadata
from rasa_context_retrieval.access.entitlements import AccessFilter
from rasa_context_retrieval.config import ConfigurationError, StoreConfig
from rasa_context_retrieval.faiss.backend import FaissBackend
from rasa_context_retrieval.filters.columns import MetadataColumns
from rasa_context_retrieval.filters.faiss_translator import FaissTranslator
from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import to_filter_syntax
from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.milvus.expression import MilvusExpressionTranslator
from rasa_context_retrieval.milvus.layout import CollectionLayout
from rasa_context_retrieval.retrieve.conformance import conforming
from rasa_context_retrieval.store import ContextRetrieval
from tests.access_fuzz import KnowledgeBase, build_index

PLAN = {"plan": "plan"}
UNATTRIBUTED = ({}, {"plan": None}, {"plan": ""}, {"plan": "  "}, {"plan": []})
METADATAS = (
    {"source": "free.md", "plan": "free"},
    {"source": "premium.md", "plan": ["premium"]},
    {"source": "open.md"},
    {"source": "blank.md", "plan": " "},
)


def private(message: Any) -> AccessFilter:
    found = AccessFilter.from_channel(ChannelMetadata(message, None), PLAN, "private")
    assert found is not None
    return found


# --- configuration -------------------------------------------------------------------------------


def test_the_default_keeps_unattributed_documents_public(tmp_path: Path) -> None:
    config = StoreConfig.from_kwargs({"docs": str(tmp_path), "access_filters": PLAN})
    assert config.unattributed_documents == "public"


def test_private_without_access_filters_is_refused_at_start_up(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="unattributed_documents: private.*access_filters"):
        StoreConfig.from_kwargs({"docs": str(tmp_path), "unattributed_documents": "private"})


def test_an_unknown_value_names_the_key_and_the_choices(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as error:
        StoreConfig.from_kwargs(
            {"docs": str(tmp_path), "access_filters": PLAN, "unattributed_documents": "deny"}
        )
    assert "vector_store.unattributed_documents" in str(error.value)
    assert "'public' or 'private'" in str(error.value)


# --- the exact rule ------------------------------------------------------------------------------


@pytest.mark.parametrize("unattributed", UNATTRIBUTED)
def test_a_private_unattributed_document_is_admitted_to_nobody(unattributed: dict[str, Any]):
    assert not private({"plan": "free"}).admits(unattributed)
    assert not private({"plan": ["free", "premium"]}).admits(unattributed)
    assert not private(None).admits(unattributed)


def test_attributed_documents_follow_the_usual_rule_when_private() -> None:
    free = private({"plan": " free "})
    assert free.admits({"plan": "free"}) and free.admits({"plan": ["premium", "free"]})
    assert not free.admits({"plan": "Free"}) and not free.admits({"plan": "premium"})


# --- the filter each backend searches within -----------------------------------------------------


def test_the_directive_is_in_rather_than_not_nin() -> None:
    assert to_filter_syntax(private({"plan": "free"}).directive) == 'in("plan", ["free"])'


def test_the_faiss_mask_leaves_unattributed_chunks_out() -> None:
    columns = MetadataColumns(list(METADATAS))
    mask = private({"plan": "free"}).directive.accept(FaissTranslator(columns))  # type: ignore[union-attr]
    assert mask.tolist() == [True, False, False, False]
    nothing = private(None).directive.accept(FaissTranslator(columns))  # type: ignore[union-attr]
    assert not nothing.any()


def test_the_milvus_expression_over_json_requires_an_allowed_value() -> None:
    expression = private({"plan": "free"}).directive.accept(MilvusExpressionTranslator())  # type: ignore[union-attr]
    assert expression == (
        '((filterable["plan"]["s"] in ["free"]) or '
        'json_contains_any(filterable["plan"]["l"], ["free"]))'
    )
    assert "exists" not in expression and "not" not in expression


def test_the_milvus_expression_over_typed_fields_requires_an_allowed_value() -> None:
    layout = CollectionLayout.planned(
        [MetadataField(name="plan", type="list[string]", values=["free", "premium"])]
    )
    translator = MilvusExpressionTranslator(layout=layout)
    typed = layout.typed_attribute("plan")
    assert typed is not None
    expression = private({"plan": "free"}).directive.accept(translator)  # type: ignore[union-attr]
    assert expression == f'(({typed.field("s")} in ["free"]) or ({typed.flag_field("free")} == 1))'
    assert typed.presence not in expression  # no "or absent" branch


def test_the_milvus_expression_without_an_entitlement_matches_nothing() -> None:
    expression = private(None).directive.accept(MilvusExpressionTranslator())  # type: ignore[union-attr]
    assert expression == "(chunk_id in [])"


# --- the re-check and the count ------------------------------------------------------------------


def test_the_result_recheck_rejects_an_unattributed_chunk_a_backend_returned() -> None:
    chunks = [Chunk(f"c{row}", "text", dict(m)) for row, m in enumerate(METADATAS)]
    allowed, rejected = conforming(chunks, None, private({"plan": "free"}))
    assert allowed == [True, False, False, False] and rejected == 3


def test_the_count_of_chunks_in_scope_leaves_unattributed_documents_out() -> None:
    backend = FaissBackend.serving(build_index(KnowledgeBase(METADATAS)).knowledge, 10**9)
    public = AccessFilter.from_channel(ChannelMetadata({"plan": "free"}, None), PLAN)
    assert public is not None
    assert backend.count(public.directive, public) == 3
    denied = private({"plan": "free"})
    assert backend.count(denied.directive, denied) == 1


# --- through ContextRetrieval.search() -----------------------------------------------------------


VAULT = "The vault combination for the archive room is 4711."


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("unattributed")
    (folder / "vault.md").write_text(f"{VAULT}\n", encoding="utf-8")
    (folder / "free.md").write_text(
        "---\nplan: [free]\n---\nThe free plan includes 5 GB of storage.\n", encoding="utf-8"
    )
    return folder


async def _found(embedder: Any, docs: Path, tmp_path: Path, **block: Any) -> list[str]:
    store = ContextRetrieval(embedder)
    store.connect(
        EndpointConfig(
            docs=str(docs),
            index_path=str(tmp_path / "index"),
            access_filters=PLAN,
            query_embedder="rasa",
            **block,
        )
    )
    state = {"latest_message": {"text": "vault combination", "metadata": {"plan": "free"}}}
    found = await store.search("vault combination archive room", state)
    return [result.metadata["source"] for result in found.results]


async def test_search_serves_an_unattributed_document_by_default(
    embedder: Any, docs: Path, tmp_path: Path
) -> None:
    assert "vault.md" in await _found(embedder, docs, tmp_path)


async def test_search_never_serves_an_unattributed_document_when_private(
    embedder: Any, docs: Path, tmp_path: Path
) -> None:
    found = await _found(embedder, docs, tmp_path, unattributed_documents="private")
    assert "vault.md" not in found
    assert found == ["free.md"]


def test_the_milvus_expression_also_reads_values_that_overflowed_their_typed_field() -> None:
    """A hostile value that does not fit the typed field lives in the overflow JSON; the
    private clause still requires an allowed value there, never the attribute's absence."""
    layout = CollectionLayout.planned([MetadataField(name="plan", type="string")])
    overflowing = layout.with_overflow(frozenset({"plan"}))
    typed = overflowing.typed_attribute("plan")
    assert typed is not None
    translator = MilvusExpressionTranslator(layout=overflowing)
    expression = private({"plan": "free"}).directive.accept(translator)  # type: ignore[union-attr]
    assert expression == (
        f'(({typed.field("s")} in ["free"]) or ((overflow["plan"]["s"] in ["free"]) or '
        'json_contains_any(overflow["plan"]["l"], ["free"])))'
    )
