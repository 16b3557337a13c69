"""The long access-control fuzz: thousands of hostile searches on FAISS and on a real Milvus server.

The cases and the independent oracle are those of the test suite (``tests/access_fuzz.py``):
random knowledge bases whose access attributes hold hostile values, conversations with hostile
channel metadata, forged session-metadata slots, slot values and filters a hostile LLM might
return. Counts cases, results, crashes (any exception from a search) and leaks (a result the
oracle does not admit, or one outside the slot scope).

FAISS: every example is a new knowledge base with ``--per-knowledge-base`` conversations.
Milvus: ``--milvus-knowledge-bases`` knowledge bases are synced once each (collections are
reused), then conversations are drawn against them; the access attributes are declared, so they
are held in typed fields (hostile values that do not fit in the overflow JSON field), ``plan``
with member flags for its declared values.

LLM over HTTP: ``--llm-cases`` conversations go through the real LLM self-query path (Rasa's LLM
client, LangChain's parser, our validation) against a local OpenAI-compatible server that answers
each with the case's hostile filter in the self-query syntax (or, when the filter has no spelling
there, with its raw repr).

Entitled REST channel: ``--channel-requests`` requests in random conversations sent through
``EntitledRestInput`` (valid, forged, expired, audience-less and absent tokens, downgrades, body
senders that collide with other users' conversations) into conversations kept the way Rasa's
processor keeps them, each searched on FAISS; a leak is also a result the request's own token does
not grant, or a message that lands in a conversation other than its token's.

Unattributed documents private: the FAISS run again with ``unattributed_documents: private``.
Files: knowledge bases written to disk in every front-matter shape people write (well-formed,
after blank lines or a byte order mark, unclosed, ``...``, ``--- # comment``, TOML, after an
HTML comment, duplicate and misspelled keys, JSON lines with the attribute outside ``metadata``),
read by the real loader; a result is held to what its file's author meant, and a file that
cannot be read exactly must be refused (listed) and never served.

Usage: ``python bench/access_fuzz.py --faiss-cases 10000 --private-cases 10000 --file-cases
10000 --milvus-cases 1000 --llm-cases 1000 --channel-requests 5000``
(``--milvus-uri`` for a running server; otherwise a loopback server is started and stopped).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import logging
import os
import platform
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import structlog  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.errors import NonInteractiveExampleWarning  # noqa: E402
from langchain_core.structured_query import FilterDirective  # noqa: E402

from bench.milvus_vs_faiss import milvus_server  # noqa: E402
from rasa_context_retrieval.engine.live_index import LiveIndex  # noqa: E402
from rasa_context_retrieval.engine.search import KnowledgeSearch  # noqa: E402
from rasa_context_retrieval.filters.syntax import to_filter_syntax  # noqa: E402
from rasa_context_retrieval.milvus.backend import MilvusBackend  # noqa: E402
from rasa_context_retrieval.planning.llm_planner import build_llm_planner  # noqa: E402
from tests.access_fuzz import (  # noqa: E402
    PLAN_ONLY,
    Case,
    FileKnowledgeBase,
    HostileLLM,
    KnowledgeBase,
    SyntheticEmbedder,
    Tally,
    build_index,
    cases,
    channel_conversations,
    check_case,
    check_channel_conversation,
    check_file_case,
    engine_for,
    entitled_cases,
    file_engine,
    file_knowledge_bases,
    fuzz_channel,
    knowledge_bases,
    plan_knowledge_bases,
    store_config,
)
from tests.fake_openai import FAKE_API_KEY, FakeOpenAI  # noqa: E402

FIELDS = [
    {"name": "plan", "type": "list[string]", "values": ["free", "plus", "premium", "true"]},
    {"name": "region", "type": "list[string]"},
    {"name": "tier", "type": "string"},
]
"""``plan`` has a declared vocabulary (member flags, ``milvus/layout.py``) that the hostile values
mostly fall outside of; ``region`` has none (its list field alone)."""


class ServedFilters:
    """Scripts the local OpenAI-compatible server to answer with the case's filter."""

    def __init__(self, server: FakeOpenAI) -> None:
        self.server = server

    def script(self, directive: FilterDirective | None) -> None:
        try:
            text = to_filter_syntax(directive) or "NO_FILTER"
        except ValueError:
            text = repr(directive)
        body = json.dumps({"query": "storage", "filter": text})
        self.server.reply(f"```json\n{body}\n```")


