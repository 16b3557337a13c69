"""Concurrent searches share one embedding call.

Searches run in worker threads (the engine hands retrieval to ``asyncio.to_thread``), so the
event loop never waits here. The first thread to ask becomes the leader: it embeds everything
queued, in batches, while the others wait for their own vector. When the previous batch was
shared, the leader first waits up to a few milliseconds for as many callers as that batch had;
a lone search (the previous batch had one text) never waits, so batching costs an idle assistant
nothing. Python's ``concurrent.futures`` has no micro-batching and asyncio-based batchers would
run on the event loop, hence this small class.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future

import numpy as np

DEFAULT_WINDOW_SECONDS = 0.003
DEFAULT_MAX_BATCH = 32
RECENT_BATCHES = 1000

EmbedMany = Callable[[Sequence[str]], np.ndarray]


class QueryBatcher:
    """``embed(text)`` from many threads; one ``embed_many`` call per batch of waiting texts."""

    def __init__(
        self,
        embed_many: EmbedMany,
        *,
        window_seconds: float = DEFAULT_WINDOW_SECONDS,
        max_batch: int = DEFAULT_MAX_BATCH,
    ) -> None:
        self._embed_many = embed_many
        self._window = window_seconds
        self._max_batch = max_batch
        self._arrived = threading.Condition()
        self._pending: list[tuple[str, Future[np.ndarray]]] = []
        self._leading = False
        self._last_batch_size = 1
        self.batch_sizes: deque[int] = deque(maxlen=RECENT_BATCHES)
        """Sizes of the latest batches (for tests and benchmarks)."""

    def embed(self, text: str) -> np.ndarray:
        return self.embed_many([text])[0]

    def embed_many(self, texts: Sequence[str]) -> list[np.ndarray]:
        """One search's texts (its query mix) join the batch together."""
        futures: list[Future[np.ndarray]] = [Future() for _ in texts]
        with self._arrived:
            self._pending.extend(zip(texts, futures, strict=True))
            self._arrived.notify_all()
            lead = not self._leading
            self._leading = True
        if lead:
            self._lead()
        return [future.result() for future in futures]

    def _lead(self) -> None:
        with self._arrived:
            expected = min(self._last_batch_size, self._max_batch)
            self._arrived.wait_for(lambda: len(self._pending) >= expected, timeout=self._window)
        while True:
            with self._arrived:
                batch = self._pending[: self._max_batch]
                del self._pending[: self._max_batch]
                if not batch:
                    self._leading = False
                    return
                self._last_batch_size = len(batch)
            self._run(batch)

    def _run(self, batch: list[tuple[str, Future[np.ndarray]]]) -> None:
        self.batch_sizes.append(len(batch))
        try:
            vectors = self._embed_many([text for text, _ in batch])
            if len(vectors) != len(batch):
                raise RuntimeError(f"{len(vectors)} vectors for {len(batch)} texts")
        except Exception as error:  # every waiting caller gets the error, none hangs
            for _, future in batch:
                future.set_exception(error)
            return
        for (_, future), vector in zip(batch, vectors, strict=True):
            future.set_result(vector)
