"""Opening the knowledge search on a thread of its own, so that start-up never blocks the loop.

Rasa calls ``connect()`` synchronously inside its async ``predict``: loading a published index
takes a moment, but building one from ``docs`` (reading, chunking, embedding every chunk) can take
minutes, and every conversation on the event loop would stall meanwhile. ``OpeningSearch`` runs
the open on a thread and lets searches wait for it off the loop, each for a bounded time. Once
open, what start-up loaded is frozen out of the garbage collector's full collections
(``long_lived``), which otherwise stalled the loop for up to a second and a half under load.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future

from rasa_context_retrieval.engine.search import KnowledgeSearch
from rasa_context_retrieval.long_lived import freeze_long_lived_objects


class OpeningSearch:
    """A ``KnowledgeSearch`` being opened (or opened already, or failed to open)."""

    def __init__(self, open_search: Callable[[], KnowledgeSearch]) -> None:
        self._future: Future[KnowledgeSearch] = Future()
        self._future.set_running_or_notify_cancel()  # running: a waiter's cancel never stops it
        self._thread = threading.Thread(
            target=self._open, args=(open_search,), name="knowledge-open", daemon=True
        )
        self._thread.start()

    def _open(self, open_search: Callable[[], KnowledgeSearch]) -> None:
        try:
            search = open_search()
        except BaseException as error:  # handed to every waiter
            self._future.set_exception(error)
            return
        freeze_long_lived_objects()  # before the first search: the index and models are loaded
        self._future.set_result(search)

    @property
    def opened(self) -> KnowledgeSearch | None:
        """The search if it is open, None while opening or after a failure."""
        if not self._future.done() or self._future.exception() is not None:
            return None
        return self._future.result()

    @property
    def failed(self) -> bool:
        return self._future.done() and self._future.exception() is not None

    def result(self, timeout: float | None = None) -> KnowledgeSearch:
        """Block until open (for the console and benchmarks); raises the open's error."""
        return self._future.result(timeout)

    async def wait(self, seconds: float) -> KnowledgeSearch | None:
        """The open search, waiting for it off the loop at most ``seconds``; None past that.

        Raises:
            Exception: whatever opening raised (a build error, an unreadable model, ...).
        """
        if self._future.done():
            return self._future.result()
        waiting = asyncio.wrap_future(self._future)
        done, _ = await asyncio.wait({waiting}, timeout=seconds)
        if not done:
            waiting.cancel()  # only this waiter: the open itself is running and goes on
            return None
        return waiting.result()
