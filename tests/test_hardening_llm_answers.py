"""A hostile LLM answer costs one search its LLM step, never the other conversations their turn.

An attack run found that a large or deeply nested answer was parsed on the event loop with no size
limit and outside the timeout: a 64 KB answer froze every conversation for 20 s, and a filter
nested 3,000 levels deep failed the search instead of falling back. Here the real store talks to
the local OpenAI-compatible server, which sends such answers: each is parsed off the event loop,
only under the size cap, and the search falls back within the timeout. (bench/loop_lag.py
measures the loop's lag in seconds.)
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from rasa.utils.endpoints import EndpointConfig

from rasa_context_retrieval.llm.client import MAX_ANSWER_BYTES, LLMUnavailable, RetrievalLLM
from rasa_context_retrieval.llm_query.constructor import LLMQueryConstructor
from rasa_context_retrieval.store import ContextRetrieval
from tests.fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401
from tests.store_support import connected_store, tracker_state

pytestmark = pytest.mark.asyncio(loop_scope="session")

TIMEOUT_SECONDS = 1.0
PLANS = ("free", "premium")


def truncated_json(size: int) -> str:
    """An answer LangChain's JSON repair works on for a time quadratic in ``size``."""
    return '{"query": "refunds", "filter": ' + "x" * size


def nested_not(depth: int) -> str:
    inner = 'eq("plan", "premium")'
    return json.dumps({"query": "refunds", "filter": "not(" * depth + inner + ")" * depth})


def wide_or(terms: int) -> str:
    comparisons = ", ".join(['eq("plan", "premium")'] * terms)
    return json.dumps({"query": "refunds", "filter": f"or({comparisons})"})


@pytest.fixture
def store(fake_openai: FakeOpenAI, embedder: Any, tmp_path: Path) -> ContextRetrieval:
    docs = tmp_path / "docs"
    docs.mkdir()
    for plan in PLANS:
        (docs / f"{plan}.md").write_text(
            f"---\nplan: {plan}\n---\nQ: Can I get a refund on {plan}?\n"
            f"A: Refunds for {plan} within 14 days.\n",
            encoding="utf-8",
        )
    store = connected_store(
        embedder,
        EndpointConfig(
            docs=str(docs),
            index_path=str(tmp_path / "index"),
            slot_filters={"plan": "plan"},
            metadata_fields=[{"name": "plan", "type": "string", "values": list(PLANS)}],
            self_query="llm",
            llm={**fake_openai.llm_config(), "timeout": TIMEOUT_SECONDS},
        ),
    )
    return store


async def timed_search(store: ContextRetrieval, plan: str) -> tuple[Any, float]:
    """The result and the search's wall time."""
    started = time.perf_counter()
    result = await store.search("", tracker_state(("user", "can I get a refund"), plan=plan), 0.0)
    return result, time.perf_counter() - started


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(truncated_json(MAX_ANSWER_BYTES - 100), id="just-under-the-cap"),
        pytest.param(truncated_json(64 * 1024), id="64KB"),
        pytest.param(truncated_json(1_600_000), id="1.6MB"),
        pytest.param(nested_not(3_000), id="not-3000-deep"),
        pytest.param(wide_or(4_000), id="or-of-4000"),
        pytest.param(nested_not(200)[: MAX_ANSWER_BYTES - 10], id="nested-200-under-cap"),
    ],
)
async def test_a_hostile_answer_falls_back_in_time_without_blocking_the_loop(
    fake_openai: FakeOpenAI,
    store: ContextRetrieval,
    answer: str,
    monkeypatch: pytest.MonkeyPatch,
):
    parsed: list[tuple[int, int]] = []  # (thread, characters) of each answer parsed
    parse_answer = LLMQueryConstructor.parse_answer

    def noted_parse(self: LLMQueryConstructor, text: str, **options: Any) -> Any:
        parsed.append((threading.get_ident(), len(text)))
        return parse_answer(self, text, **options)

    monkeypatch.setattr(LLMQueryConstructor, "parse_answer", noted_parse)
    fake_openai.responder = lambda body: Reply(answer)
    await timed_search(store, "free")  # first request: connection set-up

    result, elapsed = await timed_search(store, "premium")

    assert fake_openai.call_count >= 2, "the LLM was not asked"
    loop_thread = threading.get_ident()
    assert all(thread != loop_thread for thread, _ in parsed), "an answer was parsed on the loop"
    assert all(size <= MAX_ANSWER_BYTES for _, size in parsed), "an oversized answer was parsed"
    assert elapsed < TIMEOUT_SECONDS + 1.0, f"the search took {elapsed:.2f} s"
    # The no-LLM path: no filter from the words, the slot scope kept, results found.
    assert result.metadata["extracted_filter"] is None
    assert result.results and all(r.metadata["plan"] == "premium" for r in result.results)


async def test_the_request_and_the_parse_share_one_timeout(fake_openai: FakeOpenAI):
    llm = RetrievalLLM.from_config(fake_openai.llm_config(timeout=TIMEOUT_SECONDS))
    fake_openai.responder = lambda body: Reply("an answer", delay=TIMEOUT_SECONDS * 0.6)
    parsed_in: list[str] = []

    def slow_parse(answer: str) -> str:  # a parse that would overrun the remaining budget
        parsed_in.append(threading.current_thread().name)
        time.sleep(TIMEOUT_SECONDS)
        return answer

    started = time.perf_counter()
    with pytest.raises(LLMUnavailable, match="within"):
        await llm.complete_and_parse("question", slow_parse, timeout=TIMEOUT_SECONDS)
    assert time.perf_counter() - started < TIMEOUT_SECONDS + 0.5  # 1.6 s if not shared
    assert parsed_in and parsed_in[0] != threading.main_thread().name


async def test_a_well_formed_answer_still_filters(fake_openai: FakeOpenAI, store: ContextRetrieval):
    answer = json.dumps({"query": "refunds", "filter": 'eq("plan", "premium")'})
    fake_openai.responder = lambda body: Reply(answer)
    result, _ = await timed_search(store, "premium")
    assert result.metadata["extracted_filter"] == 'eq("plan", "premium")'
    assert [r.metadata["plan"] for r in result.results] == ["premium"]
