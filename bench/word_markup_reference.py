"""What our Word reader and ``mammoth`` (the reader ``markitdown`` uses for .docx) make of the
markup around shown text: tracked changes, fields, smart tags, links, text boxes, notes.

Builds one small .docx per construct with the builders of ``tests/test_formats_word_markup.py``
and prints, for each, our text and mammoth's Markdown (both with line breaks shown as ``⏎``).
A reference, not a score: run ``PYTHONPATH=. python bench/word_markup_reference.py``.
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

from test_formats_word_markup import add_notes, add_paragraph, field, run, text_box  # noqa: E402

from rasa_context_retrieval.knowledge.word import word_text  # noqa: E402


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


CONSTRUCTS: dict[str, Callable[[Any], None]] = {
    "tracked changes": tracked,
    "simple field": simple_field,
    "complex fields": complex_fields,
    "smart tag, link": smart_tag_and_link,
    "text box": text_boxes,
    "footnote": notes,
}


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        for name, build in CONSTRUCTS.items():
            document = docx.Document()
            build(document)
            path = Path(folder) / "construct.docx"
            document.save(str(path))
            ours, _ = word_text(path.read_bytes())
            with path.open("rb") as file:
                theirs = mammoth.convert_to_markdown(file).value.strip()  # type: ignore[attr-defined]
            print(f"## {name}\n- ours:    {ours.replace(chr(10), '⏎')}")
            print(f"- mammoth: {theirs.replace(chr(10), '⏎')}\n")


if __name__ == "__main__":
    main()
