"""Memory and start-up time of one assistant replica: Milvus (``ingest: console_only``) vs FAISS.

Setup, once per ``--chunks`` size: synthetic chunks (``bench/milvus_vs_faiss.py``'s generator:
384-d unit vectors, plan / regions / category / price / updated metadata) are written as the
plugin's own index folder (``KnowledgeIndex``, HNSW from ``exact_search_below`` as configured by
default) and synced into a Milvus collection (``MilvusChunkStore.sync``).

Measured in fresh processes, alternating FAISS and Milvus for ``--rounds`` rounds:

* start-up: seconds from opening the replica to the first answered search: FAISS reads the
  published folder (``KnowledgeIndex.read``, memory-mapped) and serves it; Milvus opens the live
  index of a replica whose ``docs`` does not exist (``LiveIndex.open``). Python imports are not
  counted (the same for both); neither is hashing the documents, which a FAISS replica also does
  at start to find out whether its index is current (so FAISS's start-up is a lower bound);
* RSS after the searches (``--searches`` unfiltered, slot-like and list filters, k=10), and after
  the filter vocabulary is read (Milvus reads it in the background, a scan of the collection;
  its time is reported too), next to the RSS after imports (the same floor for both).

The embedding model is not loaded (queries are precomputed vectors): it adds the same memory and
load time to both replicas.

Usage: ``python bench/replica_footprint.py --chunks 100000 --chunks 1000000`` (starts a loopback
Milvus in a temp dir), or ``--uri http://host:19530``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import structlog

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO_ROOT), str(REPO_ROOT / "bench")]

from milvus_vs_faiss import milvus_server, synthetic_knowledge_base  # noqa: E402

from rasa_context_retrieval.faiss.index import IndexDirectory, KnowledgeIndex  # noqa: E402
from rasa_context_retrieval.milvus.config import MilvusConfig  # noqa: E402
from rasa_context_retrieval.milvus.store import MilvusChunkStore  # noqa: E402

FIELDS = [
    {"name": "plan", "type": "string", "values": ["basic", "premium", "business"]},
    {"name": "regions", "type": "list[string]"},
    {"name": "category", "type": "string"},
    {"name": "price", "type": "float"},
    {"name": "updated", "type": "date"},
]
FILTERS = [None, 'eq("plan", "premium")', 'in("regions", ["uk", "apac"])']

REPLICA = r"""
import json, sys, time
sys.path.insert(0, {root!r})
import numpy as np
from rasa_context_retrieval.config import StoreConfig
from rasa_context_retrieval.filters.syntax import parse_filter
from rasa_context_retrieval.faiss.index import IndexDirectory, KnowledgeIndex
from rasa_context_retrieval.engine.live_index import LiveIndex
from rasa_context_retrieval.milvus.backend import MilvusBackend
from rasa_context_retrieval.faiss.backend import FaissBackend
from rasa_context_retrieval.retrieve.request import RetrievalRequest

