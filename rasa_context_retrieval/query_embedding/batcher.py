"""Concurrent searches share embedding calls, and keep every core on the model.

Searches run in worker threads (the engine hands retrieval to ``asyncio.to_thread``), so the
event loop never waits here. A thread that asks while fewer calls than cores are running becomes
a leader: it embeds everything queued, in batches, while the others wait for their own vectors.
When the previous batch was shared by several searches, a leader first waits up to a few
milliseconds for as many searches as that batch had. The wait counts searches, not texts: one
search's query mix (several texts) arrives at once, so a lone search never waits, whatever its
number of texts, and batching costs an idle assistant nothing.

One leader per core, not one in all: a model call is arithmetic that releases the GIL, so with a
single leader a second search that needs its vectors waited for the first's call to end while a
core stood idle (bench/results/query_embedding.md). Each call is told how many cores no other
leader is using, so a lone search spreads its texts over the idle ones. Python's
``concurrent.futures`` has no micro-batching and asyncio-based batchers would run on the event
loop, hence this small class.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

DEFAULT_WINDOW_SECONDS = 0.003
DEFAULT_MAX_BATCH = 32
DEFAULT_MAX_LEADERS = os.cpu_count() or 1
"""Model calls at once: each runs on one thread (``onnx_query.INTRA_OP_THREADS``)."""
RECENT_BATCHES = 1000


class EmbedMany(Protocol):
    """The model call: ``cores`` is how many cores it may use, its own and the idle ones."""

    def __call__(self, texts: Sequence[str], cores: int) -> np.ndarray: ...


@dataclass(frozen=True)
class _Request:
    """One search's texts, kept together so that one search is never split across batches."""

    texts: Sequence[str]
    futures: list[Future[np.ndarray]] = field(default_factory=list)


class QueryBatcher:
    """``embed_many(texts)`` from many threads; one call of the model per batch of searches."""

    def __init__(
        self,
        embed_many: EmbedMany,
        *,
        window_seconds: float = DEFAULT_WINDOW_SECONDS,
        max_batch: int = DEFAULT_MAX_BATCH,
        max_leaders: int = DEFAULT_MAX_LEADERS,
    ) -> None:
        self._embed_many = embed_many
        self._window = window_seconds
        self._max_batch = max_batch
        self._max_leaders = max(1, max_leaders)
        self._arrived = threading.Condition()
        self._pending: list[_Request] = []
        self._leaders = 0
        self._last_batch_searches = 1
        self.batch_sizes: deque[int] = deque(maxlen=RECENT_BATCHES)
        """Texts in each of the latest batches (for tests and benchmarks)."""

    def embed(self, text: str) -> np.ndarray:
        return self.embed_many([text])[0]

    def embed_many(self, texts: Sequence[str]) -> list[np.ndarray]:
        """One search's texts (its query mix) join the batch together."""
        request = _Request(list(texts), [Future() for _ in texts])
        with self._arrived:
            self._pending.append(request)
            self._arrived.notify_all()
            lead = self._leaders < self._max_leaders
            if lead:
                self._leaders += 1
        if lead:
            self._lead()
        return [future.result() for future in request.futures]

    def _lead(self) -> None:
        with self._arrived:
            expected = self._last_batch_searches
            self._arrived.wait_for(lambda: len(self._pending) >= expected, timeout=self._window)
        while True:
            with self._arrived:
                batch = self._take_batch()
                if not batch:
                    self._leaders -= 1
                    return
                self._last_batch_searches = len(batch)
                cores = 1 + self._max_leaders - self._leaders  # its own and those no leader uses
            self._run(batch, cores)

    def _take_batch(self) -> list[_Request]:
        """Whole searches, up to ``max_batch`` texts (at least one search, however many)."""
        taken: list[_Request] = []
        texts = 0
        while self._pending and (
            not taken or texts + len(self._pending[0].texts) <= self._max_batch
        ):
            request = self._pending.pop(0)
            taken.append(request)
            texts += len(request.texts)
        return taken

    def _run(self, batch: list[_Request], cores: int) -> None:
        texts = [text for request in batch for text in request.texts]
        futures = [future for request in batch for future in request.futures]
        self.batch_sizes.append(len(texts))
        try:
            vectors = self._embed_many(texts, cores)
            if len(vectors) != len(texts):
                raise RuntimeError(f"{len(vectors)} vectors for {len(texts)} texts")
        except Exception as error:  # every waiting caller gets the error, none hangs
            for future in futures:
                future.set_exception(error)
            return
        for future, vector in zip(futures, vectors, strict=True):
            future.set_result(vector)
