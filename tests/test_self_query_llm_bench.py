"""``bench/self_query.py --llm`` scores the plugin's LLM constructor over real HTTP.

No LLM is reachable here, so nothing measures the quality of the LLM path; this checks that the
benchmark asks the constructor the plugin builds, scores its answers like the rules' and counts
a failed answer on its own, so the scores mean something once an endpoint is configured.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO_ROOT
from tests.fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401

SCHEMA = {
    "schemas": {
        "movies": {
            "fields": [
                {"name": "genre", "type": "string", "description": "The movie's genre"},
                {"name": "year", "type": "integer", "description": "Year of release"},
            ],
            "indexed_values": {"genre": ["comedy", "thriller"]},
            "questions": [
                {
                    "q": "a thriller from 1979",
                    "filter": 'and(eq("genre", "thriller"), eq("year", 1979))',
                },
                {
                    "q": "comedies after 2005",
                    "filter": 'and(eq("genre", "comedy"), gt("year", 2005))',
                },
                {"q": "what is a good film?", "filter": None},
            ],
        }
    }
}


def _answer(filter_text: str) -> str:
    return "```json\n" + json.dumps({"query": "movie", "filter": filter_text}) + "\n```"


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location(
        "self_query_bench", REPO_ROOT / "bench" / "self_query.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_llm_path_is_scored_like_the_rules_and_failed_answers_are_counted(
    fake_openai: FakeOpenAI, tmp_path: Path
):
    def answer(body: dict[str, Any]) -> Reply | str:
        asked = body["messages"][-1]["content"].rsplit("User Query:", 1)[-1]
        if "a thriller from 1979" in asked:
            return _answer('and(eq("genre", "thriller"), eq("year", 1979))')
        if "comedies after 2005" in asked:
            return _answer('eq("genre", "comedy")')  # the year is left out: partial
        return Reply(status=500)

    fake_openai.responder = answer
    data = tmp_path / "labelled.yaml"
    data.write_text(yaml.safe_dump(SCHEMA), encoding="utf-8")
    llm = tmp_path / "llm.yaml"
    llm.write_text(yaml.safe_dump(fake_openai.llm_config()), encoding="utf-8")

    rows, failed = _bench().score_llm(data, llm)

    outcomes = {row["q"]: row["outcome"] for row in rows}
    assert outcomes == {
        "a thriller from 1979": "correct",
        "comedies after 2005": "partial",
        "what is a good film?": "correct",  # no filter meant; the failed answer made none
    }
    assert failed == 1
    assert fake_openai.call_count == 3
    assert "thriller" in fake_openai.prompts()[0], "the value catalogue reached the prompt"
