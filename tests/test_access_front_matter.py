"""Front matter that cannot be read exactly never makes a restricted document public.

Each shape below once made a ``plan: premium`` document public: the reader fell back to "no
front matter" (and indexed ``plan: [premium]`` as text), kept the last of two keys, or ignored a
key spelled differently. Now each such document is refused and listed with the reason among the
build's problems; a leak test searches the real store for each as a user without the plan.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rasa.utils.endpoints import EndpointConfig

from rasa_context_retrieval.knowledge.loader import load_knowledge_base
from rasa_context_retrieval.store import ContextRetrieval

SECRET = "The vault combination for the archive room is 4711."
PUBLIC = "---\ncategory: help\n---\nOur office opens at nine in the morning.\n"

REFUSED: dict[str, tuple[str, str, str]] = {
    # shape: (file name, content, words of the reason)
    "unclosed opener": ("vault.md", f"---\nplan: [premium]\n{SECRET}\n", "never closed"),
    "dots terminator": ("vault.md", f"---\nplan: [premium]\n...\n{SECRET}\n", "ends with '...'"),
    "opener with a comment": (
        "vault.md",
        f"--- # access\nplan: [premium]\n---\n{SECRET}\n",
        "'---' alone",
    ),
    "TOML": ("vault.md", f'+++\nplan = ["premium"]\n+++\n{SECRET}\n', "TOML"),
    "duplicate YAML key": (
        "vault.md",
        f"---\nplan: premium\nplan: free\n---\n{SECRET}\n",
        "'plan' twice",
    ),
    "YAML merge key": (
        "vault.md",
        f"---\nbase: &base {{plan: premium}}\n<<: *base\nplan: free\n---\n{SECRET}\n",
        "merge key",
    ),
    "capitalised key": ("vault.md", f"---\nPlan: [premium]\n---\n{SECRET}\n", "'Plan'"),
    "plural key": ("vault.md", f"---\nplans: [premium]\n---\n{SECRET}\n", "'plans'"),
    "upper-case plural key": ("vault.md", f"---\nPLANS: premium\n---\n{SECRET}\n", "'PLANS'"),
    "HTML comment before the opener": (
        "vault.md",
        f"<!-- reviewed -->\n---\nplan: [premium]\n---\n{SECRET}\n",
        "HTML comment",
    ),
    "HTML comments before the opener": (
        "vault.md",
        f"<!-- reviewed -->\n\n<!--\nby legal\n-->\n---\nplan: [premium]\n---\n{SECRET}\n",
        "HTML comment",
    ),
    "text before a front-matter block": (
        "vault.md",
        f"Internal\n\n---\nplan: [premium]\n---\n{SECRET}\n",
        "'plan: ...'",
    ),
    "JSON line with the attribute at the top": (
        "vault.jsonl",
        f'{{"text": "{SECRET}", "plan": ["premium"], "metadata": {{}}}}\n',
        'outside "metadata"',
    ),
    "JSON line with a duplicate key": (
        "vault.jsonl",
        f'{{"text": "{SECRET}", "metadata": {{"plan": "premium", "plan": "free"}}}}\n',
        "'plan' twice",
    ),
    "JSON line with a capitalised key": (
        "vault.jsonl",
        f'{{"text": "{SECRET}", "metadata": {{"Plan": "premium"}}}}\n',
        "'Plan'",
    ),
}


def write_docs(folder: Path, name: str, content: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(content.encode("utf-8"))
    (folder / "office.md").write_text(PUBLIC, encoding="utf-8")
    return folder


def connected(embedder: Any, docs: Path, index: Path, **block: Any) -> ContextRetrieval:
    """A store on ``docs``; ``plan`` is declared, as every document that carried it may be the
    one refused (an access attribute that nothing declares or has stops start-up)."""
    store = ContextRetrieval(embedder)
    store.connect(
        EndpointConfig(
            docs=str(docs),
            index_path=str(index),
            query_embedder="rasa",
            refresh_seconds=0,
            metadata_fields=[{"name": "plan", "type": "list[string]"}],
            **block,
        )
    )
    return store


async def sources_found(store: ContextRetrieval, metadata: Any) -> list[str]:
    state = {"latest_message": {"text": "vault combination", "metadata": metadata}}
    found = await store.search("vault combination archive room", state)
    return [str(result.metadata["source"]) for result in found.results]


@pytest.mark.parametrize("shape", REFUSED)
def test_the_loader_refuses_the_shape_and_says_why(tmp_path: Path, shape: str) -> None:
    name, content, reason = REFUSED[shape]
    knowledge = load_knowledge_base(write_docs(tmp_path, name, content), ["plan"])
    assert [document.source for document in knowledge.documents] == ["office.md"]
    assert [problem.file for problem in knowledge.problems] == [name]
    assert reason in knowledge.problems[0].reason
    assert "not indexed" in knowledge.problems[0].reason


@pytest.mark.parametrize("shape", REFUSED)
async def test_search_never_serves_the_shape_to_a_user_without_the_plan(
    embedder: Any, tmp_path: Path, shape: str
) -> None:
    name, content, reason = REFUSED[shape]
    docs = write_docs(tmp_path / "docs", name, content)
    store = connected(embedder, docs, tmp_path / "index", access_filters={"plan": "plan"})
    for metadata in ({"plan": "free"}, None):
        found = await sources_found(store, metadata)
        assert found == ["office.md"], f"{shape}: {found}"
    problems = store.engine.live.problems
    assert [problem.file for problem in problems] == [name]
    assert reason in problems[0].reason


@pytest.mark.parametrize(
    "leading", ["\n\n", "\ufeff", "\ufeff\n  \n", "\n\ufeff"], ids=["blank", "bom", "both", "late"]
)
async def test_front_matter_after_blank_lines_or_a_byte_order_mark_is_read(
    embedder: Any, tmp_path: Path, leading: str
) -> None:
    content = f"{leading}---\nplan: [premium]\n---\n{SECRET}\n"
    docs = write_docs(tmp_path / "docs", "vault.md", content)
    [vault] = [d for d in load_knowledge_base(docs, ["plan"]).documents if d.source == "vault.md"]
    assert vault.metadata == {"plan": ["premium"]} and vault.text == SECRET
    store = connected(embedder, docs, tmp_path / "index", access_filters={"plan": "plan"})
    assert "vault.md" not in await sources_found(store, {"plan": "free"})
    assert "vault.md" in await sources_found(store, {"plan": "premium"})


def test_without_access_filters_unreadable_front_matter_is_still_refused_and_reported(
    tmp_path: Path,
) -> None:
    name, content, _ = REFUSED["unclosed opener"]
    knowledge = load_knowledge_base(write_docs(tmp_path, name, content))
    assert [document.source for document in knowledge.documents] == ["office.md"]
    assert "never closed" in knowledge.problems[0].reason


def test_without_access_filters_a_differently_spelled_key_is_an_ordinary_attribute(
    tmp_path: Path,
) -> None:
    """Without access attributes no key is a near miss of one: ``Plan`` is just a key."""
    name, content, _ = REFUSED["capitalised key"]
    knowledge = load_knowledge_base(write_docs(tmp_path, name, content))
    assert {document.source for document in knowledge.documents} == {"office.md", "vault.md"}
    assert knowledge.problems == []


def test_a_markdown_rule_in_the_text_is_not_front_matter(tmp_path: Path) -> None:
    content = "---\nplan: [premium]\n---\nIntro.\n\n---\n\nMore about the plan: it is fast.\n"
    knowledge = load_knowledge_base(write_docs(tmp_path, "guide.md", content), ["plan"])
    assert {document.source for document in knowledge.documents} == {"office.md", "guide.md"}


async def test_adding_access_filters_re_reads_the_documents(embedder: Any, tmp_path: Path) -> None:
    """The index fingerprint covers the access attributes: an index built without
    ``access_filters`` is not reused once they are configured."""
    name, content, _ = REFUSED["capitalised key"]
    docs = write_docs(tmp_path / "docs", name, content)
    open_store = connected(embedder, docs, tmp_path / "index")
    assert "vault.md" in await sources_found(open_store, None)
    guarded = connected(embedder, docs, tmp_path / "index", access_filters={"plan": "plan"})
    assert "vault.md" not in await sources_found(guarded, None)
    assert [problem.file for problem in guarded.engine.live.problems] == [name]
