"""Milvus (packaged standalone server, FLAT/COSINE) vs plain FAISS exact search on the same data.

Synthetic knowledge base: ``--chunks`` chunks with 384-d unit vectors (all-MiniLM-L6-v2's size)
and front-matter-like metadata (plan, regions list, category, price as text, updated date). The
"embedder" returns the precomputed vectors, so ingest numbers measure the store, not a model.

Measured, one run, printed as Markdown tables:
* ingest: ``MilvusChunkStore.sync`` of every chunk, then a second sync (nothing to embed);
* filtered search, k=10, p50/p95 over ``--queries`` queries per filter: Milvus with the filter as
  a server-side expression vs FAISS ``IndexFlatIP`` restricted by an ``IDSelectorBitmap`` built
  from the FAISS translator's mask (mask time included, as the FAISS backend pays it);
* agreement: share of Milvus' top-10 ids that FAISS also returns.

Usage: ``python bench/milvus_vs_faiss.py --chunks 100000`` (starts a loopback server in a temp
dir and stops it), or ``--uri http://host:19530`` for a running server.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import platform
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import faiss
import numpy as np
import structlog
from langchain_core.structured_query import FilterDirective

from rasa_context_retrieval.filters.columns import MetadataColumns
from rasa_context_retrieval.filters.faiss_translator import FaissTranslator
from rasa_context_retrieval.filters.syntax import parse_filter
from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.milvus.config import MilvusConfig
from rasa_context_retrieval.milvus.store import MilvusChunkStore

T = TypeVar("T")
DIMENSION = 384
K = 10
CHUNKS_PER_DOCUMENT = 8
PLANS = ("basic", "premium", "business")
REGIONS = ("eu", "us", "uk", "apac", "latam", "africa")
CATEGORIES = tuple(f"category-{i:02d}" for i in range(20))
FILTERS = {
    "none": None,
    "plan (1/3)": 'eq("plan", "Premium")',
    "region list (~1/3)": 'in("regions", ["uk", "apac"])',
    "category + date (~2%)": 'and(eq("category", "category-07"), gte("updated", "2024-01-01"))',
    "price range + not (~8%)": 'and(lt("price", 20), not(eq("plan", "basic")))',
}


def synthetic_knowledge_base(n: int, rng: np.random.Generator) -> tuple[list[Chunk], np.ndarray]:
    vectors = rng.normal(size=(n, DIMENSION)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    start = dt.date(2022, 1, 1)
    chunks = []
    for i in range(n):
        regions = rng.choice(REGIONS, size=int(rng.integers(1, 4)), replace=False)
        metadata = {
            "source": f"docs/article-{i // CHUNKS_PER_DOCUMENT:06d}.md",
            "plan": PLANS[int(rng.integers(len(PLANS)))].capitalize(),
            "regions": sorted(str(region) for region in regions),
            "category": CATEGORIES[int(rng.integers(len(CATEGORIES)))],
            "price": f"{rng.uniform(1, 100):.2f}",
            "updated": (start + dt.timedelta(days=int(rng.integers(0, 1100)))).isoformat(),
        }
        chunks.append(Chunk(f"chunk-{i:07d}", f"Synthetic chunk {i}.", metadata))
    return chunks, vectors


@contextmanager
def milvus_server(uri: str | None) -> Iterator[str]:
    if uri:
        yield uri
        return
    from milvus import MilvusServer  # type: ignore[import-untyped]

    with tempfile.TemporaryDirectory(prefix="milvus-bench-") as base_dir:
        server = MilvusServer()
        server.set_base_dir(base_dir)
        server.listen_port = 0
        server.start()
        try:
            yield f"http://127.0.0.1:{server.listen_port}"
        finally:
            server.stop()


def percentiles(samples_s: list[float]) -> tuple[float, float]:
    p50, p95 = np.percentile(np.array(samples_s) * 1000, [50, 95])
    return float(p50), float(p95)


def timed(call: Callable[[], T]) -> tuple[float, T]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def faiss_search(
    index: faiss.IndexFlatIP,
    translator: FaissTranslator,
    query: np.ndarray,
    directive: FilterDirective | None,
) -> list[int]:
    params = None
    if directive is not None:
        mask = directive.accept(translator)
        # faiss' generated stubs do not know the Python-level keyword wrappers used here.
        bitmap = faiss.IDSelectorBitmap(np.packbits(mask, bitorder="little"))  # type: ignore[call-arg,arg-type]
        params = faiss.SearchParameters(sel=bitmap)  # type: ignore[call-arg]
    _, ids = index.search(query.reshape(1, -1), K, params=params)
    return [int(i) for i in ids[0] if i >= 0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--uri", default=None, help="a running Milvus; default: start one")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    rng = np.random.default_rng(7)
    chunks, vectors = synthetic_knowledge_base(args.chunks, rng)
    row_of = {chunk.text: i for i, chunk in enumerate(chunks)}
    queries = rng.normal(size=(args.queries, DIMENSION)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)

    def embed(texts: list[str]) -> np.ndarray:
        return vectors[[row_of[text] for text in texts]]

    print(f"# Milvus vs FAISS, {args.chunks:,} chunks, {DIMENSION}-d, k={K}")
    print(
        f"{platform.platform()}, {platform.processor() or platform.machine()}, "
        f"faiss {faiss.__version__}, {dt.date.today().isoformat()}\n"
    )

    started = time.perf_counter()
    index = _faiss_index(vectors)
    faiss_build_s = time.perf_counter() - started
    translator = FaissTranslator(MetadataColumns([chunk.metadata for chunk in chunks]))

    with milvus_server(args.uri) as uri:
        store = MilvusChunkStore.connect(
            MilvusConfig(uri=uri, collection=f"bench_{uuid.uuid4().hex[:8]}")
        )
        first_s, first = timed(lambda: store.sync(chunks, embed))
        second_s, second = timed(lambda: store.sync(chunks, embed))
        values_s, _ = timed(lambda: store.values_of("category"))
        print("| ingest | seconds | chunks/s |\n|---|---:|---:|")
        print(f"| Milvus first sync (upsert all) | {first_s:.1f} | {args.chunks / first_s:,.0f} |")
        print(
            f"| Milvus second sync (unchanged; embedded {second.embedded}) | "
            f"{second_s:.1f} | {args.chunks / second_s:,.0f} |"
        )
        print(
            f"| FAISS IndexFlatIP add | {faiss_build_s:.2f} | {args.chunks / faiss_build_s:,.0f} |"
        )
        print(
            f"\nMilvus `values_of` (one metadata scan, then cached): {values_s:.1f} s; "
            f"first sync embedded {first.embedded}.\n"
        )

        print(
            "| filter | matching | Milvus p50 ms | Milvus p95 ms | FAISS p50 ms | FAISS p95 ms "
            "| top-10 agreement |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, text in FILTERS.items():
            directive = None if text is None else parse_filter(text)
            matching = args.chunks if directive is None else int(directive.accept(translator).sum())
            milvus_times, faiss_times, agreement = [], [], []
            for query in queries:
                started = time.perf_counter()
                hits = store.search(query, directive, K)
                milvus_times.append(time.perf_counter() - started)
                started = time.perf_counter()
                rows = faiss_search(index, translator, query, directive)
                faiss_times.append(time.perf_counter() - started)
                milvus_ids = {hit.chunk.chunk_id for hit in hits}
                faiss_ids = {chunks[row].chunk_id for row in rows}
                agreement.append(len(milvus_ids & faiss_ids) / max(1, len(faiss_ids)))
            m50, m95 = percentiles(milvus_times)
            f50, f95 = percentiles(faiss_times)
            print(
                f"| {name} | {matching:,} | {m50:.1f} | {m95:.1f} | {f50:.1f} | {f95:.1f} | "
                f"{np.mean(agreement):.3f} |"
            )
        store.close()


def _faiss_index(vectors: np.ndarray) -> faiss.IndexFlatIP:
    index = faiss.IndexFlatIP(DIMENSION)
    index.add(vectors)
    return index


if __name__ == "__main__":
    main()
