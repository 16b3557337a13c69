"""Rasa's own LLM client, built from the ``llm:`` block, reaches an OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from rasa_context_retrieval.config import StoreConfig
from rasa_context_retrieval.llm.capped_body import MAX_BODY_BYTES
from rasa_context_retrieval.llm.client import (
    CallBudget,
    LLMConfigError,
    LLMUnavailable,
    RetrievalLLM,
)
from rasa_context_retrieval.llm.llm_loop import THREAD_NAME as LLM_THREAD_NAME
from rasa_context_retrieval.planning.llm_planner import build_llm_planner
from tests.fake_openai import (  # noqa: F401
    CHUNK_BYTES,
    FAKE_API_KEY,
    FakeOpenAI,
    Reply,
    fake_openai_fixture,
)

# One event loop for all LLM tests, as in an application: litellm caches HTTP clients per loop.
pytestmark = pytest.mark.asyncio(loop_scope="session")

TIMEOUT_MARGIN_SECONDS = 0.5
"""Slack for a loaded 2-core CI machine; the delays the server adds are 1 s and more."""


async def test_the_answer_comes_from_the_configured_endpoint_with_the_key_from_the_env(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.reply("  premium plan price  \n")
    llm = RetrievalLLM.from_config(fake_openai.llm_config())

    answer = await llm.complete("Rewrite: how much is it?", timeout=5)

    assert answer == "premium plan price"
    assert fake_openai.call_count == 1
    assert fake_openai.requests[0]["model"] == "gpt-4o-mini"
    assert fake_openai.prompts() == ["Rewrite: how much is it?"]
    assert fake_openai.authorizations == [f"Bearer {FAKE_API_KEY}"]


async def test_an_api_base_without_v1_is_served_too(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply("ok")
    config = fake_openai.llm_config(api_base=fake_openai.base_url.removesuffix("/v1"))

    assert await RetrievalLLM.from_config(config).complete("hi", timeout=5) == "ok"


async def test_a_model_group_from_endpoints_is_resolved_the_way_rasa_does(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.reply("from the group")
    groups = [{"id": "retrieval_llm", "models": [fake_openai.llm_config()]}]

    llm = RetrievalLLM.from_config({"model_group": "retrieval_llm"}, model_groups=groups)

    assert await llm.complete("hi", timeout=5) == "from the group"
    assert fake_openai.call_count == 1


async def test_a_slow_answer_gives_up_at_the_timeout(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(Reply(content="too late", delay=1))
    llm = RetrievalLLM.from_config(fake_openai.llm_config())

    started = time.perf_counter()
    with pytest.raises(LLMUnavailable, match="within 0.30 s"):
        await llm.complete("hi", timeout=0.3)

    assert time.perf_counter() - started < 0.3 + TIMEOUT_MARGIN_SECONDS


async def test_the_timeout_bounds_wall_time_even_when_the_client_retries(
    fake_openai: FakeOpenAI,
) -> None:
    # The SDK backs off ~0.5 s, ~1 s, ~2 s ... between retries: five take ~15 s unbounded.
    fake_openai.responder = lambda _: Reply(status=500)
    llm = RetrievalLLM.from_config(fake_openai.llm_config(max_retries=5))

    started = time.perf_counter()
    with pytest.raises(LLMUnavailable):
        await llm.complete("hi", timeout=1.2)

    assert time.perf_counter() - started < 1.2 + TIMEOUT_MARGIN_SECONDS
    assert fake_openai.call_count >= 2  # it did retry, and was cut off anyway


@pytest.mark.parametrize(
    "reply",
    [
        Reply(status=500),
        Reply(status=429),
        Reply(raw_body='{"choices": [ {"message": '),
        Reply(raw_body="<html>bad gateway</html>"),
        Reply(content=""),
        Reply(content="   \n "),
        Reply(content=None),
    ],
    ids=["http-500", "http-429", "truncated-json", "html", "empty", "blank", "null-content"],
)
async def test_errors_and_empty_answers_raise_llm_unavailable(
    fake_openai: FakeOpenAI, reply: Reply
) -> None:
    fake_openai.reply(reply)
    llm = RetrievalLLM.from_config(fake_openai.llm_config())

    with pytest.raises(LLMUnavailable):
        await llm.complete("hi", timeout=5)
    assert fake_openai.call_count == 1


@pytest.mark.parametrize(
    ("llm_config", "named"),
    [
        ({}, "must be a mapping"),
        ({"model": "gpt-4o-mini"}, "provider"),
        ({"model_group": "retrieval_llm", "model": "gpt-4o"}, "only key"),
        ({"model_group": "no_such_group"}, "no_such_group"),
    ],
)
def test_a_bad_llm_block_is_rejected_naming_the_key(
    llm_config: dict[str, object], named: str
) -> None:
    groups = [{"id": "retrieval_llm", "models": [{"provider": "openai", "model": "x"}]}]

    with pytest.raises(LLMConfigError, match=named):
        RetrievalLLM.from_config(llm_config, model_groups=groups)


def test_a_missing_api_key_env_var_fails_at_configuration_time(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    config = fake_openai.llm_config()
    del config["api_key"]

    with pytest.raises(LLMConfigError, match="api_key"):
        RetrievalLLM.from_config(config)


HUGE_BODY_BYTES = 20 * 1024 * 1024


def self_hosted(fake_openai: FakeOpenAI) -> dict[str, Any]:
    """An ``llm:`` block for Rasa's self-hosted provider (vLLM and other OpenAI-compatible
    servers), which litellm calls with its own HTTP client, not the openai SDK."""
    config = fake_openai.llm_config(provider="self-hosted", model="served-model")
    del config["api_key"]
    return config


async def test_a_self_hosted_model_answers_through_the_capped_client(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.reply("premium price")
    llm = RetrievalLLM.from_config(self_hosted(fake_openai))

    assert "client" in llm._call_arguments, "the body cap is installed"
    assert (await llm.complete("hi", timeout=10)) == "premium price"


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "content-length"])
@pytest.mark.parametrize("provider", ["openai", "self-hosted"])
async def test_a_huge_body_is_cut_off_after_the_cap_and_falls_back(
    fake_openai: FakeOpenAI, chunked: bool, provider: str
) -> None:
    body = '{"choices": [{"message": {"content": "' + "x" * HUGE_BODY_BYTES + '"}}]}'
    fake_openai.reply(Reply(raw_body=body, chunked=chunked))
    config = fake_openai.llm_config() if provider == "openai" else self_hosted(fake_openai)
    llm = RetrievalLLM.from_config(config)

    with capture_logs() as logs, pytest.raises(LLMUnavailable):
        await llm.complete("hi", timeout=10)

    refused = [log for log in logs if log["event"] == "llm.complete.body_too_large"]
    assert refused, "the body was refused while it was read"
    assert all(log["bytes_read"] <= MAX_BODY_BYTES + CHUNK_BYTES for log in refused)
    if chunked:  # the server saw the client hang up long before the end
        assert fake_openai.bytes_sent < HUGE_BODY_BYTES // 4


async def test_without_a_queue_wait_past_the_calls_in_flight_a_step_falls_back_at_once(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.responder = lambda _: Reply(content="slow answer", delay=1.0)
    built = RetrievalLLM.from_config(fake_openai.llm_config())
    llm = RetrievalLLM(built._client, model=built.model, budget=CallBudget(2), queue_wait=0)

    outcomes = await asyncio.gather(
        *(llm.complete(f"question {n}", timeout=5) for n in range(5)), return_exceptions=True
    )

    answered = [outcome for outcome in outcomes if outcome == "slow answer"]
    refused = [outcome for outcome in outcomes if isinstance(outcome, LLMUnavailable)]
    assert (len(answered), len(refused)) == (2, 3)
    assert all("already wait" in str(error) for error in refused)
    assert fake_openai.call_count == 2, "the refused steps sent no request"
    assert (await llm.complete("after", timeout=5)) == "slow answer", "places are given back"


async def test_past_the_calls_in_flight_steps_queue_for_a_place_and_past_the_queue_fall_back(
    fake_openai: FakeOpenAI,
) -> None:
    """A burst arrives in one instant: two calls go out, two steps queue and are answered as
    places free up, and the steps past the queue's places fall back without sending anything."""
    fake_openai.responder = lambda _: Reply(content="answer", delay=0.2)
    built = RetrievalLLM.from_config(fake_openai.llm_config())
    budget = CallBudget(2, queue_places=2)
    llm = RetrievalLLM(built._client, model=built.model, budget=budget, queue_wait=30)

    with capture_logs() as logs:
        outcomes = await asyncio.gather(
            *(llm.complete(f"question {n}", timeout=30) for n in range(6)),
            return_exceptions=True,
        )

    assert outcomes.count("answer") == 4
    assert [isinstance(outcome, LLMUnavailable) for outcome in outcomes[4:]] == [True, True]
    assert fake_openai.call_count == 4, "at most four places: two out, two queued"
    busy = [log for log in logs if log["event"] == "llm.complete.busy"]
    assert [log["queued"] for log in busy] == [2, 2], "they found the queue full"
    assert budget.queued == 0