def status_mb(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0

job = json.loads(sys.argv[1])
config = StoreConfig.from_kwargs(job["config"])
queries = np.load(job["queries"])
filters = [None if f is None else parse_filter(f) for f in job["filters"]]
floor = status_mb("VmRSS")
started = time.perf_counter()
if job["backend"] == "faiss":
    index = KnowledgeIndex.read(IndexDirectory(config.index_path).current())
    live = LiveIndex(config, None, FaissBackend(index, config.exact_search_below), index.knowledge)
else:
    live = LiveIndex.open(config, None, progress=False)

def request(i):
    return RetrievalRequest(texts=["q"], vectors=[queries[i % len(queries)]],
                            filter=filters[i % len(filters)], top_k=10, threshold=0.0,
                            candidates=10, hybrid=False)

first = live.backend.rank(request(0))
startup = time.perf_counter() - started
for i in range(1, job["searches"]):
    live.backend.rank(request(i))
searched = status_mb("VmRSS")
values = live.known_values()
values_s = time.perf_counter() - started
print(json.dumps({"startup_s": startup, "floor_mb": floor, "searched_mb": searched,
                  "with_values_mb": status_mb("VmRSS"), "peak_mb": status_mb("VmHWM"),
                  "values_ready_s": values_s, "first_hits": len(first),
                  "distinct_values": sum(len(v) for v in values.values())}))
"""


def prepare(
    chunks_count: int, uri: str, folder: Path, below: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Write the FAISS index folder and fill a Milvus collection; the two replicas' configs."""
    rng = np.random.default_rng(7)
    chunks, vectors = synthetic_knowledge_base(chunks_count, rng)
    started = time.perf_counter()
    fingerprint = hashlib.sha256(f"replica-{chunks_count}".encode()).hexdigest()
    index = KnowledgeIndex.build(fingerprint, "synthetic", chunks, vectors, [], below)
    IndexDirectory(folder / "faiss").publish(index)
    seconds = time.perf_counter() - started
    print(f"FAISS index of {chunks_count} built and written in {seconds:.1f}s", flush=True)
    del index
    collection = f"replica_{uuid.uuid4().hex[:8]}"
    store = MilvusChunkStore.connect(MilvusConfig(uri=uri, collection=collection))
    by_text = {chunk.text: vectors[row] for row, chunk in enumerate(chunks)}
    started = time.perf_counter()
    store.sync(chunks, lambda texts: np.vstack([by_text[text] for text in texts]))
    seconds = time.perf_counter() - started
    print(f"Milvus collection of {chunks_count} synced in {seconds:.1f}s", flush=True)
    store.close()
    (folder / "docs").mkdir()
    common = {"metadata_fields": FIELDS, "refresh_seconds": 0, "exact_search_below": below}
    faiss_config = {**common, "docs": str(folder / "docs"), "index_path": str(folder / "faiss")}
    milvus_config = {
        **common,
        "docs": str(folder / "no-such-folder"),
        "index_path": str(folder / "milvus"),
        "backend": "milvus",
        "milvus": {"uri": uri, "collection": collection, "ingest": "console_only"},
    }
    return faiss_config, milvus_config


def run_replica(backend: str, config: dict[str, Any], queries: Path, searches: int) -> dict:
    job = {
        "backend": backend,
        "config": config,
        "queries": str(queries),
        "filters": FILTERS,
        "searches": searches,
    }
    program = REPLICA.replace("{root!r}", repr(str(REPO_ROOT)))
    done = subprocess.run(
        [sys.executable, "-c", program, json.dumps(job)],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {backend} replica failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, action="append")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--searches", type=int, default=30)
    parser.add_argument("--uri", default=None, help="a running Milvus; default: start one")
    parser.add_argument(
        "--exact-search-below",
        type=int,
        default=200_000,
        help="as the plugin's key: larger sizes get an HNSW graph (more memory, a long build)",
    )
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    sizes = args.chunks or [100_000]
    print(f"{platform.platform()}, {dt.date.today().isoformat()}\n")
    with milvus_server(args.uri) as uri, tempfile.TemporaryDirectory() as scratch:
        for size in sizes:
            folder = Path(scratch) / str(size)
            folder.mkdir()
            faiss_config, milvus_config = prepare(size, uri, folder, args.exact_search_below)
            queries = folder / "queries.npy"
            rng = np.random.default_rng(11)
            vectors = rng.normal(size=(args.searches, 384)).astype(np.float32)
            np.save(queries, vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
            runs: dict[str, list[dict]] = {"faiss": [], "milvus": []}
            for _ in range(args.rounds):
                for backend, config in (("faiss", faiss_config), ("milvus", milvus_config)):
                    runs[backend].append(run_replica(backend, config, queries, args.searches))
            report(size, runs)  # as soon as a size is done: the next may take long


def report(size: int, runs: dict[str, list[dict]]) -> None:
    print(
        "| chunks | replica | start-up to first answer s | RSS after imports MB | "
        "RSS after searches MB | RSS with vocabulary MB | peak MB | vocabulary ready s |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for backend, samples in runs.items():

        def median(key: str, samples: list[dict] = samples) -> float:
            return statistics.median(sample[key] for sample in samples)

        print(
            f"| {size:,} | {backend} | {median('startup_s'):.2f} | {median('floor_mb'):.0f} "
            f"| {median('searched_mb'):.0f} | {median('with_values_mb'):.0f} "
            f"| {median('peak_mb'):.0f} | {median('values_ready_s'):.2f} |"
        )
    milvus, faiss = (
        statistics.median(sample["with_values_mb"] for sample in runs[backend])
        for backend in ("milvus", "faiss")
    )
    print(f"\n{size:,} chunks: Milvus replica RSS / FAISS replica RSS = {milvus / faiss:.2f}\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
