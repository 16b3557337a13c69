"""The vector_store: block: one clear error naming the key and the fix for each mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from addons.config import ConfigurationError, StoreConfig


def test_a_minimal_block_gets_the_documented_defaults(tmp_path: Path):
    config = StoreConfig.from_kwargs({"docs": str(tmp_path)})
    assert config.top_k == 4
    assert config.index_path == Path(".index")
    assert config.slot_filters == {}
    assert (config.rewrite, config.self_query, config.multi_query) == ("heuristic", "rules", 0)


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
    ],
)
def test_each_mistake_names_the_key(tmp_path: Path, block: dict, expected: str):
    block = {key: (str(tmp_path) if value == "{tmp}" else value) for key, value in block.items()}
    with pytest.raises(ConfigurationError) as raised:
        StoreConfig.from_kwargs(block)
    assert expected in str(raised.value)


def test_all_faults_are_reported_together(tmp_path: Path):
    with pytest.raises(ConfigurationError) as raised:
        StoreConfig.from_kwargs({"docs": str(tmp_path), "top_k": -1, "hybird": True})
    message = str(raised.value)
    assert "vector_store.top_k" in message and "vector_store.hybird" in message
