"""The plugin's one way to an LLM: Rasa's own client, built from the ``llm:`` block.

Rasa configures LLMs the same way everywhere (``provider``, ``model``, ``api_base``,
``api_key: ${ENV_VAR}``, ``timeout``, ... or ``model_group`` pointing into endpoints.yml) and
ships clients for every provider (litellm underneath). The ``llm:`` block inside the plugin's
``vector_store:`` block is read with exactly those helpers (``resolve_model_client_config``,
``llm_factory``), so it honours the same keys, env vars, routers and retries as the rest of the
assistant, and any OpenAI-compatible endpoint works.

A provider's ``timeout`` bounds one HTTP attempt and retries multiply it, so every call here is
additionally bounded by ``asyncio.wait_for``: the caller's ``timeout`` is the wall time the
retrieval path can lose, whatever the client does underneath. ``complete_and_parse`` keeps the
parse of the answer inside that same budget and off the event loop (on the search workers), and
answers longer than ``MAX_ANSWER_BYTES`` are refused before anything parses them: LangChain's
JSON repair (``parse_partial_json``) is quadratic in the answer's length, and one hostile answer
parsed on the loop froze every other conversation for as long as it took. Rasa's LLM modules
import litellm, which takes seconds, so they are imported only when an ``llm:`` block is
configured.

Under load the LLM must not become the queue every conversation waits in: requests run on an
event loop of their own (``llm_loop``), an OpenAI-compatible endpoint's body is cut off at a byte
cap while it is read (``capped_body``), and at most ``MAX_CALLS_IN_FLIGHT`` calls wait for
answers at once; a step that finds them all taken queues for a place for a short, bounded time
(``llm_queue_wait_seconds``, within its own time budget), then falls back, as on a timeout.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import structlog

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.llm.capped_body import capped_litellm_handler, capped_openai_client
from rasa_context_retrieval.llm.llm_loop import llm_loop, on_llm_loop
from rasa_context_retrieval.workers import off_loop

if TYPE_CHECKING:
    from rasa.shared.providers.llm.llm_client import LLMClient

logger = structlog.get_logger()

COMPONENT_NAME = "ContextRetrieval"
MODEL_GROUP_KEY = "model_group"
PROVIDER_KEY = "provider"

DEFAULT_PROVIDER = "openai"
DEFAULT_MODEL = "gpt-5-mini-2025-08-07"
DEFAULT_REQUEST_TIMEOUT_SECONDS = 10
DEFAULT_MAX_RETRIES = 1
DEFAULT_MAX_COMPLETION_TOKENS = 512

DEFAULT_LLM_CONFIG: dict[str, Any] = {
    "provider": DEFAULT_PROVIDER,
    "model": DEFAULT_MODEL,
    "timeout": DEFAULT_REQUEST_TIMEOUT_SECONDS,
    "max_retries": DEFAULT_MAX_RETRIES,
    "max_completion_tokens": DEFAULT_MAX_COMPLETION_TOKENS,
}
"""Filled in for keys the ``llm:`` block leaves out when it uses the same provider (Rasa's rule)."""
MAX_ANSWER_BYTES = 4096
"""Longest answer (UTF-8) any step reads. Real answers are a query line, a few paraphrases or a
small JSON object, well under 1 KB; ``max_completion_tokens`` asks for at most about 2 KB, but a
provider or proxy may ignore it."""

MAX_CALLS_IN_FLIGHT = 16
"""LLM calls waiting for an answer at once, over every conversation of the process. Past it a
step queues for a place for at most ``llm_queue_wait_seconds``, then falls back to the no-LLM
path: 200 conversations asking together would otherwise all queue behind one another and each
miss its time budget anyway."""
MAX_STEPS_QUEUED = 256
"""Steps queued for a place at once; a step past it falls back at once. A queued step holds a
record of a few hundred bytes, so a burst of any size costs at most this many."""
OPENAI_SDK_PREFIX = "openai/"
"""litellm's model names that go through the openai SDK, whose HTTP client can be handed in."""
LITELLM_HTTP_PREFIXES = ("hosted_vllm/",)
"""litellm's model names it sends with its own HTTP client (``AsyncHTTPHandler``), which can be
handed in: Rasa's ``self_hosted`` provider (vLLM and other OpenAI-compatible servers). litellm
calls many more providers this way (anthropic, bedrock, groq, mistral, ...); each is added once a
test shows its body capped."""

Parsed = TypeVar("Parsed")


class LLMConfigError(ContextRetrievalError, ValueError):
    """The ``llm:`` block cannot be turned into a client; the message names the key and the fix."""


class LLMUnavailable(ContextRetrievalError):
    """The LLM gave no usable answer: timeout, HTTP or provider error, or an empty answer."""


@dataclass(eq=False)
class _Waiter:
    """A step queued for a place: woken on its own loop when a call hands its place over."""

    loop: asyncio.AbstractEventLoop
    woken: asyncio.Future[None]
    granted: bool = False


class CallBudget:
    """How many LLM calls may wait for an answer at once, and how many steps may queue for a
    place meanwhile (first come, first served).

    A burst of conversations arrives in one instant, and a call's place frees up a few
    milliseconds to a second later: a short wait lets most of the burst use the LLM instead of
    falling back. The queue is bounded, so a burst costs at most ``queue_places`` small waiting
    records, and each wait is bounded by the caller. It is shared by every event loop of the
    process (a place freed on one loop wakes a step on another), hence a thread lock.
    """

    def __init__(self, places: int, queue_places: int = MAX_STEPS_QUEUED) -> None:
        self.places = places
        self.queue_places = queue_places
        self._taken = 0
        self._queue: deque[_Waiter] = deque()
        self._lock = threading.Lock()

    @property
    def queued(self) -> int:
        """Steps waiting for a place now."""
        return len(self._queue)

    async def take(self, wait: float) -> bool:
        """A place, waiting for one at most ``wait`` seconds; False without one.

        A step falls back at once, without waiting, when ``queue_places`` steps already wait.
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._taken < self.places and not self._queue:
                self._taken += 1
                return True
            if wait <= 0 or len(self._queue) >= self.queue_places:
                return False
            waiter = _Waiter(loop, loop.create_future())
            self._queue.append(waiter)
        try:
            await asyncio.wait_for(waiter.woken, wait)
        except TimeoutError:
            return not self._withdraw(waiter)  # a place handed over as the wait ended is kept
        except BaseException:  # cancelled: the caller's own deadline passed
            if not self._withdraw(waiter):
                self.give_back()
            raise
        return True

    def give_back(self) -> None:
        """Free a place, or hand it to the step that has waited longest."""
        with self._lock:
            while self._queue:
                waiter = self._queue.popleft()
                try:
                    waiter.loop.call_soon_threadsafe(_wake, waiter.woken)
                except RuntimeError:  # its loop is closed: nobody is waiting there any more
                    continue
                waiter.granted = True
                return
            self._taken -= 1

    def _withdraw(self, waiter: _Waiter) -> bool:
        """Leave the queue; False when a place was handed over already (it is the step's)."""
        with self._lock:
            if waiter.granted:
                return False
            self._queue.remove(waiter)
            return True


def _wake(woken: asyncio.Future[None]) -> None:
    if not woken.done():
        woken.set_result(None)


CALLS_IN_FLIGHT = CallBudget(MAX_CALLS_IN_FLIGHT)
"""One budget for the process: the LLM endpoint and the LLM loop are shared by every store."""


class RetrievalLLM:
    """An LLM the retrieval plan can ask for text, within a time budget."""

    def __init__(
        self,
        client: LLMClient,
        *,
        model: str,
        budget: CallBudget = CALLS_IN_FLIGHT,
        queue_wait: float = 0.0,
    ) -> None:
        self._client = client
        self.model = model
        self._budget = budget
        self.queue_wait = queue_wait
        """Seconds a step waits for a place among the calls in flight; 0: it falls back at once.
        The store passes the configured ``llm_queue_wait_seconds``."""
        self._call_arguments = _capped_call_arguments(client)
        self._users = 0
        """Searches (and calls) holding this LLM now: ``in_use``."""
        self._close_wanted = False
        self._closed = False
        self._users_lock = threading.Lock()

    @classmethod
    def from_config(
        cls,
        llm_config: Mapping[str, Any],
        *,
        model_groups: Sequence[Mapping[str, Any]] | None = None,
        queue_wait: float = 0.0,
    ) -> RetrievalLLM:
        """Validate the ``llm:`` block and build Rasa's client for it.

        ``model_groups`` are endpoints.yml's ``model_groups``; when left out, Rasa reads them
        from the loaded endpoints, as its own components do. ``queue_wait``: seconds a step
        waits for a place when ``MAX_CALLS_IN_FLIGHT`` calls are out.

        Raises:
            LLMConfigError: the block is malformed, names an unknown model group, or the
                provider's client rejects it (e.g. its API key env var is not set).
        """
        resolved = resolve_llm_config(llm_config, model_groups=model_groups)
        from rasa.shared.utils.llm import llm_factory

        try:
            client = llm_factory(resolved, DEFAULT_LLM_CONFIG)
        except Exception as error:  # Rasa raises several unrelated types for a bad config.
            raise LLMConfigError(
                f"vector_store.llm: Rasa could not build an LLM client ({error}). Check provider, "
                "model, api_base and that the api_key env var is set."
            ) from error
        _import_sdk_resources()
        return cls(client, model=_model_name(resolved), queue_wait=queue_wait)

    async def complete(self, prompt: str, *, timeout: float) -> str:
        """The LLM's answer to ``prompt`` (sent as one user message), stripped.

        The wait for a place among the calls in flight is part of ``timeout``.

        Raises:
            LLMUnavailable: no non-empty answer within ``timeout`` seconds of wall time.
        """
        with self.in_use():
            return await self._complete(prompt, timeout)

    async def _complete(self, prompt: str, timeout: float) -> str:
        started = time.perf_counter()
        if not await self._budget.take(min(self.queue_wait, timeout)):
            self._log_failure(
                "busy", started, in_flight=self._budget.places, queued=self._budget.queued
            )
            raise LLMUnavailable(f"{self.budget_text()} already wait for {self.model}")
        try:
            left = timeout - (time.perf_counter() - started)
            if left <= 0:  # the wait for a place took the whole budget
                raise TimeoutError
            request = self._client.acompletion(prompt, **self._call_arguments)
            response = await asyncio.wait_for(on_llm_loop(request), timeout=left)
        except TimeoutError as error:
            self._log_failure("timeout", started, timeout=timeout)
            raise LLMUnavailable(f"no answer from {self.model} within {timeout:.2f} s") from error
        except Exception as error:  # Rasa wraps provider errors; litellm raises many types.
            self._log_failure("error", started, error=str(error))
            raise LLMUnavailable(f"{self.model} failed: {error}") from error
        finally:
            self._budget.give_back()
        answer = _first_choice(response.choices)
        if not answer:
            self._log_failure("empty", started)
            raise LLMUnavailable(f"{self.model} returned an empty answer")
        size = len(answer.encode("utf-8", errors="replace"))
        if size > MAX_ANSWER_BYTES:
            self._log_failure("oversized", started, bytes=size, limit=MAX_ANSWER_BYTES)
            raise LLMUnavailable(
                f"{self.model} answered {size} bytes, over the limit of {MAX_ANSWER_BYTES}"
            )
        logger.debug(
            "llm.complete.done",
            model=self.model,
            latency_ms=_elapsed_ms(started),
            chars=len(answer),
        )
        return answer

    async def complete_and_parse(
        self, prompt: str, parse: Callable[[str], Parsed], *, timeout: float
    ) -> Parsed:
        """``parse`` of the LLM's answer; the request and the parse share ``timeout``.

        ``parse`` runs in a worker thread: a slow parse then delays only this conversation's
        step, which gives up at the deadline, instead of every conversation on the event loop.

        Raises:
            LLMUnavailable: no answer, an oversized answer, or no parse within ``timeout``.
        """
        started = time.perf_counter()
        try:
            return await asyncio.wait_for(self._answer_parsed(prompt, parse, timeout), timeout)
        except TimeoutError as error:
            self._log_failure("timeout", started, timeout=timeout, step="parse")
            raise LLMUnavailable(
                f"no parsed answer from {self.model} within {timeout:.2f} s"
            ) from error

    async def _answer_parsed(
        self, prompt: str, parse: Callable[[str], Parsed], timeout: float
    ) -> Parsed:
        answer = await self.complete(prompt, timeout=timeout)
        return await off_loop(parse, answer)

    @contextmanager
    def in_use(self) -> Iterator[None]:
        """Hold the HTTP client open while the block runs (a search's plan, one call).

        Rasa runs conversations concurrently and calls ``connect()`` before every search, so
        the ``llm:`` block may change (and the store close this LLM) while another search
        still waits for its answer: ``close`` then waits for the last holder to leave.
        """
        with self._users_lock:
            self._users += 1
        try:
            yield
        finally:
            with self._users_lock:
                self._users -= 1
            self._close_if_unused()

    def close(self) -> None:
        """Close the HTTP client built for this LLM's calls (its pool of connections) once no
        search holds it (``in_use``); returns at once.

        The client sent its requests on the LLM loop, so it is closed there. A call made after
        it closed fails like a connection error, and its step falls back as it does for one.
        """
        with self._users_lock:
            self._close_wanted = True
        self._close_if_unused()

    def _close_if_unused(self) -> None:
        client = self._call_arguments.get("client")
        with self._users_lock:
            if self._closed or not self._close_wanted or self._users or client is None:
                return
            self._closed = True
        asyncio.run_coroutine_threadsafe(client.close(), llm_loop())

    def budget_text(self) -> str:
        return f"{self._budget.places} LLM calls"

    def _log_failure(self, reason: str, started: float, **details: Any) -> None:
        logger.warning(
            f"llm.complete.{reason}",
            model=self.model,
            latency_ms=_elapsed_ms(started),
            **details,
        )


def resolve_llm_config(
    llm_config: Mapping[str, Any],
    *,
    model_groups: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Check the ``llm:`` block's shape and resolve ``model_group`` the way Rasa does."""
    if not isinstance(llm_config, Mapping) or not llm_config:
        raise LLMConfigError(
            "vector_store.llm must be a mapping such as {provider: openai, model: gpt-4.1-mini} "
            "or {model_group: <id from endpoints.yml>}."
        )
    config = dict(llm_config)
    if MODEL_GROUP_KEY in config:
        return _resolve_model_group(config, model_groups)
    if not isinstance(config.get(PROVIDER_KEY), str) or not config[PROVIDER_KEY]:
        raise LLMConfigError(
            "vector_store.llm.provider is missing: set it (e.g. provider: openai) or use "
            "model_group: <id> to reuse a model group from endpoints.yml."
        )
    return config


def _resolve_model_group(
    config: dict[str, Any], model_groups: Sequence[Mapping[str, Any]] | None
) -> dict[str, Any]:
    group_id = config[MODEL_GROUP_KEY]
    if not isinstance(group_id, str) or not group_id or len(config) > 1:
        raise LLMConfigError(
            "vector_store.llm.model_group must be the only key, naming a model group id from "
            "endpoints.yml; configure provider/model/timeout in that model group."
        )
    from rasa.shared.utils.llm import resolve_model_client_config

    try:
        resolved = resolve_model_client_config(
            config,
            COMPONENT_NAME,
            model_groups=[dict(group) for group in model_groups] if model_groups else None,
        )
    except Exception as error:  # InvalidConfigException, or no endpoints loaded at all.
        raise LLMConfigError(
            f"vector_store.llm.model_group '{group_id}' could not be resolved ({error}). "
            "Define it under model_groups in endpoints.yml."
        ) from error
    if not resolved:
        raise LLMConfigError(f"vector_store.llm.model_group '{group_id}' resolved to nothing.")
    return dict(resolved)


def _import_sdk_resources() -> None:
    """Import what the openai SDK otherwise imports inside the first request.

    That lazy import takes about a second of synchronous work on the event loop, which no
    ``asyncio.wait_for`` can interrupt: the first user's turn would overrun its time budget.
    litellm routes every OpenAI-compatible provider through this SDK.
    """
    import openai.resources  # noqa: F401


def _capped_call_arguments(client: Any) -> dict[str, Any]:
    """``client=`` for litellm: an HTTP client that stops reading at the body cap.

    For models litellm sends through the openai SDK (``openai/...``, any OpenAI-compatible
    endpoint), an openai SDK client; for those it sends with its own HTTP client
    (``LITELLM_HTTP_PREFIXES``), that client. Other providers and routers keep their own HTTP
    client, and their answers are refused for their length after it has read them.
    """
    model_name = getattr(client, "_litellm_model_name", None)
    arguments = getattr(client, "_completion_fn_args", None)
    if not isinstance(model_name, str) or not isinstance(arguments, Mapping):
        return {}
    if "client" in arguments:
        return {}
    if model_name.startswith(LITELLM_HTTP_PREFIXES):
        return {"client": capped_litellm_handler()}
    if not model_name.startswith(OPENAI_SDK_PREFIX):
        return {}
    from rasa.shared.utils.io import resolve_environment_variables

    return {"client": capped_openai_client(resolve_environment_variables(dict(arguments)))}


def _model_name(config: Mapping[str, Any]) -> str:
    models = config.get("models")
    if isinstance(models, list) and models and isinstance(models[0], Mapping):
        config = models[0]
    return str(config.get("model") or config.get("deployment") or DEFAULT_MODEL)


def _first_choice(choices: Sequence[Any]) -> str:
    if not choices or not isinstance(choices[0], str):
        return ""
    return choices[0].strip()


def _elapsed_ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)
