"""Stores of made-up chunks on the test Milvus server, synced side by side.

A first sync to a new collection takes about ten seconds on the test server, nearly all of it
waiting: the client creates and loads the version pointer, the lease and the version itself, and
the server checks a load's progress once a second. Stores of different collections do not wait
for one another, so a module that searches the same chunks in several layouts syncs them in
threads at the same time: three stores take the time of one (``bench/results/test_suite.md``).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.milvus.config import MilvusConfig
from rasa_context_retrieval.milvus.store import MilvusChunkStore

Embed = Callable[[list[str]], np.ndarray]


def hashed_embedder(dimension: int) -> Embed:
    """Made-up vectors seeded by a hash of each text: the same text always gets the same
    vector, and no model is loaded."""

    def embed(texts: list[str]) -> np.ndarray:
        seeds = [
            int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") for text in texts
        ]
        return np.stack([np.random.default_rng(seed).normal(size=dimension) for seed in seeds])

    return embed


StorePlan = tuple[Sequence[MetadataField], Sequence[Chunk]]
"""What one store declares and holds: its typed attributes and its chunks."""


@contextmanager
def synced_side_by_side(
    uri: str, prefix: str, plans: Mapping[str, StorePlan], embed: Embed
) -> Iterator[dict[str, MilvusChunkStore]]:
    """One synced store per plan, each in a collection of its own named ``prefix_<random>``,
    keyed as ``plans``; all closed on exit. If one sync fails, the others are closed and the
    first error is raised."""

    def synced(plan: StorePlan) -> MilvusChunkStore:
        fields, chunks = plan
        config = MilvusConfig(uri=uri, collection=f"{prefix}_{uuid.uuid4().hex[:8]}")
        store = MilvusChunkStore.connect(config, fields)
        try:
            store.sync(chunks, embed)
        except BaseException:
            store.close()
            raise
        return store

    with ThreadPoolExecutor(max_workers=len(plans)) as pool:
        futures = {name: pool.submit(synced, plan) for name, plan in plans.items()}
    errors = [future.exception() for future in futures.values() if future.exception()]
    stores = {name: future.result() for name, future in futures.items() if not future.exception()}
    try:
        if errors:
            raise errors[0]  # type: ignore[misc]
        yield stores
    finally:
        for store in stores.values():
            store.close()
