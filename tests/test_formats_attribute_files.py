"""Sidecars (``manual.pdf.meta.yml``) and folder files (``_attributes.yml``): attributes for
files without front matter, that narrow access and never widen it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import structlog
from rasa.utils.endpoints import EndpointConfig

from rasa_context_retrieval.knowledge.loader import content_digest, load_knowledge_base
from rasa_context_retrieval.store import ContextRetrieval

fpdf = pytest.importorskip("fpdf")
pytest.importorskip("pypdf")

PDF = (".pdf",)
PLAN = ["plan"]


def make_pdf(path: Path, text: str, title: str | None = None) -> None:
    document = fpdf.FPDF()
    document.set_font("Helvetica", size=12)
    document.add_page()
    document.multi_cell(0, 8, text)
    if title:
        document.set_title(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    document.output(str(path))


def by_source(folder: Path, access: list[str] = PLAN) -> dict[str, dict[str, Any]]:
    knowledge = load_knowledge_base(folder, access, extra_suffixes=PDF)
    return {document.source: document.metadata for document in knowledge.documents}


def reasons(folder: Path, access: list[str] = PLAN) -> dict[str, str]:
    knowledge = load_knowledge_base(folder, access, extra_suffixes=PDF)
    return {problem.file: problem.reason for problem in knowledge.problems}


def test_a_folder_file_applies_below_it_and_a_sidecar_adds_to_it(tmp_path: Path):
    make_pdf(tmp_path / "premium/router.pdf", "Router reset steps.", title="PDF title")
    make_pdf(tmp_path / "premium/deep/modem.pdf", "Modem lights.")
    make_pdf(tmp_path / "open.pdf", "Open text.")
    (tmp_path / "premium/_attributes.yml").write_text("plan: premium\nregion: eu\n")
    (tmp_path / "premium/router.pdf.meta.yml").write_text("title: Router manual\nregion: us\n")

    documents = by_source(tmp_path)

    assert documents["premium/router.pdf#page=1"] == {
        "title": "Router manual",  # the sidecar wins over the PDF's own title
        "page": 1,
        "plan": "premium",
        "region": "us",
    }
    assert documents["premium/deep/modem.pdf#page=1"] == {
        "page": 1,
        "plan": "premium",
        "region": "eu",
    }
    assert documents["open.pdf#page=1"] == {"page": 1}
    assert set(documents) == {  # the attribute files themselves are never documents
        "premium/router.pdf#page=1",
        "premium/deep/modem.pdf#page=1",
        "open.pdf#page=1",
    }


def test_a_sidecar_narrows_a_folder_rule_and_can_never_widen_it(tmp_path: Path):
    for name in ("narrow", "widen", "public", "empty"):
        make_pdf(tmp_path / f"plans/{name}.pdf", f"{name} text.")
    (tmp_path / "plans/_attributes.yml").write_text("plan: [premium, business]\n")
    (tmp_path / "plans/narrow.pdf.meta.yml").write_text("plan: business\n")
    (tmp_path / "plans/widen.pdf.meta.yml").write_text("plan: [business, free]\n")
    (tmp_path / "plans/public.pdf.meta.yml").write_text("plan: free\n")
    (tmp_path / "plans/empty.pdf.meta.yml").write_text("plan: []\n")
    (tmp_path / "plans/note.md").write_text("---\nplan: free\n---\nFront matter cannot widen.\n")

    documents, refused = by_source(tmp_path), reasons(tmp_path)

    assert documents["plans/narrow.pdf#page=1"]["plan"] == "business"
    assert documents["plans/widen.pdf#page=1"]["plan"] == ["business"]  # the intersection
    assert "none of the values an outer rule allows" in refused["plans/public.pdf"]
    assert "removes the access attribute 'plan'" in refused["plans/empty.pdf"]
    assert "none of the values an outer rule allows" in refused["plans/note.md"]


@pytest.mark.parametrize(
    ("rule", "reason"),
    [
        ("plan: [premium\n", "bad YAML"),
        ("plan: premium\nplan: free\n", "names 'plan' twice"),
        ("Plan: premium\n", "'Plan' is not the access attribute 'plan'"),
        ("plans: premium\n", "'plans' is not the access attribute 'plan'"),
        ("- plan: premium\n", "not a mapping"),
    ],
)
def test_an_unreadable_attribute_file_refuses_every_document_it_covers(
    tmp_path: Path, rule: str, reason: str
):
    make_pdf(tmp_path / "premium/router.pdf", "Router reset steps.")
    make_pdf(tmp_path / "premium/modem.pdf", "Modem lights.")
    make_pdf(tmp_path / "free.pdf", "Free text.")
    (tmp_path / "premium/_attributes.yml").write_text(rule)
    (tmp_path / "premium/modem.pdf.meta.yml").write_text(rule)

    refused = reasons(tmp_path)

    assert set(by_source(tmp_path)) == {"free.pdf#page=1"}
    assert reason in refused["premium/_attributes.yml"]
    assert reason in refused["premium/modem.pdf.meta.yml"]
    assert "its attributes file premium/_attributes.yml is refused" in refused["premium/router.pdf"]


def test_changing_a_sidecar_or_a_folder_file_changes_the_fingerprint(tmp_path: Path):
    make_pdf(tmp_path / "manual.pdf", "Manual text.")
    before = content_digest(tmp_path, PDF)
    (tmp_path / "manual.pdf.meta.yml").write_text("plan: premium\n")
    with_sidecar = content_digest(tmp_path, PDF)
    (tmp_path / "_attributes.yml").write_text("region: eu\n")
    with_folder = content_digest(tmp_path, PDF)
    (tmp_path / "_attributes.yml").write_text("region: us\n")

    assert len({before, with_sidecar, with_folder, content_digest(tmp_path, PDF)}) == 4


# --- a leak test through ContextRetrieval.search() -----------------------------------------------

VAULT = "The vault combination for the archive room is 4711."


@pytest.fixture(scope="module")
def restricted_docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("restricted")
    make_pdf(folder / "internal/vault.pdf", VAULT)
    make_pdf(folder / "internal/archive.pdf", "The archive room opens at nine.")
    (folder / "internal/_attributes.yml").write_text("plan: staff\n")
    (folder / "internal/archive.pdf.meta.yml").write_text("plan: free\n")  # cannot widen
    make_pdf(folder / "public/hours.pdf", "The front desk opens at eight.")
    return folder


async def _sources(embedder: Any, docs: Path, tmp_path: Path, plan: str) -> list[str]:
    store = ContextRetrieval(embedder)
    store.connect(
        EndpointConfig(
            docs=str(docs),
            index_path=str(tmp_path / "index"),
            access_filters={"plan": "plan"},
            document_formats=["pdf"],
            query_embedder="rasa",
        )
    )
    state = {"latest_message": {"text": "vault combination", "metadata": {"plan": plan}}}
    found = await store.search("vault combination archive room", state)
    return [result.metadata["source"] for result in found.results]


async def test_a_restricted_folder_is_never_served_to_a_user_without_the_entitlement(
    embedder: Any, restricted_docs: Path, tmp_path: Path
) -> None:
    found = await _sources(embedder, restricted_docs, tmp_path, "free")
    assert found  # public documents are still served
    assert not any(source.startswith("internal/") for source in found)


async def test_a_restricted_folder_is_served_to_a_user_with_the_entitlement(
    embedder: Any, restricted_docs: Path, tmp_path: Path
) -> None:
    found = await _sources(embedder, restricted_docs, tmp_path, "staff")
    assert found[0] == "internal/vault.pdf#page=1"
    assert "internal/archive.pdf#page=1" not in found  # its sidecar tried to widen: refused


def test_the_setup_check_reads_the_opted_in_formats_and_their_folder_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """A knowledge base of PDFs restricted by a folder rule passes the check run before every
    console command, instead of "no document carries 'plan'"."""
    from rasa_context_retrieval.console import main
    from tests.test_preflight_check import write_assistant

    make_pdf(tmp_path / "docs/premium/router.pdf", "Router reset steps.")
    (tmp_path / "docs/premium/_attributes.yml").write_text("plan: premium\n")
    write_assistant(
        tmp_path,
        {"access_filters": {"plan": "plan"}, "document_formats": ["pdf"], "slot_filters": {}},
        documents={},
    )
    files = [
        "--config",
        str(tmp_path / "config.yml"),
        "--endpoints",
        str(tmp_path / "endpoints.yml"),
    ]

    logging = structlog.get_config()  # the console configures logging for its own process
    try:
        code = main([*files, "--credentials", str(tmp_path / "credentials.yml"), "check"])
    finally:
        structlog.configure(**logging)

    output = capsys.readouterr()
    assert code == 0, output.out + output.err
    assert "0 error(s), 0 warning(s)" in output.out + output.err


def test_a_folder_file_linked_from_outside_the_docs_folder_refuses_its_folder(tmp_path: Path):
    outside = tmp_path / "elsewhere.yml"
    outside.write_text("region: eu\n")
    docs = tmp_path / "docs"
    make_pdf(docs / "premium/router.pdf", "Router reset steps.")
    make_pdf(docs / "open.pdf", "Open text.")
    (docs / "premium/_attributes.yml").symlink_to(outside)

    refused = reasons(docs)

    assert set(by_source(docs)) == {"open.pdf#page=1"}
    assert "outside the docs folder" in refused["premium/_attributes.yml"]
    assert "its attributes file premium/_attributes.yml is refused" in refused["premium/router.pdf"]
