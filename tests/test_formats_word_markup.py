"""Word documents: the text Word shows is indexed where it stands, whatever markup holds it
(tracked changes, fields, smart tags, links, text boxes, footnotes), and text it does not
show (deletions, field codes, a text box's copy for older readers) is not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rasa_context_retrieval.knowledge.chunking import chunk_documents
from rasa_context_retrieval.knowledge.loader import load_knowledge_base
from tests.test_formats_word import content_control

docx = pytest.importorskip("docx")

WORD = (".docx",)
NAMESPACES = (
    'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
    'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
    'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" '
    'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
    'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" '
    'xmlns:v="urn:schemas-microsoft-com:vml"'
)


def run(text: str, tag: str = "w:t") -> str:
    return f'<w:r><{tag} xml:space="preserve">{text}</{tag}></w:r>'


def field(character: str) -> str:
    return f'<w:r><w:fldChar w:fldCharType="{character}"/></w:r>'


def add_paragraph(document: Any, inner: str) -> None:
    """A paragraph of the body written as Word writes it: ``inner`` is its runs and markup."""
    from docx.oxml import parse_xml

    paragraph = document.add_paragraph()._p  # before the section properties, as Word has it
    paragraph.addnext(parse_xml(f"<w:p {NAMESPACES}>{inner}</w:p>"))
    paragraph.getparent().remove(paragraph)


def text_of(document: Any, tmp_path: Path) -> str:
    document.save(str(tmp_path / "policy.docx"))
    documents = load_knowledge_base(tmp_path, extra_suffixes=WORD).documents
    return "\n\n".join(str(read.text) for read in documents)


def in_order(text: str, *parts: str) -> bool:
    return all(part in text for part in parts) and [text.index(p) for p in parts] == sorted(
        text.index(p) for p in parts
    )


def test_tracked_changes_read_as_the_document_will_read_once_accepted(tmp_path: Path):
    """Word shows insertions not yet accepted (its default "Simple Markup" view) and hides
    deletions: a reviewer's edit is the text a reader sees, a moved sentence is read once at
    its new place, a row deleted from a table is gone."""
    from docx.oxml import parse_xml

    document = docx.Document()
    add_paragraph(
        document,
        run("Refunds take ")
        + f'<w:del w:id="1" w:author="Ann">{run("ten", "w:delText")}</w:del>'
        + f'<w:ins w:id="2" w:author="Ann">{run("five")}</w:ins>'
        + run(" working days."),
    )
    add_paragraph(document, f'<w:moveFrom w:id="3" w:author="Ann">{run("Keep it.")}</w:moveFrom>')
    add_paragraph(document, run("Send the form."))
    add_paragraph(document, f'<w:moveTo w:id="4" w:author="Ann">{run("Keep it.")}</w:moveTo>')
    table = document.add_table(rows=3, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Plan", "Days"
    for row, mark, plan, days in ((1, "ins", "Premium", "30"), (2, "del", "Basic", "14")):
        cells = "".join(
            f'<w:tc><w:p><w:{mark} w:id="9" w:author="Ann">'
            f"{run(text, 'w:delText' if mark == 'del' else 'w:t')}</w:{mark}></w:p></w:tc>"
            for text in (plan, days)
        )
        tracked = parse_xml(
            f'<w:tr {NAMESPACES}><w:trPr><w:{mark} w:id="8" w:author="Ann"/></w:trPr>{cells}</w:tr>'
        )
        table.rows[row]._tr.addnext(tracked)
        table._tbl.remove(table.rows[row]._tr)

    text = text_of(document, tmp_path)

    assert text == (
        "Refunds take five working days.\n\nSend the form.\n\nKeep it.\n\n"
        "| Plan | Days |\n| --- | --- |\n| Premium | 30 |"
    )


def test_fields_read_as_their_shown_result_and_never_as_their_code(tmp_path: Path):
    """A document property, a cross-reference and a condition show their result; the field
    code (``DOCPROPERTY``, ``REF``, ``IF``) and what a condition compares are not text."""
    document = docx.Document()
    add_paragraph(
        document,
        run("Issued by ")
        + f'<w:fldSimple w:instr=" DOCPROPERTY Company ">{run("Lumen Drive Ltd")}</w:fldSimple>'
        + run("."),
    )
    add_paragraph(
        document,
        run("See ")
        + field("begin")
        + run(" REF _Ref1 \\h ", "w:instrText")
        + field("separate")
        + run("Refunds")
        + field("end")
        + run(" for details."),
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

    text = text_of(document, tmp_path)

    assert text == "Issued by Lumen Drive Ltd.\n\nSee Refunds for details.\n\nStatus: Approved"


def test_smart_tags_and_links_keep_their_text_in_the_sentence(tmp_path: Path):
    """Tags around words (a smart tag, custom XML, a right-to-left span, a link) are not
    text of their own: their words stay in the sentence."""
    document = docx.Document()
    add_paragraph(
        document,
        run("Visit our ")
        + f'<w:smartTag w:element="City">{run("Lyon")}</w:smartTag>'
        + run(" office (")
        + f'<w:customXml w:element="opening">{run("9-17")}</w:customXml>'
        + run(", ")
        + f'<w:dir w:val="rtl">{run("שלום")}</w:dir>'
        + run(") or read ")
        + f'<w:hyperlink w:anchor="guide">{run("the guide")}'
        + f'<w:ins w:id="1" w:author="Ann">{run(" online")}</w:ins></w:hyperlink>'
        + run("."),
    )

    assert text_of(document, tmp_path) == (
        "Visit our Lyon office (9-17, שלום) or read the guide online."
    )


def text_box(text: str, *, fallback: bool) -> str:
    """A run holding a text box as Word 2010 and later write it: the shape (``wps``) and, for
    readers that do not know it, the same box again as a VML copy (``mc:Fallback``)."""
    content = f"<w:txbxContent><w:p>{run(text)}</w:p></w:txbxContent>"
    shape = (
        "<w:drawing><wp:anchor><a:graphic><a:graphicData><wps:wsp>"
        f"<wps:txbx>{content}</wps:txbx>"
        "</wps:wsp></a:graphicData></a:graphic></wp:anchor></w:drawing>"
    )
    vml = f"<w:pict><v:shape><v:textbox>{content}</v:textbox></v:shape></w:pict>"
    if not fallback:
        return f"<w:r>{vml}</w:r>"
    return (
        "<w:r><mc:AlternateContent>"
        f'<mc:Choice Requires="wps">{shape}</mc:Choice><mc:Fallback>{vml}</mc:Fallback>'
        "</mc:AlternateContent></w:r>"
    )


def test_a_text_box_is_read_once_after_the_paragraph_it_stands_in(tmp_path: Path):
    """A sidebar or callout is shown text: its paragraphs follow the paragraph that holds the
    box, once, though the file holds it twice (a shape and a copy for older readers)."""
    document = docx.Document()
    add_paragraph(
        document, run("Install the app.") + text_box("Tip: back up first.", fallback=True)
    )
    add_paragraph(document, run("Sign in.") + text_box("Old style box.", fallback=False))
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "Premium"
    add_paragraph_to = table.cell(0, 1).paragraphs[0]
    from docx.oxml import parse_xml

    add_paragraph_to._p.append(parse_xml(f"<w:r {NAMESPACES}><w:t>30</w:t></w:r>"))
    for element in parse_xml(f"<w:p {NAMESPACES}>{text_box('days', fallback=True)}</w:p>"):
        add_paragraph_to._p.append(element)

    text = text_of(document, tmp_path)

    assert text.split("\n\n")[:4] == [
        "Install the app.",
        "Tip: back up first.",
        "Sign in.",
        "Old style box.",
    ]
    assert text.count("Tip: back up first.") == 1
    assert "| Premium | 30 days |" in text


def add_notes(document: Any, kind: str, notes: dict[int, str]) -> None:
    """A footnotes (or endnotes) part as Word writes it, its separators included."""
    from docx.opc.constants import CONTENT_TYPE, RELATIONSHIP_TYPE
    from docx.opc.packuri import PackURI
    from docx.opc.part import Part

    separators = "".join(
        f'<w:{kind} w:type="{type_}" w:id="{number}"><w:p><w:r><w:{type_}/></w:r></w:p></w:{kind}>'
        for number, type_ in ((-1, "separator"), (0, "continuationSeparator"))
    )
    written = "".join(
        f'<w:{kind} w:id="{number}"><w:p><w:r><w:{kind}Ref/></w:r>{run(" " + text)}</w:p>'
        f"</w:{kind}>"
        for number, text in notes.items()
    )
    blob = f"<w:{kind}s {NAMESPACES}>{separators}{written}</w:{kind}s>".encode()
    content_type = getattr(CONTENT_TYPE, f"WML_{kind.upper()}S")
    part = Part(PackURI(f"/word/{kind}s.xml"), content_type, blob, document.part.package)
    document.part.relate_to(part, getattr(RELATIONSHIP_TYPE, f"{kind.upper()}S"))


def test_footnotes_and_endnotes_are_read_with_the_sentence_that_cites_them(tmp_path: Path):
    """A footnote qualifies the sentence it is cited in (an exception, a condition): it is
    read with that paragraph, in its section and chunk, and in a ``Q:``/``A:`` entry's answer;
    its number is not glued to the cited word. A note cited by a heading follows it."""
    document = docx.Document()
    add_paragraph(
        document,
        '<w:pPr><w:pStyle w:val="Heading1"/></w:pPr>'
        + run("Refunds")
        + '<w:r><w:footnoteReference w:id="3"/></w:r>',
    )
    add_paragraph(
        document,
        run("Refunds take a week.") + '<w:r><w:footnoteReference w:id="1"/></w:r>',
    )
    add_paragraph(document, run("Q: Can I pay by card?"))
    add_paragraph(document, run("A: Yes.") + '<w:r><w:endnoteReference w:id="2"/></w:r>')
    document.add_heading("Travel", 1)
    add_paragraph(
        document, run("Trains are covered.") + '<w:r><w:endnoteReference w:id="1"/></w:r>'
    )
    add_notes(
        document,
        "footnote",
        {1: "Weekends are not counted.", 2: "Never cited.", 3: "Since May 2026."},
    )
    add_notes(document, "endnote", {1: "Only in Europe.", 2: "Visa or Mastercard."})

    text = text_of(document, tmp_path)
    chunks = chunk_documents(load_knowledge_base(tmp_path, extra_suffixes=WORD).documents, 500, 50)

    assert text == (
        "# Refunds\n\nSince May 2026.\n\nRefunds take a week.\nWeekends are not counted.\n\n"
        "Q: Can I pay by card?\nA: Yes.\nVisa or Mastercard.\n\n"
        "# Travel\n\nTrains are covered.\nOnly in Europe."
    )
    entries = [
        (c.metadata["section"], c.metadata["answer"]) for c in chunks if "question" in c.metadata
    ]
    assert entries == [("Refunds", "Yes.\nVisa or Mastercard.")]
    assert any(c.text.endswith("Trains are covered.\nOnly in Europe.") for c in chunks)


def deleted_mark(inner: str, style: str = "") -> str:
    """A paragraph whose mark a reviewer deleted (a tracked change): Word shows it joined to
    the paragraph after it."""
    shown_style = f'<w:pStyle w:val="{style}"/>' if style else ""
    return f'<w:pPr>{shown_style}<w:rPr><w:del w:id="7" w:author="Ann"/></w:rPr></w:pPr>{inner}'


def test_a_paragraph_whose_mark_was_deleted_reads_joined_to_the_next(tmp_path: Path):
    """Deleting the Enter between two paragraphs, with changes tracked, shows them as one
    paragraph (with the style of the one whose mark remains): the sentence is read whole, once.
    A deleted mark with no paragraph right after it to join (a table follows, the document
    ends) loses no text."""
    from docx.oxml import parse_xml

    document = docx.Document()
    add_paragraph(document, deleted_mark(run("Refunds take "), style="Heading1"))
    add_paragraph(document, deleted_mark(run("five working ")))
    add_paragraph(document, run("days.") + '<w:r><w:footnoteReference w:id="1"/></w:r>')
    add_paragraph(document, run("Send the form."))
    add_paragraph(document, deleted_mark(run("Compare plans:")))
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "Premium"
    cell = table.cell(0, 1)._tc
    cell.remove(cell.p_lst[0])
    for inner in (deleted_mark(run("30 ")), run("days")):
        cell.append(parse_xml(f"<w:p {NAMESPACES}>{inner}</w:p>"))
    add_paragraph(document, deleted_mark(run("Signed.")))
    add_notes(document, "footnote", {1: "Weekends are not counted."})

    text = text_of(document, tmp_path)

    assert text == (
        "Refunds take five working days.\nWeekends are not counted.\n\nSend the form.\n\n"
        "Compare plans:\n\n| Premium | 30 days |\n| --- | --- |\n\nSigned."
    )


def contents_entry(title: str, page: int) -> str:
    """An entry of Word's table of contents: a link to the heading, a tab, and its page
    number as a ``PAGEREF`` field."""
    return (
        f'<w:hyperlink w:anchor="_Toc{page}">{run(title)}<w:r><w:tab/></w:r>'
        + field("begin")
        + run(f" PAGEREF _Toc{page} \\h ", "w:instrText")
        + field("separate")
        + run(str(page))
        + field("end")
        + "</w:hyperlink>"
    )


def add_contents_field(document: Any, *entries: tuple[str, int]) -> None:
    """Word's table of contents inserted as a field (References > Table of Contents > Custom,
    typed as a field, or any document without the content control): the field begins in the
    paragraph of the first entry and ends in a paragraph of its own after the last; Word may
    save its code in several runs."""
    (title, page), *rest = entries
    add_paragraph(
        document,
        field("begin")
        + run(' toc \\o "1-3" ', "w:instrText")  # typed in a field (Ctrl+F9): any case
        + run("\\h \\z \\u ", "w:instrText")
        + field("separate")
        + contents_entry(title, page),
    )
    for title, page in rest:
        add_paragraph(document, contents_entry(title, page))
    add_paragraph(document, field("end"))


def test_word_s_table_of_contents_is_left_out_with_its_heading(tmp_path: Path):
    """A table of contents, as a field or as the content control Word puts one in, lists
    section titles and page numbers: nothing a user asks about. It is left out, and so is a
    Contents heading typed right above it; every section it lists is indexed, and a field
    left open (a damaged file) loses no text."""
    document = docx.Document()
    document.add_heading("Contents", 1)
    add_contents_field(document, ("Refunds", 2), ("Travel", 3))
    document.add_heading("Refunds", 1)
    add_paragraph(document, run("Refunds take a week."))
    document.add_paragraph("Table of contents")
    contents = document.add_paragraph("placeholder")
    contents._p.addnext(content_control("Refunds\t2", block=True, gallery="Table of Contents"))
    contents._p.getparent().remove(contents._p)
    document.add_heading("Travel", 1)
    add_paragraph(document, run("Trains are covered."))
    add_paragraph(document, field("begin") + run(" TOC \\o ", "w:instrText") + field("separate"))
    add_paragraph(document, run("Buses are not."))

    text = text_of(document, tmp_path)

    assert text == (
        "# Refunds\n\nRefunds take a week.\n\n# Travel\n\nTrains are covered.\n\nBuses are not."
    )


def test_page_headers_footers_and_review_comments_are_not_indexed(tmp_path: Path):
    """A page header or footer repeats on every page ("Company confidential", "Page 3"): it
    would put the same noise in every chunk it was read into. A comment is a reviewer's note,
    not published text. Neither is indexed; the sentence a comment is anchored on reads whole."""
    document = docx.Document()
    section = document.sections[0]
    section.header.paragraphs[0].text = "Company confidential"
    section.different_first_page_header_footer = True
    section.first_page_header.paragraphs[0].text = "Draft for review"
    section.footer.paragraphs[0].text = "Page 3 of 12"
    paragraph = document.add_paragraph("Refunds take ")
    commented = paragraph.add_run("a week")
    paragraph.add_run(".")
    document.add_comment(commented, text="Check this with legal.", author="Ann")

    text = text_of(document, tmp_path)

    assert text == "Refunds take a week."
