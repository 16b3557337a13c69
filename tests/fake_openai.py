"""An OpenAI-compatible chat-completions server for tests: real HTTP, scripted answers.

Our LLM features talk to any OpenAI-compatible endpoint through Rasa's own client (litellm and
the openai SDK underneath). Mocking that client would test our assumptions about it, not the
client; instead the tests point ``api_base`` at this server, which runs on 127.0.0.1 on a free
port in a background thread and answers ``POST /v1/chat/completions`` (and
``/chat/completions``) from a script: a queue of replies, or a function of the request. A reply
may be delayed, be an HTTP error or a body that is not JSON. Every request is recorded so a test
can assert what was sent and how many calls were made.

Use it by importing the fixture explicitly, and run the tests that call an LLM on one event loop
(litellm caches its HTTP clients per loop; an application has one loop, pytest one per test)::

    from tests.fake_openai import fake_openai_fixture  # noqa: F401

    pytestmark = pytest.mark.asyncio(loop_scope="session")
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web

# litellm fetches its model price list from the internet on import and retries for ~15 s when
# offline; the bundled copy is all the tests need. Effective only if litellm is not imported yet.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

FAKE_API_KEY = "sk-test-not-a-secret"
LOCALHOST = "127.0.0.1"
CHAT_COMPLETIONS_PATHS = ("/v1/chat/completions", "/chat/completions")
UNSCRIPTED_STATUS = 500
SERVER_START_TIMEOUT_SECONDS = 5.0
SHUTDOWN_GRACE_SECONDS = 0.05
CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    ``content`` becomes the assistant message; ``raw_body`` (if set) is sent verbatim instead of
    a well-formed completion, e.g. to send malformed JSON; ``status`` other than 200 sends an
    OpenAI-style error body; ``delay`` seconds pass before anything is sent. ``chunked`` sends
    ``raw_body`` in pieces without a ``Content-Length``, counting the bytes the client took
    (``FakeOpenAI.bytes_sent``) until it hung up.
    """

    content: str | None = ""
    delay: float = 0.0
    status: int = 200
    raw_body: str | None = None
    chunked: bool = False


Responder = Callable[[dict[str, Any]], "Reply | str"]


class FakeOpenAI:
    """The server, its script and its record of requests."""

    def __init__(self) -> None:
        self.responder: Responder | None = None
        self._script: deque[Reply] = deque()
        self._requests: list[dict[str, Any]] = []
        self._authorizations: list[str | None] = []
        self._lock = threading.Lock()
        self.bytes_sent = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self.port = 0

    # -- scripting -------------------------------------------------------------------------

    def reply(self, *replies: Reply | str) -> None:
        """Queue answers, served in order before ``responder`` is consulted."""
        with self._lock:
            self._script.extend(_as_reply(reply) for reply in replies)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies received so far (``{"_raw": text}`` when a body was not JSON)."""
        with self._lock:
            return list(self._requests)

    @property
    def authorizations(self) -> list[str | None]:
        """The ``Authorization`` header of each request, in order."""
        with self._lock:
            return list(self._authorizations)

    @property
    def call_count(self) -> int:
        return len(self.requests)

    def prompts(self) -> list[str]:
        """The text of the last message of each request, in order."""
        return [_last_message_text(body) for body in self.requests]

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self._requests.clear()
            self._authorizations.clear()
        self.responder = None

    # -- configuration ---------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://{LOCALHOST}:{self.port}/v1"

    def llm_config(self, **overrides: Any) -> dict[str, Any]:
        """An ``llm:`` block for Rasa's ``openai`` provider pointing at this server.

        ``max_retries: 0`` so that each logical call is one HTTP request the tests can count.
        """
        config: dict[str, Any] = {
            "provider": "openai",
            "model": "gpt-4o-mini",
            "api_base": self.base_url,
            "api_key": "${OPENAI_API_KEY}",
            "timeout": 10,
            "max_retries": 0,
        }
        config.update(overrides)
        return config

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._serve(), self._loop)
        self.port = future.result(timeout=SERVER_START_TIMEOUT_SECONDS)

    def stop(self) -> None:
        if self._runner is not None:
            cleanup = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop)
            cleanup.result(timeout=SERVER_START_TIMEOUT_SECONDS)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=SERVER_START_TIMEOUT_SECONDS)
        self._loop.close()

    async def _serve(self) -> int:
        app = web.Application()
        for path in CHAT_COMPLETIONS_PATHS:
            app.router.add_post(path, self._chat_completions)
        # A test that gave up on a slow reply must not wait for it at teardown.
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_GRACE_SECONDS)
        await self._runner.setup()
        site = web.TCPSite(self._runner, LOCALHOST, 0)
        await site.start()
        return int(self._runner.addresses[0][1])

    async def _send_in_chunks(self, request: web.Request, body: bytes) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            for start in range(0, len(body), CHUNK_BYTES):
                await response.write(body[start : start + CHUNK_BYTES])
                await response.drain()
                with self._lock:
                    self.bytes_sent += len(body[start : start + CHUNK_BYTES])
            await response.write_eof()
        except (ConnectionError, RuntimeError):
            pass  # the client hung up: what it took is counted
        return response

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        text = await request.text()
        try:
            body = json.loads(text)
        except json.JSONDecodeError:
            body = {"_raw": text}
        with self._lock:
            self._requests.append(body)
            self._authorizations.append(request.headers.get("Authorization"))
            scripted = self._script.popleft() if self._script else None
        reply = scripted or self._from_responder(body)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.raw_body is not None and reply.chunked:
            return await self._send_in_chunks(request, reply.raw_body.encode())
        if reply.raw_body is not None:
            return web.Response(
                status=reply.status, text=reply.raw_body, content_type="application/json"
            )
        if reply.status != 200:
            return web.json_response(_error_body(reply.status), status=reply.status)
        return web.json_response(_completion_body(body, reply.content))

    def _from_responder(self, body: dict[str, Any]) -> Reply:
        if self.responder is None:
            return Reply(status=UNSCRIPTED_STATUS)
        return _as_reply(self.responder(body))


def _as_reply(reply: Reply | str) -> Reply:
    return reply if isinstance(reply, Reply) else Reply(content=reply)


def _last_message_text(body: dict[str, Any]) -> str:
    messages = body.get("messages") or [{}]
    content = messages[-1].get("content", "")
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def _completion_body(request_body: dict[str, Any], content: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request_body.get("model", "fake-model"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _error_body(status: int) -> dict[str, Any]:
    return {
        "error": {
            "message": f"scripted failure (HTTP {status})",
            "type": "server_error",
            "code": None,
        }
    }


@pytest.fixture(name="fake_openai")
def fake_openai_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    """A running fake server with an empty script; ``OPENAI_API_KEY`` is a dummy key."""
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_API_KEY)
    server = FakeOpenAI()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def main() -> None:
    """Serve in a process of its own (for ``bench/``): every request gets ``--answer``."""
    import argparse

    parser = argparse.ArgumentParser(description="OpenAI-compatible test server")
    parser.add_argument("--answer", required=True, help="the assistant message of every reply")
    args = parser.parse_args()
    server = FakeOpenAI()
    server.responder = lambda _: Reply(content=args.answer)
    server.start()
    print(server.base_url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
