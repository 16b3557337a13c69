"""What change detection costs on the example knowledge base.

Rasa calls ``connect()`` before every search. A repeat call only compares the configuration and,
at most every ``refresh_seconds``, starts a background check that hashes every document's bytes
(the index fingerprint). This script times a repeat ``connect()``, one whose check is due, the
content fingerprint itself, and the names/sizes/mtimes listing it replaced, on docs/.

Run: ``python bench/refresh_cost.py`` (prints a Markdown table).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script from anywhere

from bench.load import real_embedder, vector_store_block  # noqa: E402

REPEATS = 200


def timed_ms(action: Callable[[], object], repeats: int = REPEATS) -> tuple[float, float]:
    """Median and max wall time of ``action`` in milliseconds."""
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples), max(samples)


def stat_listing(docs: Path) -> list[tuple[str, int, int]]:
    from rasa_context_retrieval.knowledge.loader import knowledge_files

    return [
        (path.name, stat.st_size, stat.st_mtime_ns)
        for path in knowledge_files(docs)
        for stat in [path.stat()]
    ]


def main() -> None:
    from rasa.utils.endpoints import EndpointConfig

    from rasa_context_retrieval.knowledge.loader import knowledge_files
    from rasa_context_retrieval.store import ContextRetrieval

    with tempfile.TemporaryDirectory() as scratch:
        block = vector_store_block(Path(scratch) / "index")
        docs = Path(block["docs"])
        embedder = real_embedder()
        store = ContextRetrieval(embeddings=embedder)
        config = EndpointConfig(**block)
        store.connect(config)
        repeat = timed_ms(lambda: store.connect(config))
        due_config = EndpointConfig(**{**block, "refresh_seconds": 1e-9})  # every call is due
        store.connect(due_config)
        engine = store.engine.live

        def due_connect() -> None:
            store.connect(due_config)
            engine._refreshing.acquire()  # wait for the background check to finish
            engine._refreshing.release()

        due = timed_ms(lambda: store.connect(due_config))
        due_with_check = timed_ms(due_connect, repeats=50)
        fingerprint = timed_ms(lambda: engine._settings.fingerprint(embedder), repeats=50)
        listing = timed_ms(lambda: stat_listing(docs), repeats=50)
    files = knowledge_files(docs)
    size_kb = sum(path.stat().st_size for path in files) / 1024
    print(f"docs/: {len(files)} files, {size_kb:.0f} KB\n")
    print("| step | median ms | max ms |\n|---|---:|---:|")
    for name, (median, worst) in (
        ("repeat connect(), no check due", repeat),
        ("connect() with a check due (returns at once)", due),
        ("connect() + background check, until done", due_with_check),
        ("content fingerprint (sha256 of every file)", fingerprint),
        ("names/sizes/mtimes listing (replaced)", listing),
    ):
        print(f"| {name} | {median:.3f} | {worst:.3f} |")


if __name__ == "__main__":
    main()