def fuzz_knowledge_bases(
    total: int,
    per_knowledge_base: int,
    searcher: Callable[[KnowledgeBase], tuple[Any, Any]],
    knowledge_base_strategy: st.SearchStrategy[KnowledgeBase] | None = None,
    case_strategy: st.SearchStrategy[Case] | None = None,
) -> Tally:
    """``total`` cases, ``per_knowledge_base`` conversations on each random knowledge base;
    ``searcher`` gives the engine for a knowledge base and what scripts its LLM's filters."""
    loop = asyncio.new_event_loop()
    tally = Tally()

    if knowledge_base_strategy is None:
        knowledge_base_strategy = knowledge_bases()
    if case_strategy is None:
        case_strategy = cases()

    @settings(
        max_examples=max(1, total // per_knowledge_base),
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(
        knowledge_base_strategy,
        st.lists(case_strategy, min_size=per_knowledge_base, max_size=per_knowledge_base),
    )
    def search_all(knowledge_base, conversations):  # type: ignore[no-untyped-def]
        engine, llm = searcher(knowledge_base)
        for case in conversations:
            loop.run_until_complete(check_case(engine, llm, case, tally))

    try:
        search_all()
    finally:
        loop.close()
    return tally


def run_faiss(total: int, per_knowledge_base: int, docs: Path) -> Tally:
    config = store_config(docs)

    def searcher(knowledge_base: KnowledgeBase) -> tuple[Any, Any]:
        llm = HostileLLM()
        return engine_for(config, build_index(knowledge_base), llm), llm

    return fuzz_knowledge_bases(total, per_knowledge_base, searcher)


def run_faiss_private(total: int, per_knowledge_base: int, docs: Path) -> Tally:
    """The FAISS run with ``unattributed_documents: private``."""
    config = store_config(docs, access_filters=PLAN_ONLY, unattributed_documents="private")

    def searcher(knowledge_base: KnowledgeBase) -> tuple[Any, Any]:
        llm = HostileLLM()
        return engine_for(config, build_index(knowledge_base), llm), llm

    return fuzz_knowledge_bases(
        total, per_knowledge_base, searcher, plan_knowledge_bases(), entitled_cases()
    )


def run_faiss_files(total: int, per_knowledge_base: int) -> Tally:
    """Knowledge bases written as files in every front-matter shape, read by the real loader
    and builder, unattributed documents public or private; results held to what each file's
    author meant (``tests/access_fuzz.py``, ``file_knowledge_bases``)."""
    loop = asyncio.new_event_loop()
    tally = Tally()

    @settings(
        max_examples=max(1, total // per_knowledge_base),
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(
        file_knowledge_bases(),
        st.lists(entitled_cases(), min_size=per_knowledge_base, max_size=per_knowledge_base),
    )
    def search_all(knowledge_base: FileKnowledgeBase, conversations):  # type: ignore[no-untyped-def]
        llm = HostileLLM()
        with tempfile.TemporaryDirectory() as folder:
            engine = file_engine(knowledge_base, Path(folder), llm)
        refused = {file.name for file in knowledge_base.files if file.intended is None}
        listed = {problem.file for problem in engine.live.problems}
        if listed != refused:
            tally.leaks.append(f"refused {sorted(listed)}, expected {sorted(refused)}")
        for case in conversations:
            loop.run_until_complete(check_file_case(engine, llm, case, tally, knowledge_base))

    try:
        search_all()
    finally:
        loop.close()
    return tally


def run_milvus(total: int, knowledge_bases_count: int, uri: str, docs: Path) -> Tally:
    loop = asyncio.new_event_loop()
    tally = Tally()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonInteractiveExampleWarning)
        pool = [knowledge_bases().example() for _ in range(knowledge_bases_count)]
    engines = []
    for knowledge_base in pool:
        block = {"uri": uri, "collection": f"fuzz_{uuid.uuid4().hex[:10]}"}
        # Declared: the access attributes live in typed fields (and hostile values that do not
        # fit their type in the overflow JSON), the layout a configured assistant gets.
        config = store_config(docs, backend="milvus", milvus=block, metadata_fields=FIELDS)
        index = build_index(knowledge_base)
        llm = HostileLLM()
        engine = engine_for(config, index, llm, writes=True)
        backend = engine.live.backend
        assert isinstance(backend, MilvusBackend)
        engines.append((engine, llm, backend))

    @settings(
        max_examples=total,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(st.integers(0, len(engines) - 1), cases())
    def search_one(which, case):  # type: ignore[no-untyped-def]
        engine, llm, _ = engines[which]
        loop.run_until_complete(check_case(engine, llm, case, tally))

    search_one()
    for _, _, backend in engines:
        client = backend.store._client  # noqa: SLF001
        for name in client.list_collections():  # its versions, pointer and lease
            if name.startswith(backend.store.collection):
                client.drop_collection(name)
        backend.close()
    loop.close()
    return tally


def run_llm(total: int, per_knowledge_base: int, docs: Path) -> Tally:
    os.environ["OPENAI_API_KEY"] = FAKE_API_KEY
    server = FakeOpenAI()
    server.start()
    config = store_config(docs, llm=server.llm_config(timeout=5), metadata_fields=FIELDS)
    planner = build_llm_planner(config)
    served = ServedFilters(server)

    def searcher(knowledge_base: KnowledgeBase) -> tuple[Any, Any]:
        index = build_index(knowledge_base)
        live = LiveIndex.serving(config, SyntheticEmbedder(), index.knowledge)
        return KnowledgeSearch(config, SyntheticEmbedder(), live, planner), served

    try:
        return fuzz_knowledge_bases(total, per_knowledge_base, searcher)
    finally:
        server.stop()


def run_channel(total: int, per_knowledge_base: int, docs: Path) -> Tally:
    """About ``total`` channel requests, ``per_knowledge_base`` conversations per knowledge base."""
    config = store_config(docs)
    channel = fuzz_channel()
    loop = asyncio.new_event_loop()
    tally = Tally()

    @settings(
        max_examples=max(1, total // per_knowledge_base),
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(
        knowledge_bases(),
        st.lists(channel_conversations(), min_size=per_knowledge_base, max_size=per_knowledge_base),
    )
    def send_all(knowledge_base, conversations):  # type: ignore[no-untyped-def]
        if tally.cases >= total:
            return
        llm = HostileLLM()
        engine = engine_for(config, build_index(knowledge_base), llm)
        for requests in conversations:
            loop.run_until_complete(
                check_channel_conversation(engine, llm, channel, requests, tally)
            )

    try:
        send_all()
    finally:
        loop.close()
    return tally


def report(name: str, tally: Tally, seconds: float) -> str:
    lines = [
        f"| {name} | {tally.cases} | {tally.results} | {len(tally.crashes)} | "
        f"{len(tally.leaks)} | {seconds:.0f} |"
    ]
    for problem in (tally.crashes + tally.leaks)[:5]:
        lines.append(f"\n    {problem[:300]}")
    return "".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--faiss-cases", type=int, default=10_000)
    parser.add_argument("--per-knowledge-base", type=int, default=10)
    parser.add_argument("--private-cases", type=int, default=10_000)
    parser.add_argument("--file-cases", type=int, default=10_000)
    parser.add_argument("--milvus-cases", type=int, default=1_000)
    parser.add_argument("--milvus-knowledge-bases", type=int, default=20)
    parser.add_argument("--milvus-uri", default=None)
    parser.add_argument("--llm-cases", type=int, default=1_000)
    parser.add_argument("--channel-requests", type=int, default=5_000)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    print(f"Run {dt.date.today()}, {platform.machine()}, Python {platform.python_version()}\n")
    print("| backend | cases | results checked | crashes | leaks | seconds |")
    print("|---|---|---|---|---|---|", flush=True)
    with tempfile.TemporaryDirectory() as docs:
        if args.faiss_cases:
            started = time.perf_counter()
            tally = run_faiss(args.faiss_cases, args.per_knowledge_base, Path(docs))
            print(report("FAISS", tally, time.perf_counter() - started), flush=True)
        if args.private_cases:
            started = time.perf_counter()
            tally = run_faiss_private(args.private_cases, args.per_knowledge_base, Path(docs))
            seconds = time.perf_counter() - started
            print(report("FAISS, unattributed documents private", tally, seconds), flush=True)
        if args.file_cases:
            started = time.perf_counter()
            tally = run_faiss_files(args.file_cases, args.per_knowledge_base)
            seconds = time.perf_counter() - started
            print(report("FAISS, files in every front-matter shape", tally, seconds), flush=True)
        if args.llm_cases:
            started = time.perf_counter()
            tally = run_llm(args.llm_cases, args.per_knowledge_base, Path(docs))
            seconds = time.perf_counter() - started
            print(report("FAISS, hostile LLM over HTTP", tally, seconds), flush=True)
        if args.channel_requests:
            started = time.perf_counter()
            tally = run_channel(args.channel_requests, args.per_knowledge_base, Path(docs))
            seconds = time.perf_counter() - started
            print(report("FAISS, entitled REST channel", tally, seconds), flush=True)
        if args.milvus_cases:
            with milvus_server(args.milvus_uri) as uri:
                started = time.perf_counter()
                tally = run_milvus(args.milvus_cases, args.milvus_knowledge_bases, uri, Path(docs))
                print(report("Milvus 2.3.5", tally, time.perf_counter() - started), flush=True)


if __name__ == "__main__":
    main()
