"""An HTTP client for the openai SDK that stops reading an answer at a byte cap.

The SDK reads a response's whole body, then parses it, before any of our code sees the answer;
a hostile or broken endpoint sending 100 MB kept a worker busy for seconds before the answer
could be refused for its length. An ``httpx`` response hook runs once the headers are in, before
the body is read: it refuses a ``Content-Length`` over the cap at once and otherwise wraps the
body stream so that reading stops with ``AnswerTooLarge`` as soon as the count passes the cap, so
at most the cap plus one network chunk is read. The SDK, litellm and Rasa see the error like any
other connection error, and the caller falls back as it does for those.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
import structlog

from rasa_context_retrieval.errors import ContextRetrievalError

logger = structlog.get_logger()

MAX_BODY_BYTES = 32 * 1024
"""Largest completion body read: a 4 KB answer, JSON-escaped (up to six bytes a character for
non-ASCII text written as ``\\uXXXX``), in the completion's envelope."""


class AnswerTooLarge(ContextRetrievalError, httpx.ReadError):
    """The body passed ``MAX_BODY_BYTES``; nothing more of it is read."""


class _CappedStream(httpx.AsyncByteStream):
    def __init__(self, stream: httpx.AsyncByteStream, limit: int, url: str) -> None:
        self._stream = stream
        self._limit = limit
        self._url = url
        self.bytes_read = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            self.bytes_read += len(chunk)
            if self.bytes_read > self._limit:
                _log_refused(self._url, self.bytes_read, self._limit)
                raise AnswerTooLarge(f"answer body over {self._limit} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


def capping_hook(limit: int = MAX_BODY_BYTES) -> Any:
    """An ``httpx`` response hook that caps the body read at ``limit`` bytes."""

    async def cap(response: httpx.Response) -> None:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            _log_refused(str(response.request.url), 0, limit, declared=int(declared))
            raise AnswerTooLarge(f"answer body of {declared} bytes, over {limit}")
        stream = response.stream
        if isinstance(stream, httpx.AsyncByteStream):
            response.stream = _CappedStream(stream, limit, str(response.request.url))

    return cap


def capped_openai_client(arguments: Mapping[str, Any], limit: int = MAX_BODY_BYTES) -> Any:
    """An ``AsyncOpenAI`` for litellm's ``client=`` argument, with the body cap installed.

    ``arguments`` are the resolved litellm arguments of Rasa's client; litellm leaves the base
    URL and key of a client it is handed alone, so they are set here from the same arguments.
    """
    from openai import AsyncOpenAI

    http_client = httpx.AsyncClient(
        event_hooks={"response": [capping_hook(limit)]}, follow_redirects=True
    )
    return AsyncOpenAI(
        api_key=arguments.get("api_key") or None,
        base_url=arguments.get("api_base") or arguments.get("base_url") or None,
        organization=arguments.get("organization") or None,
        http_client=http_client,
    )


def capped_litellm_handler(limit: int = MAX_BODY_BYTES) -> Any:
    """litellm's own HTTP client (``AsyncHTTPHandler``) with the body cap installed, for
    litellm's ``client=`` argument with providers it calls over HTTP itself (no vendor SDK):
    its ``post`` sends with httpx, which runs response hooks before it reads the body."""
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

    return AsyncHTTPHandler(event_hooks={"response": [capping_hook(limit)]})


def _log_refused(url: str, bytes_read: int, limit: int, **details: Any) -> None:
    logger.warning(
        "llm.complete.body_too_large", url=url, bytes_read=bytes_read, limit=limit, **details
    )
