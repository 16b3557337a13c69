"""Milvus with JSON-field metadata, Milvus with typed fields and FAISS exact search, side by side.

Synthetic knowledge base: ``--chunks`` chunks with 384-d unit vectors (all-MiniLM-L6-v2's size)
and front-matter-like metadata (plan, regions list, category, price as text, updated date). The
"embedder" returns the precomputed vectors, so ingest numbers measure the store, not a model.

Up to three collections of the same chunks (``--layouts``), all FLAT/COSINE (exact), flushed and
indexed by the store before they are published: ``json``, no declared attributes (every
attribute in the ``filterable`` JSON field, the previous release's layout); ``typed``, the five
attributes declared in ``metadata_fields`` with the regions' vocabulary (typed scalar fields and
member flags, ``milvus.layout``); ``typed-array``, the same without the regions' vocabulary (the
list only in its ARRAY field, which Milvus 2.3 cannot index).

Measured, one run, printed as Markdown tables:
* ingest: ``MilvusChunkStore.sync`` of every chunk into each collection, then a second sync;
* filtered search, k=10, p50/p95 over ``--queries`` queries per filter, the searches of each
  query interleaved, their order rotating from query to query: each Milvus collection, and FAISS
  ``IndexFlatIP`` restricted by an ``IDSelectorBitmap`` built from the FAISS translator's mask
  (mask time included, as the FAISS backend pays it); ratios; top-10 agreement;
* the filter alone: a ``count(*)`` query with the same expression on each collection (no
  vector scan), to tell filter evaluation from the FLAT scan.

Usage: ``python bench/milvus_vs_faiss.py --chunks 100000`` (starts a loopback server in a temp
dir and stops it), or ``--uri http://host:19530`` for a running server; at 1M chunks
``--layouts typed`` leaves out the slower-to-fill JSON collection.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import platform
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar

import faiss
import numpy as np
import structlog
from langchain_core.structured_query import FilterDirective

from rasa_context_retrieval.filters.columns import MetadataColumns
from rasa_context_retrieval.filters.faiss_translator import FaissTranslator
from rasa_context_retrieval.filters.schema import MetadataField
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
    "category + region (~2%)": 'and(eq("category", "category-07"), eq("regions", "africa"))',
    "category + date (~2%)": 'and(eq("category", "category-07"), gte("updated", "2024-01-01"))',
    "price range + not (~8%)": 'and(lt("price", 20), not(eq("plan", "basic")))',
    "access shape (2/3)": 'not(nin("plan", ["premium", "business"]))',
}
DECLARED = [
    MetadataField(name="plan", type="string"),
    MetadataField(name="regions", type="list[string]", values=REGIONS),
    MetadataField(name="category", type="string"),
    MetadataField(name="price", type="float"),
    MetadataField(name="updated", type="date"),
]
LAYOUTS = {
    "json": (),
    "typed-array": [
        field.model_copy(update={"values": None}) if field.name == "regions" else field
        for field in DECLARED
    ],
    "typed": DECLARED,
}
"""Collection layouts by name: what each declares in ``metadata_fields``."""
COUNT_REPEATS = 30


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
    parser.add_argument(
        "--layouts",
        default="json,typed-array,typed",
        help=f"comma-separated, of {', '.join(LAYOUTS)}; ratios are to the first one",
    )
    args = parser.parse_args()
    layouts = [name.strip() for name in args.layouts.split(",")]
    if not layouts or not set(layouts) <= set(LAYOUTS):
        parser.error(f"--layouts: choose from {', '.join(LAYOUTS)}")
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    rng = np.random.default_rng(7)
    chunks, vectors = synthetic_knowledge_base(args.chunks, rng)
    row_of = {chunk.text: i for i, chunk in enumerate(chunks)}
    queries = rng.normal(size=(args.queries, DIMENSION)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)

    def embed(texts: list[str]) -> np.ndarray:
        return vectors[[row_of[text] for text in texts]]

    print(f"# Milvus ({', '.join(layouts)}) vs FAISS, {args.chunks:,} chunks, {DIMENSION}-d")
    print(
        f"{platform.platform()}, {platform.processor() or platform.machine()}, "
        f"faiss {faiss.__version__}, {dt.date.today().isoformat()}, k={K}\n"
    )
    started = time.perf_counter()
    index = _faiss_index(vectors)
    faiss_build_s = time.perf_counter() - started
    translator = FaissTranslator(MetadataColumns([chunk.metadata for chunk in chunks]))

    print(_load_average("at the start"))
    with milvus_server(args.uri) as uri:
        stores = {
            name: MilvusChunkStore.connect(_config(uri, name), LAYOUTS[name]) for name in layouts
        }
        print("| ingest | seconds | chunks/s |\n|---|---:|---:|")
        for name, store in stores.items():
            first_s, _ = timed(partial(store.sync, chunks, embed))
            second_s, second = timed(partial(store.sync, chunks, embed))
            print(
                f"| Milvus {name}: first sync (upsert all, flush, index) | {first_s:.1f} | "
                f"{args.chunks / first_s:,.0f} |"
            )
            print(
                f"| Milvus {name}: second sync (unchanged; embedded {second.embedded}) | "
                f"{second_s:.1f} | {args.chunks / second_s:,.0f} |"
            )
        rate = args.chunks / faiss_build_s
        print(f"| FAISS IndexFlatIP add | {faiss_build_s:.2f} | {rate:,.0f} |\n")
        print(_load_average("after ingest"))
        _search_table(stores, index, translator, chunks, queries, args.chunks)
        print(_load_average("after the searches"))
        _filter_alone_table(stores, args.chunks)
        print(_load_average("at the end"))
        for store in stores.values():
            store.close()


def _config(uri: str, kind: str) -> MilvusConfig:
    return MilvusConfig(
        uri=uri, collection=f"bench_{kind.replace('-', '_')}_{uuid.uuid4().hex[:8]}"
    )


def _search_table(
    stores: dict[str, MilvusChunkStore],
    index: faiss.IndexFlatIP,
    translator: FaissTranslator,
    chunks: list[Chunk],
    queries: np.ndarray,
    total: int,
) -> None:
    names = list(stores)
    first, others = names[0], names[1:]
    print(
        "| filter | matching | "
        + " | ".join(f"{name} p50 ms" for name in names)
        + " | FAISS p50 ms | "
        + "".join(f"{first} / {name} | " for name in others)
        + f"{names[-1]} / FAISS | "
        + " | ".join(f"{name} p95" for name in names)
        + " | FAISS p95 | "
        + "".join(f"top-10 {name} = {first} | " for name in others)
        + f"top-10 {names[-1]} = FAISS |"
    )
    columns = 2 + 2 * len(names) + 2 + 2 * len(others) + 2
    print("|---|" + "---:|" * (columns - 1))
    for name, text in FILTERS.items():
        directive = None if text is None else parse_filter(text)
        matching = total if directive is None else int(directive.accept(translator).sum())
        times: dict[str, list[float]] = {kind: [] for kind in [*names, "FAISS"]}
        same_as_first: dict[str, list[bool]] = {kind: [] for kind in others}
        same_as_faiss: list[bool] = []
        for number, query in enumerate(queries):
            searches: list[tuple[str, Callable[[], list[Any]]]] = [
                (kind, partial(store.search, query, directive, K)) for kind, store in stores.items()
            ]
            searches.append(("FAISS", partial(faiss_search, index, translator, query, directive)))
            shift = number % len(searches)  # each goes first, second, ... equally often
            found: dict[str, list[Any]] = {}
            for kind, search in searches[shift:] + searches[:shift]:
                seconds, found[kind] = timed(search)
                times[kind].append(seconds)
            ids = {kind: [hit.chunk.chunk_id for hit in found[kind]] for kind in names}
            for kind in others:
                same_as_first[kind].append(ids[kind] == ids[first])
            same_as_faiss.append(
                set(ids[names[-1]]) == {chunks[r].chunk_id for r in found["FAISS"]}
            )
        p50 = {kind: percentiles(samples)[0] for kind, samples in times.items()}
        p95 = {kind: percentiles(samples)[1] for kind, samples in times.items()}
        print(
            f"| {name} | {matching:,} | "
            + " | ".join(f"{p50[kind]:.1f}" for kind in names)
            + f" | {p50['FAISS']:.1f} | "
            + "".join(f"{p50[first] / p50[kind]:.2f}x | " for kind in others)
            + f"{p50[names[-1]] / p50['FAISS']:.2f}x | "
            + " | ".join(f"{p95[kind]:.1f}" for kind in names)
            + f" | {p95['FAISS']:.1f} | "
            + "".join(f"{np.mean(same_as_first[kind]):.3f} | " for kind in others)
            + f"{np.mean(same_as_faiss):.3f} |"
        )
    print(
        f"\ntop-10 X = {first}: share of queries whose ten ids come back in the same order from "
        f"both collections; {names[-1]} = FAISS: the same ten ids (as a set).\n"
    )


def _filter_alone_table(stores: dict[str, MilvusChunkStore], total: int) -> None:
    """The filter evaluated without a vector scan: ``count(*)`` with the same expression."""
    names = list(stores)
    print(
        "| filter (count(*) query, no vector scan) | "
        + " | ".join(f"{name} p50 ms" for name in names)
        + " |"
        + "".join(f" {names[0]} / {name} |" for name in names[1:])
    )
    print("|---|" + "---:|" * (2 * len(names) - 1))
    for name, text in FILTERS.items():
        if text is None:
            continue
        directive = parse_filter(text)
        medians = []
        for store in stores.values():
            version = store.served()
            assert version is not None
            expression = directive.accept(version.translator)
            samples = []
            for _ in range(COUNT_REPEATS):
                started = time.perf_counter()
                store._client.query(version.name, filter=expression, output_fields=["count(*)"])  # noqa: SLF001
                samples.append(time.perf_counter() - started)
            medians.append(float(np.median(samples)) * 1000)
        print(
            f"| {name} | "
            + " | ".join(f"{median:.1f}" for median in medians)
            + " |"
            + "".join(f" {medians[0] / median:.2f}x |" for median in medians[1:])
        )


def _load_average(when: str) -> str:
    one, five, fifteen = os.getloadavg()
    return f"\nLoad average {when}: {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} CPUs)\n"


def _faiss_index(vectors: np.ndarray) -> faiss.IndexFlatIP:
    index = faiss.IndexFlatIP(DIMENSION)
    index.add(vectors)
    return index


if __name__ == "__main__":
    main()
