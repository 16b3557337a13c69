"""One event loop in a thread of its own for every LLM request.

A request through Rasa's client, litellm and the openai SDK costs a few milliseconds of Python
(building the call, logging hooks, parsing the completion into pydantic models). Run on Rasa's
event loop, 200 concurrent searches queued that work back to back and the loop stalled for
0.7-1.4 s. On this loop the same work only competes for the interpreter, which switches
threads every few milliseconds, so Rasa's loop keeps answering. litellm caches HTTP clients per
event loop; one loop for the process keeps that cache useful.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

Result = TypeVar("Result")

THREAD_NAME = "retrieval-llm"

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def llm_loop() -> asyncio.AbstractEventLoop:
    """The LLM loop, started on first use (a daemon thread: it never holds up shutdown)."""
    global _loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name=THREAD_NAME, daemon=True).start()
            _loop = loop
        return _loop


async def on_llm_loop(coroutine: Coroutine[Any, Any, Result]) -> Result:
    """Await ``coroutine`` run on the LLM loop; cancelling this cancels it there too."""
    future = asyncio.run_coroutine_threadsafe(coroutine, llm_loop())
    return await asyncio.wrap_future(future)
