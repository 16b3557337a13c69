"""Does `absent_means_all` on `platform` pick the right page of the example knowledge base?

Questions that name an app ("... on Android?") extract `eq("platform", "android")`. Strictly
read, that filter keeps only pages carrying a platform, so a question whose answer is a general
page (sharing, 2FA, the Free plan) can only be answered from an off-topic app page. With
`absent_means_all: true` the general pages stay in; specific pages are then put first among the
top_k. This script runs labelled conversations on docs/ with the offline endpoints.yml through
the real engine, in three ways:

* ``strict``: `platform` without the flag (what the plugin did before);
* ``absent_means_all, relevance order``: the widened filter, results in relevance order;
* ``absent_means_all`` (the plugin): the widened filter, specific pages first in the top_k;
* ``app pages first on follow-ups only``: a variant, not the plugin's rule (see results).

A conversation counts as answered when the top result comes from the expected file (extractive
answers use the top result). The labels were written before any run.
Run: ``python bench/absent_means_all.py`` from the repository root (offline; Markdown table).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import logging
import os
import platform
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # run as a script from anywhere

import structlog  # noqa: E402
import yaml  # noqa: E402

from rasa_context_retrieval.config import StoreConfig  # noqa: E402
from rasa_context_retrieval.conversation import Conversation, Turn  # noqa: E402
from rasa_context_retrieval.engine.search import KnowledgeSearch  # noqa: E402
from rasa_context_retrieval.knowledge.embedding import embed_query  # noqa: E402
from rasa_context_retrieval.retrieve.request import RetrievalRequest  # noqa: E402

# (slots, user turns (a bot turn between them is the answer to the previous one), expected file)
GENERAL_PAGE_IS_RIGHT = [
    ({}, ["How do I share a folder with other people on Android?"], "sharing/shared-folders.md"),
    ({}, ["Can I protect a share link with a password on iOS?"], "sharing/share-links.md"),
    ({}, ["How do I pause syncing on Windows?"], "sync/how-sync-works.md"),
    ({}, ["What is a conflicted copy on macOS?"], "sync/how-sync-works.md"),
    ({}, ["How do I turn on two-factor authentication on Android?"], "security/two-factor.md"),
    ({}, ["How do I upgrade my plan on iOS?"], "plans/upgrade-downgrade.md"),
    ({}, ["How do I stop sharing a link in the web app?"], "sharing/share-links.md"),
    ({"plan": "free"}, ["Can I use offline files on Android?"], "plans/free.md"),
    ({"plan": "free"}, ["Can I use offline files on iOS?"], "plans/free.md"),
    ({"plan": "free"}, ["can I use offline files?", "and on Android?"], "plans/free.md"),
    ({"plan": "free"}, ["How many devices can I use?", "and on Android?"], "plans/free.md"),
]
SPECIFIC_PAGE_IS_RIGHT = [
    ({}, ["How do I make files available offline on Android?"], "sync/offline-files-android.md"),
    ({}, ["Why do offline files on iOS not update?"], "sync/offline-files-ios.md"),
    ({}, ["How do I keep files offline on Windows?"], "sync/offline-files-desktop.md"),
    ({}, ["How do I back up my photos automatically on Android?"], "sync/camera-upload.md"),
    ({}, ["How do I install Lumen Drive on macOS?"], "troubleshooting/install-apps.md"),
    ({}, ["How do I choose which folders sync on Windows?"], "sync/selective-sync.md"),
    ({}, ["How do I enable offline files?", "and on iOS?"], "sync/offline-files-ios.md"),
    ({}, ["How do I enable offline files?", "and on Android?"], "sync/offline-files-android.md"),
    ({}, ["Do offline files cost extra?", "and on Android?"], "sync/offline-files-android.md"),
    (
        {"plan": "plus"},
        ["How do I enable offline files?", "and on Windows?"],
        "sync/offline-files-desktop.md",
    ),
]


def conversation(slots: dict[str, Any], questions: list[str], search: KnowledgeSearch) -> Any:
    """The conversation, each earlier question followed by the answer the plugin gives it."""
    turns: list[Turn] = []
    for question in questions[:-1]:
        turns.append(Turn("user", question))
        outcome = asyncio.run(search.search(Conversation(tuple(turns), slots)))
        answer = outcome.results[0].chunk.metadata.get("answer", "") if outcome.results else ""
        turns.append(Turn("bot", answer))
    turns.append(Turn("user", questions[-1]))
    return Conversation(tuple(turns), slots)


def without_the_flag(search: KnowledgeSearch) -> KnowledgeSearch:
    """The same index and engine, every attribute read strictly."""
    fields = tuple(
        field.model_copy(update={"absent_means_all": False})
        for field in search.config.metadata_fields
    )
    config = search.config.model_copy(update={"metadata_fields": fields})
    return KnowledgeSearch(config, search.embeddings, search.live)


def top_sources(
    search: KnowledgeSearch, strict: KnowledgeSearch, talk: Conversation
) -> dict[str, str]:
    plugin = asyncio.run(search.search(talk))
    plan = plugin.plan
    request = RetrievalRequest(
        texts=[plan.search_text],
        vectors=[embed_query(search.embeddings, plan.search_text)],
        filter=plan.filters.for_backend,
        top_k=search.config.top_k,
        threshold=0.0,
        candidates=search.config.candidates,
        hybrid=search.config.lexical_search,
    )
    relevance_order = search.live.backend.rank(request)
    runs = {
        "strict": asyncio.run(strict.search(talk)).results,
        "absent_means_all, relevance order": relevance_order,
        "absent_means_all": plugin.results,
        # Not the plugin's rule: app pages first only when the message leaned on the
        # conversation (the rewrite added to it), else relevance order.
        "app pages first on follow-ups only": (
            plugin.results if plan.standalone_query != talk.latest_user_text else relevance_order
        ),
    }
    return {
        name: results[0].chunk.metadata["source"] if results else "-"
        for name, results in runs.items()
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoints", default="endpoints.yml")
    parser.add_argument("--config", default="config.yml")
    args = parser.parse_args(argv)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    os.chdir(REPO_ROOT)
    from rasa.shared.utils.llm import embedder_factory

    block = dict(yaml.safe_load(Path(args.endpoints).read_text(encoding="utf-8"))["vector_store"])
    block.pop("type")
    config = StoreConfig.from_kwargs(block)
    policies = yaml.safe_load(Path(args.config).read_text(encoding="utf-8"))["policies"]
    policy = next(p for p in policies if p["name"] == "EnterpriseSearchPolicy")
    embeddings = embedder_factory({**policy["embeddings"], "show_progress": False}, {})
    search = KnowledgeSearch.open(config, embeddings, progress=False)
    strict = without_the_flag(search)

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; date: {dt.date.today()}\n")
    print("| set | conversation | expected | strict | relevance order | plugin | follow-ups only |")
    print("|---|---|---|---|---|---|---|")
    names = (
        "strict",
        "absent_means_all, relevance order",
        "absent_means_all",
        "app pages first on follow-ups only",
    )
    totals = {label: dict.fromkeys(names, 0) for label in ("general", "specific")}
    for label, cases in (("general", GENERAL_PAGE_IS_RIGHT), ("specific", SPECIFIC_PAGE_IS_RIGHT)):
        for slots, questions, expected in cases:
            sources = top_sources(search, strict, conversation(slots, questions, search))
            for name in names:
                totals[label][name] += sources[name] == expected
            said = " / ".join(questions) + (f" (plan={slots['plan']})" if slots else "")
            marks = " | ".join(
                f"{sources[n]} {'✓' if sources[n] == expected else '✗'}" for n in names
            )
            print(f"| {label} | {said} | {expected} | {marks} |")
    print("\n| right top result | n | " + " | ".join(names) + " |\n|---|---|---|---|---|---|")
    for label, cases in (("general", GENERAL_PAGE_IS_RIGHT), ("specific", SPECIFIC_PAGE_IS_RIGHT)):
        counts = " | ".join(str(totals[label][name]) for name in names)
        print(f"| {label} page is right | {len(cases)} | {counts} |")
    overall = " | ".join(str(totals["general"][n] + totals["specific"][n]) for n in names)
    print(f"| all | {len(GENERAL_PAGE_IS_RIGHT) + len(SPECIFIC_PAGE_IS_RIGHT)} | {overall} |")


if __name__ == "__main__":
    main()
