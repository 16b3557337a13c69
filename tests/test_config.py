"""The vector_store: block: one clear error naming the key and the fix for each mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from rasa_context_retrieval.config import ConfigurationError, StoreConfig
from rasa_context_retrieval.conversation import HistoryCaps


def test_a_minimal_block_gets_the_documented_defaults(tmp_path: Path):
    config = StoreConfig.from_kwargs({"docs": str(tmp_path)})
    assert config.top_k == 4
    assert config.index_path == Path(".index")
    assert config.slot_filters == {}
    assert (config.rewrite, config.self_query, config.multi_query) == ("heuristic", "rules", 0)
    assert config.lexical_search is True  # BM25 fused in (hybrid) unless `hybrid: false`
    assert StoreConfig.from_kwargs({"docs": str(tmp_path), "hybrid": False}).lexical_search is False


def test_typed_values_are_parsed(tmp_path: Path):
    config = StoreConfig.from_kwargs(
        {
            "docs": str(tmp_path),
            "top_k": "6",
            "slot_filters": {"plan": "plan"},
            "metadata_fields": [{"name": "plan", "type": "list[string]", "values": ["free"]}],
        }
    )
    assert config.top_k == 6
    assert config.metadata_fields[0].values == ("free",)


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ({}, "add at least `docs"),
        ({"top_k": 3}, "vector_store.docs: required"),
        ({"docs": "no/such/folder"}, "vector_store.docs: folder 'no/such/folder' does not exist"),
        ({"docs": "{tmp}", "topk": 3}, "vector_store.topk: unknown key; known keys are:"),
        ({"docs": "{tmp}", "top_k": "many"}, "vector_store.top_k:"),
        ({"docs": "{tmp}", "top_k": 0}, "vector_store.top_k:"),
        ({"docs": "{tmp}", "rewrite": "magic"}, "vector_store.rewrite:"),
        ({"docs": "{tmp}", "self_query": "llm"}, "self_query need(s) an LLM: add an `llm:` block"),
        (
            {"docs": "{tmp}", "metadata_fields": [{"name": "plan", "type": "text"}]},
            "vector_store.metadata_fields.0.type:",
        ),
        ({"docs": "{tmp}", "chunk_size": 200, "chunk_overlap": 300}, "chunk_overlap"),
        ({"docs": "{tmp}", "history": {"max_turns": 0}}, "vector_store.history.max_turns:"),
        ({"docs": "{tmp}", "history": {"turns": 3}}, "vector_store.history.turns: unknown key"),
        (
            {"docs": "{tmp}", "history": {"max_chars": 2_000_000}},
            "vector_store.history.max_chars: Input should be less than or equal to 1000000",
        ),
        (
            {"docs": "{tmp}", "history": {"max_chars": 100, "max_turn_chars": 200}},
            "vector_store.history.max_chars (100) is below history.max_turn_chars (200)",
        ),
        ({"docs": "{tmp}", "llm_queue_wait_seconds": -1}, "vector_store.llm_queue_wait_seconds:"),
        ({"docs": "{tmp}", "llm_queue_wait_seconds": 600}, "vector_store.llm_queue_wait_seconds:"),
    ],
)
def test_each_mistake_names_the_key(tmp_path: Path, block: dict, expected: str):
    block = {key: (str(tmp_path) if value == "{tmp}" else value) for key, value in block.items()}
    with pytest.raises(ConfigurationError) as raised:
        StoreConfig.from_kwargs(block)
    assert expected in str(raised.value)


def test_the_history_caps_default_to_the_documented_limits(tmp_path: Path):
    caps = StoreConfig.from_kwargs({"docs": str(tmp_path)}).history.caps()
    assert (caps.max_turn_chars, caps.max_turns, caps.max_chars) == (4_000, 40, 20_000)
    configured = StoreConfig.from_kwargs({"docs": str(tmp_path), "history": {"max_turns": 6}})
    assert configured.history.caps() == HistoryCaps(max_turns=6)


def test_all_faults_are_reported_together(tmp_path: Path):
    with pytest.raises(ConfigurationError) as raised:
        StoreConfig.from_kwargs({"docs": str(tmp_path), "top_k": -1, "hybird": True})
    message = str(raised.value)
    assert "vector_store.top_k" in message and "vector_store.hybird" in message


@pytest.mark.parametrize(
    ("milvus", "expected"),
    [
        ({"colection": "kb"}, "vector_store.milvus.colection: unknown key; known keys are: ca_pem"),
        ({"uri": "localhost:19530"}, "vector_store.milvus.uri: 'localhost:19530' is not a Milvus"),
        ({"collection": "9kb"}, "vector_store.milvus.collection: '9kb' is not a valid"),
        ({"timeout_s": 0}, "vector_store.milvus.timeout_s: Input should be greater than 0"),
        ({"user_env": "DB_USER"}, "vector_store.milvus.user_env / milvus.password_env: give both"),
        ({"token": "abc"}, "vector_store.milvus.token: secrets are not accepted"),
    ],
)
def test_milvus_mistakes_are_reported_like_every_other_key(
    tmp_path: Path, milvus: dict, expected: str
):
    block = {"docs": str(tmp_path), "backend": "milvus", "milvus": milvus}
    with pytest.raises(ConfigurationError) as raised:
        StoreConfig.from_kwargs(block)
    message = str(raised.value)
    assert message.startswith("invalid vector_store configuration in endpoints.yml:\n  ")
    assert expected in message


def test_faults_in_milvus_and_elsewhere_come_in_one_message(tmp_path: Path):
    block = {"docs": str(tmp_path), "top_k": 0, "milvus": {"collection": "a-b"}}
    with pytest.raises(ConfigurationError) as raised:
        StoreConfig.from_kwargs(block)
    assert "vector_store.top_k" in str(raised.value)
    assert "vector_store.milvus.collection" in str(raised.value)


@pytest.mark.parametrize(
    "block",
    [
        {"milvus": {"uri": "https://root:Sup3rS3cret@db.example.com:19530"}},
        {"milvus": {"password": "Sup3rS3cret"}},
        {"llm": {"provider": "openai", "api_key": "Sup3rS3cret", "timeout": "x"}},
    ],
)
def test_a_secret_in_a_faulty_block_is_never_echoed(tmp_path: Path, block: dict):
    with pytest.raises(ConfigurationError) as raised:
        StoreConfig.from_kwargs({"docs": str(tmp_path), **block})
    assert "Sup3rS3cret" not in str(raised.value)


def test_a_milvus_mistake_is_reported_before_anything_is_embedded(tmp_path: Path):
    from rasa.utils.endpoints import EndpointConfig

    from rasa_context_retrieval.store import ContextRetrieval

    class NeverEmbeds:
        model = "unused"

        def embed(self, texts: list[str]) -> None:
            raise AssertionError("embedded before the configuration was checked")

    (tmp_path / "a.md").write_text("Q: Anything?\nA: Never embedded.\n")
    endpoint = EndpointConfig(
        docs=str(tmp_path),
        index_path=str(tmp_path / "index"),
        backend="milvus",
        milvus={"uri": "http://localhost:19530", "colection": "kb"},
    )
    with pytest.raises(ConfigurationError, match="vector_store.milvus.colection"):
        ContextRetrieval(embeddings=NeverEmbeds()).connect(endpoint)
    assert not (tmp_path / "index").exists()


@pytest.mark.parametrize(
    ("timeout", "expected"),
    [("soon", "a valid number"), (True, "a valid number"), (0, "greater than 0"), (-1.5, "than 0")],
)
def test_the_llm_timeout_is_type_checked_up_front(tmp_path: Path, timeout: object, expected: str):
    block = {"docs": str(tmp_path), "llm": {"provider": "openai", "timeout": timeout}}
    with pytest.raises(ConfigurationError, match=f"vector_store.llm.timeout: .*{expected}"):
        StoreConfig.from_kwargs(block)


def test_the_llm_block_passes_every_other_key_to_rasa_unchanged(tmp_path: Path):
    llm = {
        "provider": "azure",
        "deployment": "gpt-4o-rag",
        "api_base": "https://example.openai.azure.com",
        "api_key": "${AZURE_API_KEY}",
        "extra_headers": {"x-team": "support"},
        "timeout": 7,
    }
    config = StoreConfig.from_kwargs({"docs": str(tmp_path), "llm": llm})
    assert config.llm is not None
    assert config.llm.client_config() == llm
    assert config.llm.timeout == 7.0


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("top_k", True),
        ("multi_query", True),
        ("chunk_size", False),
        ("chunk_overlap", True),
        ("embedding_batch_size", True),
        ("candidates", True),
        ("exact_search_below", False),
        ("refresh_seconds", True),
        ("llm_queue_wait_seconds", True),
        ("history.max_turns", True),
        ("history.max_turn_chars", False),
    ],
)
def test_true_or_false_is_never_read_as_a_number(tmp_path: Path, key: str, value: bool):
    block, _, nested = key.partition(".")
    with pytest.raises(ConfigurationError) as raised:
        StoreConfig.from_kwargs(
            {"docs": str(tmp_path), block: {nested: value} if nested else value}
        )
    (line,) = [line for line in str(raised.value).splitlines() if f"vector_store.{key}" in line]
    assert "must be a number, not true/false; write the number" in line


@pytest.mark.parametrize(
    ("block", "key"),
    [
        ({"access_filters": {"plan": ""}}, "vector_store.access_filters.plan"),
        ({"access_filters": {"plan": "  "}}, "vector_store.access_filters.plan"),
        ({"access_filters": {"": "plan"}}, "vector_store.access_filters.''"),
        ({"slot_filters": {"plan": ""}}, "vector_store.slot_filters.plan"),
    ],
)
def test_an_empty_attribute_or_key_is_refused(tmp_path: Path, block: dict, key: str):
    with pytest.raises(ConfigurationError) as raised:
        StoreConfig.from_kwargs({"docs": str(tmp_path), **block})
    assert f"{key}: must not be empty; name the key or attribute" in str(raised.value)


@pytest.mark.parametrize("api_key", [{"env": "OPENAI_API_KEY"}, 12345, ""])
def test_an_api_key_that_is_not_text_is_refused_without_echoing_it(tmp_path: Path, api_key: object):
    block = {"docs": str(tmp_path), "llm": {"provider": "openai", "api_key": api_key}}
    with pytest.raises(ConfigurationError) as raised:
        StoreConfig.from_kwargs(block)
    assert "vector_store.llm.api_key: must" in str(raised.value)
    assert "12345" not in str(raised.value) and "OPENAI_API_KEY" not in str(raised.value)


def test_a_milvus_timeout_of_true_is_refused(tmp_path: Path):
    milvus = {"uri": "http://localhost:19530", "collection": "kb", "timeout_s": True}
    with pytest.raises(ConfigurationError, match="vector_store.milvus.timeout_s"):
        StoreConfig.from_kwargs({"docs": str(tmp_path), "backend": "milvus", "milvus": milvus})


UNADDRESSABLE_NAME = "plan][tier"
"""An attribute name Milvus 2.3 cannot filter on: its server splits a JSON path at ``][`` and
stops when ``json_contains_any`` runs over such a path."""


@pytest.mark.parametrize(
    ("named", "key"),
    [
        (
            {"metadata_fields": [{"name": UNADDRESSABLE_NAME, "type": "list[string]"}]},
            "metadata_fields: the attribute",
        ),
        ({"slot_filters": {"plan": UNADDRESSABLE_NAME}}, "slot_filters: the attribute"),
        ({"access_filters": {"plan": UNADDRESSABLE_NAME}}, "access_filters: the attribute"),
    ],
)
def test_an_attribute_milvus_cannot_filter_on_is_refused_at_connect_on_milvus_only(
    tmp_path: Path, named: dict, key: str
):
    """Refused when the store connects, before any server is reached or anything is embedded;
    FAISS filters on any name, so the same block with it is accepted."""
    from rasa.utils.endpoints import EndpointConfig

    from rasa_context_retrieval.store import ContextRetrieval

    class NeverEmbeds:
        model = "unused"

        def embed(self, texts: list[str]) -> None:
            raise AssertionError("embedded before the configuration was checked")

    (tmp_path / "a.md").write_text("Q: Anything?\nA: Never embedded.\n")
    block = {"docs": str(tmp_path), "index_path": str(tmp_path / "index"), **named}
    milvus = {"backend": "milvus", "milvus": {"uri": "http://localhost:1", "collection": "kb"}}
    with pytest.raises(ConfigurationError) as raised:
        ContextRetrieval(embeddings=NeverEmbeds()).connect(EndpointConfig(**block, **milvus))
    message = str(raised.value)
    assert f"vector_store.{key} {UNADDRESSABLE_NAME!r}" in message
    assert "']['" in message and "backend: faiss" in message
    assert not (tmp_path / "index").exists()
    assert StoreConfig.from_kwargs(block).backend == "faiss"
