"""Expected sources in converted formats: a file names all of it, a page or anchor only itself."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rasa_context_retrieval.evaluation.cases import EvalCase, EvalFileError, load_cases


def case(*expected: str) -> EvalCase:
    return EvalCase(name="c", turns=({"user": "q?"},), expected_sources=expected)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("expected", "cited", "right"),
    [
        ("manuals/router.pdf", "manuals/router.pdf#page=12", True),
        ("manuals/router.pdf#page=12", "manuals/router.pdf#page=12", True),
        ("manuals/router.pdf#page=12", "manuals/router.pdf#page=13", False),
        ("manuals/router.pdf#page=1", "manuals/router.pdf#page=12", False),
        ("manuals/router.pdf", "manuals/modem.pdf#page=12", False),
        ("help/sync.html", "help/sync.html#pausing", True),
        ("help/sync.html", "help/sync.html", True),
        ("help/sync.html#pausing", "help/sync.html#pausing", True),
        ("help/sync.html#pausing", "help/sync.html#resuming", False),
        ("help/sync.html#pausing", "help/sync.html", False),
        ("training/router.pptx", "training/router.pptx#slide=3", True),
        ("faq.csv", "faq.csv:7", True),
        ("faq.csv:7", "faq.csv:8", False),
        ("faq.xlsx", "faq.xlsx:FAQ:7", True),
        ("faq.xlsx:FAQ:7", "faq.xlsx:FAQ:7", True),
        ("faq.xlsx:FAQ:7", "faq.xlsx:Other:7", False),
        ("faq.jsonl", "faq.jsonl:3", True),
        ("policies/refunds.docx", "policies/refunds.docx", True),
        ("notes/c#-guide.md", "notes/c#-guide.md", True),
        ("notes/c", "notes/c#-guide.md", False),
    ],
)
def test_an_expected_file_names_every_place_in_it_and_a_place_only_itself(
    expected: str, cited: str, right: bool
) -> None:
    assert case(expected).is_right(cited, "any answer") is right


@pytest.mark.parametrize(
    ("expected", "right"),
    [
        ("manuals/router.pdf#page=4", True),
        ("manuals/router.pdf#page=5", True),
        ("manuals/router.pdf#page=6", False),
        ("manuals/router.pdf", True),
    ],
)
def test_a_result_across_a_page_break_is_named_by_each_of_its_pages(
    expected: str, right: bool
) -> None:
    assert case(expected).is_right("manuals/router.pdf#page=4", "any", pages=[4, 5]) is right


def write_cases(path: Path, *expected: str) -> Path:
    cases = [{"name": "c", "turns": [{"user": "q?"}], "expected_sources": list(expected)}]
    path.write_text(yaml.safe_dump({"cases": cases}), encoding="utf-8")
    return path


def test_a_page_of_an_opted_in_pdf_is_a_valid_expected_source(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "manuals").mkdir(parents=True)
    (docs / "manuals/router.pdf").write_bytes(b"%PDF-1.7")
    cases_file = write_cases(tmp_path / "cases.yml", "manuals/router.pdf#page=2")

    (loaded,) = load_cases(cases_file, docs, extra_suffixes=(".pdf",))

    assert loaded.expected_sources == ("manuals/router.pdf#page=2",)
    with pytest.raises(EvalFileError, match="is not a knowledge file"):
        load_cases(cases_file, docs)  # PDF not switched on: not part of the knowledge base
    with pytest.raises(EvalFileError, match="'manuals/modem.pdf#page=2' is not a knowledge"):
        load_cases(
            write_cases(tmp_path / "other.yml", "manuals/modem.pdf#page=2"), docs, None, (".pdf",)
        )