@pytest.mark.parametrize(
    ("configured", "expected"), [({}, 0.5), ({"llm_queue_wait_seconds": 0}, 0)]
)
async def test_the_store_waits_for_a_place_as_long_as_configured(
    fake_openai: FakeOpenAI, tmp_path: Path, configured: dict[str, Any], expected: float
) -> None:
    config = StoreConfig.from_kwargs(
        {"docs": str(tmp_path), "rewrite": "llm", "llm": fake_openai.llm_config(), **configured}
    )
    assert build_llm_planner(config)._llm.queue_wait == expected


async def test_a_queued_step_that_gets_no_place_in_time_falls_back_and_leaves_the_queue(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.responder = lambda _: Reply(content="slow answer", delay=1.5)
    built = RetrievalLLM.from_config(fake_openai.llm_config())
    budget = CallBudget(1)
    waits_briefly = RetrievalLLM(built._client, model=built.model, budget=budget, queue_wait=0.2)
    outlives_its_budget = RetrievalLLM(
        built._client, model=built.model, budget=budget, queue_wait=30
    )

    outcomes = await asyncio.gather(
        waits_briefly.complete("first", timeout=30),
        waits_briefly.complete("second", timeout=30),
        outlives_its_budget.complete_and_parse("third", str.upper, timeout=0.3),
        return_exceptions=True,
    )

    assert outcomes[0] == "slow answer"
    assert all(isinstance(outcome, LLMUnavailable) for outcome in outcomes[1:])
    assert fake_openai.call_count == 1, "the steps that waited in vain sent nothing"
    assert budget.queued == 0, "both left the queue"
    assert (await waits_briefly.complete("after", timeout=30)) == "slow answer", "place freed"


async def test_the_request_and_the_parse_run_off_the_event_loop_thread(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.reply('{"query": "premium price"}')
    llm = RetrievalLLM.from_config(fake_openai.llm_config())
    request_threads: list[str] = []
    acompletion = llm._client.acompletion

    async def recording(*args: Any, **kwargs: Any) -> Any:
        request_threads.append(threading.current_thread().name)
        return await acompletion(*args, **kwargs)

    llm._client.acompletion = recording  # type: ignore[method-assign]
    parse_threads: list[threading.Thread] = []

    def parse(answer: str) -> Any:
        parse_threads.append(threading.current_thread())
        return json.loads(answer)

    parsed = await llm.complete_and_parse("hi", parse, timeout=5)

    assert parsed == {"query": "premium price"}
    loop_thread = threading.current_thread()
    assert request_threads == [LLM_THREAD_NAME]
    assert parse_threads and parse_threads[0] is not loop_thread
