"""What our Word reader and ``mammoth`` (the reader ``markitdown`` uses for .docx) make of the
markup around shown text: tracked changes (a deleted paragraph mark too), fields, smart tags,
links, text boxes, notes, tables of contents, page headers and footers, comments.

Builds one small .docx per construct with the builders of ``tests/test_formats_word_markup.py``
(and ``tests/test_formats_word.py``) and prints, for each, the text of the chunks we index
(chunks separated by a blank line) and mammoth's Markdown (both with line breaks shown as
``⏎``, tabs as ``⇥``). A reference, not a score: run
``PYTHONPATH=. python bench/word_markup_reference.py``.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docx
import mammoth

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from test_formats_word_markup import (  # noqa: E402
    add_contents_field,
    add_notes,
    add_paragraph,
    deleted_mark,
    field,
    run,
    text_box,
)

from rasa_context_retrieval.knowledge.chunking import chunk_documents  # noqa: E402
from rasa_context_retrieval.knowledge.loader import load_knowledge_base  # noqa: E402


def tracked(document: Any) -> None:
    add_paragraph(
        document,
        run("Refunds take ")
        + f'<w:del w:id="1" w:author="Ann">{run("ten", "w:delText")}</w:del>'
        + f'<w:ins w:id="2" w:author="Ann">{run("five")}</w:ins>'
        + run(" days."),
    )
    add_paragraph(document, f'<w:moveFrom w:id="3" w:author="Ann">{run("Keep it.")}</w:moveFrom>')
    add_paragraph(document, f'<w:moveTo w:id="4" w:author="Ann">{run("Keep it.")}</w:moveTo>')


def simple_field(document: Any) -> None:
    add_paragraph(
        document,
        run("Issued by ")
        + f'<w:fldSimple w:instr=" DOCPROPERTY Company ">{run("Lumen Drive Ltd")}</w:fldSimple>',
    )


def complex_fields(document: Any) -> None:
    add_paragraph(
        document,
        run("See ")
        + field("begin")
        + run(" REF _Ref1 \\h ", "w:instrText")
        + field("separate")
        + run("Refunds")
        + field("end"),
    )
    add_paragraph(
        document,
        run("Status: ")
        + field("begin")
        + run(" IF ", "w:instrText")
        + field("begin")
        + run(" DOCPROPERTY Stage ", "w:instrText")
        + field("separate")
        + run("Final")
        + field("end")
        + run(' = "Final" "Approved" "Draft" ', "w:instrText")
        + field("separate")
        + run("Approved")
        + field("end"),
    )


def smart_tag_and_link(document: Any) -> None:
    add_paragraph(
        document,
        run("Visit our ")
        + f'<w:smartTag w:element="City">{run("Lyon")}</w:smartTag>'
        + run(" office, read ")
        + f'<w:hyperlink w:anchor="guide">{run("the guide")}</w:hyperlink>',
    )


def text_boxes(document: Any) -> None:
    add_paragraph(
        document, run("Install the app.") + text_box("Tip: back up first.", fallback=True)
    )


def notes(document: Any) -> None:
    add_paragraph(
        document, run("Refunds take a week.") + '<w:r><w:footnoteReference w:id="1"/></w:r>'
    )
    add_paragraph(document, run("Next paragraph."))
    add_notes(document, "footnote", {1: "Weekends are not counted."})


def deleted_paragraph_mark(document: Any) -> None:
    add_paragraph(document, deleted_mark(run("Refunds take ")))
    add_paragraph(document, run("five days."))
    add_paragraph(document, run("Next paragraph."))


def contents_field(document: Any) -> None:
    document.add_heading("Contents", 1)
    add_contents_field(document, ("Refunds", 2), ("Travel", 3))
    document.add_heading("Refunds", 1)
    document.add_paragraph("Refunds take a week.")


def typed_contents(document: Any) -> None:
    document.add_heading("Contents", 1)
    document.add_paragraph("1 Lending\t2")
    document.add_paragraph("2 Fees .......... 3")
    document.add_heading("Fees", 1)
    document.add_paragraph("Late return, per day\t2")
    document.add_paragraph("Lost card\t5")


def headers_footers_comments(document: Any) -> None:
    section = document.sections[0]
    section.header.paragraphs[0].text = "Company confidential"
    section.footer.paragraphs[0].text = "Page 3 of 12"
    paragraph = document.add_paragraph("Refunds take ")
    commented = paragraph.add_run("a week")
    paragraph.add_run(".")
    document.add_comment(commented, text="Check this with legal.", author="Ann")


CONSTRUCTS: dict[str, Callable[[Any], None]] = {
    "tracked changes": tracked,
    "simple field": simple_field,
    "complex fields": complex_fields,
    "smart tag, link": smart_tag_and_link,
    "text box": text_boxes,
    "footnote": notes,
    "deleted paragraph mark": deleted_paragraph_mark,
    "table of contents field": contents_field,
    "contents typed as paragraphs": typed_contents,
    "header, footer, comment": headers_footers_comments,
}


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        for name, build in CONSTRUCTS.items():
            document = docx.Document()
            build(document)
            path = Path(folder) / "construct.docx"
            document.save(str(path))
            documents = load_knowledge_base(Path(folder), extra_suffixes=(".docx",)).documents
            ours = "\n\n".join(chunk.text for chunk in chunk_documents(documents, 500, 50))
            with path.open("rb") as file:
                theirs = mammoth.convert_to_markdown(file).value.strip()  # type: ignore[attr-defined]
            print(f"## {name}\n- ours:    {ours.replace(chr(10), '⏎').replace(chr(9), '⇥')}")
            print(f"- mammoth: {theirs.replace(chr(10), '⏎').replace(chr(9), '⇥')}\n")


if __name__ == "__main__":
    main()
