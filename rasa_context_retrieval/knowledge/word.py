"""Word (.docx) documents → Markdown text: heading styles become ``#`` headings, list styles
(or numbered paragraphs) stay ``- `` items, tables become Markdown tables, the core-property
title fills ``title``, and a ``Q:`` paragraph with its ``A:`` paragraph is one entry
(``knowledge.qa_entries``). Text inside content controls (``w:sdt``: the fields of forms and
templates, around paragraphs, table rows or cells, or inline in a sentence) is read where it
stands; python-docx's own iteration (``iter_inner_content``, ``Paragraph.text``,
``Table.rows``, ``_Row.cells``, ``_Cell.text``) steps over them, so the document is walked here.

The walk reads what Word shows in its default view, at the one place runs are read
(``_shown_runs``): tracked insertions and moves not yet accepted, links, smart tags and the
results of fields are read; tracked deletions (and deleted table rows) and field codes are not.
A paragraph whose mark was deleted is read joined to the next one (``_joined``).
The footnotes and endnotes a paragraph cites are read with it (``_cited_notes``), and its text
boxes right after it, once, not again from their copy for older readers (``_text_boxes``).
Word's own table of contents is left out (``_leave_out_contents``), and so is one typed by hand
(``_typed_contents``).

Page headers and footers and review comments are not read (they are parts of the file beside
the body, which the walk never opens): a header or footer repeats on every page ("Company
confidential", "Page 3 of 12"), noise that would match every question in every chunk; a
comment is a reviewer's note about the text, not text published to readers.

``python-docx`` (MIT) reads styles and core properties directly (``documentation/formats.md``);
its XML parser does not resolve entities, so XXE in a document is never followed. A .docx is a
zip: its members' unpacked size is checked against the file's size before anything is parsed,
so a zip bomb is refused, not unpacked (``knowledge.office_zip``). It is an optional dependency
(the ``office`` extra).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.knowledge.markdown_table import markdown_table, table_parts
from rasa_context_retrieval.knowledge.office_zip import office_library
from rasa_context_retrieval.knowledge.qa_entries import entries_joined
from rasa_context_retrieval.knowledge.sections import heading_of
from rasa_context_retrieval.knowledge.table_chunks import is_contents, is_contents_title

DOCX_SUFFIX = ".docx"
CONTENTS_GALLERY = "Table of Contents"
"""The building-block gallery of the content control Word inserts a table of contents in
(``w:docPartGallery``; the same in every language of Word)."""
CONTENTS_FIELD = "TOC"
"""The field code of a table of contents (``TOC \\o "1-3" \\h``, or ``TOC \\c "Figure"`` for a
table of figures); the same in every language of Word."""
CONTENTS_ENTRY = re.compile(r"^(?P<title>\S.*?)(?:\t+|\s*(?:\.\s?){3,}|\s*…+)\s*(?P<page>\d{1,4})$")
"""A line of a contents typed by hand: a title, then a tab (Word draws its dot leader) or
typed dots (``....``, or ``…`` as Word's AutoCorrect turns three dots), then a page number."""
CONTENTS_MIN_ENTRIES = 2
"""A typed contents has several entries; one line under a Contents heading is left as typed."""
_WORDPROCESSING = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_MARKUP_COMPATIBILITY = "http://schemas.openxmlformats.org/markup-compatibility/2006"


_SHOWN_WITHIN = frozenset(
    f"{{{_WORDPROCESSING}}}{name}"
    for name in ("ins", "moveTo", "hyperlink", "smartTag", "customXml", "fldSimple", "dir", "bdo")
)
"""Markup around text that Word shows where it stands: a tracked insertion or move not yet
accepted (Word's default "Simple Markup" view shows it), a link, a smart tag or custom XML
tag, a simple field (its runs are its shown result; its code is an attribute), and a
right-to-left or override span."""


class WordUnreadable(ContextRetrievalError, ValueError):
    """The Word file cannot be indexed; the message is the one-line reason."""


def word_text(raw: bytes) -> tuple[str, dict[str, Any]]:
    """The document as Markdown text, and its properties (``title`` when set).

    Raises:
        WordUnreadable: the library is missing, or the file is a zip bomb, corrupt or empty.
    """
    docx = office_library(raw, "docx", "Word", WordUnreadable)
    try:
        document = docx.Document(io.BytesIO(raw))
        _leave_out_contents(document.element.body)
        blocks = list(_blocks(document.element.body, document, _notes(document)))
        title = document.core_properties.title
    except WordUnreadable:
        raise
    except Exception as error:  # python-docx raises KeyError, ValueError, lxml errors, ...
        raise WordUnreadable(f"corrupt Word file ({type(error).__name__})") from None
    shown = _typed_contents([block for block in blocks if block.strip()])
    text = "\n\n".join(entries_joined(list(shown)))
    if not text.strip():
        raise WordUnreadable("Word file has no text")
    return text, ({"title": title.strip()} if title and title.strip() else {})


def _typed_contents(blocks: list[str]) -> Iterator[str]:
    """The blocks, with a table of contents typed as paragraphs (``CONTENTS_ENTRY`` lines
    right under a Contents heading) written as the table it stands for, when it is one by the
    chunker's rule (``table_chunks.is_contents``: every entry ends in a page number, in page
    order): a PDF's contents page reaches the chunker as such a table, and is left out there
    with the reason in the log. Lines that are not (a price list, numbers out of order) stay
    as they were typed."""
    index = 0
    while index < len(blocks):
        yield blocks[index]
        entries = _entries_after(blocks, index) if is_contents_title(blocks[index]) else []
        table = markdown_table(entries)
        lines = table_parts(table)
        if len(entries) >= CONTENTS_MIN_ENTRIES and lines and is_contents([blocks[index]], lines):
            yield table
            index += len(entries)
        index += 1


def _entries_after(blocks: list[str], heading: int) -> list[list[str]]:
    """The title and page number of each ``CONTENTS_ENTRY`` line right after ``heading``."""
    entries: list[list[str]] = []
    for block in blocks[heading + 1 :]:
        entry = CONTENTS_ENTRY.match(block)
        if entry is None:
            break
        entries.append([entry["title"], entry["page"]])
    return entries


Notes = Mapping[tuple[str, str], Any]
"""The document's footnotes and endnotes by the reference that cites them: the reference's
tag (``w:footnoteReference`` or ``w:endnoteReference``) and the note's ``w:id``."""


def _blocks(container: Any, document: Any, notes: Notes) -> Iterator[str]:
    """The Markdown blocks of a body (or a text box): each paragraph (as Word shows it, joined
    to the next where its mark was deleted) with the notes it cites, then its text boxes, and
    each table."""
    for shown in _joined(_content(container, "w:p", "w:tbl")):
        if shown[0].tag == _qn("w:tbl"):
            yield _markdown_table(shown[0], notes)
            continue
        paragraph = _markdown_paragraph(shown, document)
        cited = [
            line.strip()
            for note in _cited_notes(shown, notes)
            for line in _lines(note, {})
            if line.strip()
        ]
        if heading_of(paragraph) is not None:  # a heading is one line: its notes follow it
            yield from (paragraph, *cited)
        else:
            yield "\n".join(line for line in (paragraph, *cited) if line)
        for box in _text_boxes(shown):
            yield from _blocks(box, document, notes)


def _joined(elements: Iterable[Any]) -> Iterator[list[Any]]:
    """The paragraphs and tables of a container as Word shows them: a paragraph whose mark is
    a tracked deletion (``w:pPr/w:rPr/w:del``, a reviewer deleted the Enter after it) is
    joined to the paragraph after it, so each item is a table alone or the paragraphs shown
    as one (the last holds the mark that remains, and with it the style). A deleted mark
    before a table or at the end of the container has nothing to join: its paragraph is shown
    alone, never dropped."""
    paragraphs: list[Any] = []
    for element in elements:
        if element.tag == _qn("w:tbl"):
            if paragraphs:
                yield paragraphs
                paragraphs = []
            yield [element]
            continue
        paragraphs.append(element)
        if element.find(f"{_qn('w:pPr')}/{_qn('w:rPr')}/{_qn('w:del')}") is None:
            yield paragraphs
            paragraphs = []
    if paragraphs:
        yield paragraphs


def _content(container: Any, *tags: str) -> Iterator[Any]:
    """The children of ``container`` with one of ``tags`` (paragraphs and tables of a body,
    rows of a table, cells of a row, runs of a paragraph), in document order, those inside
    content controls and inside the markup around shown text (``_SHOWN_WITHIN``) included.
    Text marked deleted (``w:del``, ``w:moveFrom``) is in neither, so it is never read."""
    wanted = {_qn(tag) for tag in tags}
    for child in container.iterchildren():
        if child.tag in wanted:
            yield child
        elif child.tag in _SHOWN_WITHIN:
            yield from _content(child, *tags)
        elif (content := _control_content(child)) is not None:
            yield from _content(content, *tags)


def _shown_runs(paragraph: Any) -> Iterator[Any]:
    """The runs of a paragraph that Word shows, in order: a complex field (``w:fldChar``
    begin, its code in ``w:instrText``, separate, its result, end) shows only its result, and
    a field nested in another's code (``IF { DOCPROPERTY Stage } = ...``) is part of that code.
    A field whose result goes on into later paragraphs is read there as ordinary text."""
    fields: list[bool] = []  # for each open field, outermost first: is its result showing?
    for run in _content(paragraph, "w:r"):
        for mark in run.iterchildren(_qn("w:fldChar")):
            kind = mark.get(_qn("w:fldCharType"))
            if kind == "begin":
                fields.append(False)
            elif kind == "separate" and fields:
                fields[-1] = True
            elif kind == "end" and fields:
                fields.pop()
        if all(fields):
            yield run


def _inline_text(shown: list[Any]) -> str:
    """The text of paragraphs shown as one (``_joined``): the text of the runs Word shows
    (python-docx's ``text`` of each), one paragraph's after the other's, as Word joins them."""
    return "".join(run.text for paragraph in shown for run in _shown_runs(paragraph))


def _cited_notes(shown: list[Any], notes: Notes) -> Iterator[Any]:
    """The footnotes and endnotes a paragraph cites, in order. A note is small print that
    qualifies its sentence (an exception, a condition), so it is read with that paragraph, as
    lines of its block: in its section, its chunk, and a ``Q:``/``A:`` entry's answer, rather
    than at the end of the document. The note's number is not written after the cited word."""
    for run in (run for paragraph in shown for run in _shown_runs(paragraph)):
        for reference in run.iterchildren():
            note = notes.get((reference.tag, reference.get(_qn("w:id")) or ""))
            if note is not None:
                yield note


def _text_boxes(shown: list[Any]) -> Iterator[Any]:
    """The text boxes (``w:txbxContent``) drawn in a paragraph's shown runs: a sidebar or a
    callout, shown text read right after the paragraph it stands in."""
    for run in (run for paragraph in shown for run in _shown_runs(paragraph)):
        yield from _drawn_text_boxes(run)


def _drawn_text_boxes(element: Any) -> Iterator[Any]:
    """The text boxes drawn by ``element`` (a run, its drawing or picture), not those inside
    them (read with the box they stand in). Word writes a shape twice in
    ``mc:AlternateContent``: as a ``mc:Choice`` and as a VML copy in ``mc:Fallback`` for older
    readers; the first choice is read, the copy only when there is no choice, so a box is read
    once."""
    if element.tag == _qn("w:txbxContent"):
        yield element
        return
    children = list(element.iterchildren())
    if element.tag == f"{{{_MARKUP_COMPATIBILITY}}}AlternateContent":
        choices = [child for child in children if child.tag == f"{{{_MARKUP_COMPATIBILITY}}}Choice"]
        children = (choices or children)[:1]
    for child in children:
        yield from _drawn_text_boxes(child)


def _leave_out_contents(body: Any) -> None:
    """Takes Word's own tables of contents out of the body before it is read: the content
    control Word inserts one in (``CONTENTS_GALLERY``), and a ``TOC`` field (inserted without
    the control, or by another editor), from the run that begins it to the run that ends it,
    with the paragraphs between; and a Contents heading typed right above either
    (``table_chunks.is_contents_title``). Its entries are section titles and page numbers,
    nothing a user asks about; the chunker leaves a contents *table* out for the same reason
    (``knowledge.chunking``), and here Word says which part is one, so no guess is made."""
    for control in [control for control in body.iter(_qn("w:sdt")) if _is_contents(control)]:
        _leave_out_title_before(control)
        _detach(control)
    for field_runs in list(_contents_fields(body)):
        shown = list(_content(body, "w:p", "w:tbl"))
        first, last = field_runs[0][0], field_runs[-1][0]
        if first not in shown or last not in shown:
            continue  # inside a table of contents taken out already
        for _, run in field_runs:
            _detach(run)
        for element in shown[shown.index(first) + 1 : shown.index(last)]:
            _detach(element)
        if not _inline_text([first]).strip():
            _leave_out_title_before(first)


def _contents_fields(body: Any) -> Iterator[list[tuple[Any, Any]]]:
    """Each ``TOC`` field among the body's paragraphs, as the (paragraph, run) pairs from the
    run that begins it to the run that ends it: its result goes on over many paragraphs, one
    per entry. A field never ended (a damaged file) is none, so no text after it is lost."""
    runs = [
        (paragraph, run)
        for paragraph in _content(body, "w:p")
        for run in _content(paragraph, "w:r")
    ]
    fields: list[tuple[int, list[str]]] = []  # each open field: its first run, its code
    for index, (_, run) in enumerate(runs):
        for mark in run.iterchildren(_qn("w:fldChar"), _qn("w:instrText")):
            if mark.tag == _qn("w:instrText") and fields:
                fields[-1][1].append(mark.text or "")
            elif mark.get(_qn("w:fldCharType")) == "begin":
                fields.append((index, []))
            elif mark.get(_qn("w:fldCharType")) == "end" and fields:
                start, code = fields.pop()
                if "".join(code).upper().split()[:1] == [CONTENTS_FIELD]:  # codes ignore case
                    yield runs[start : index + 1]


def _leave_out_title_before(element: Any) -> None:
    """Takes out the paragraph right above ``element`` when it is a Contents heading."""
    above = element.getprevious()
    while above is not None and above.tag not in {_qn("w:p"), _qn("w:tbl"), _qn("w:sdt")}:
        above = above.getprevious()  # a bookmark or a tracked-change mark between them
    if above is not None and above.tag == _qn("w:p") and is_contents_title(_inline_text([above])):
        _detach(above)


def _is_contents(control: Any) -> bool:
    gallery = control.find(f"{_qn('w:sdtPr')}/{_qn('w:docPartObj')}/{_qn('w:docPartGallery')}")
    return gallery is not None and gallery.get(_qn("w:val")) == CONTENTS_GALLERY


def _detach(element: Any) -> None:
    parent = element.getparent()
    if parent is not None:
        parent.remove(element)


def _notes(document: Any) -> Notes:
    """The footnotes and endnotes of the document, parsed with python-docx's parser (which
    never resolves entities) from the parts the document relates to."""
    from docx.opc.constants import RELATIONSHIP_TYPE
    from docx.oxml import parse_xml

    kinds = {RELATIONSHIP_TYPE.FOOTNOTES: "footnote", RELATIONSHIP_TYPE.ENDNOTES: "endnote"}
    notes: dict[tuple[str, str], Any] = {}
    for relationship in document.part.rels.values():
        kind = kinds.get(relationship.reltype)
        if kind is None or relationship.is_external:
            continue
        for note in parse_xml(relationship.target_part.blob).iterchildren(_qn(f"w:{kind}")):
            notes[(_qn(f"w:{kind}Reference"), note.get(_qn("w:id")) or "")] = note
    return notes


def _control_content(element: Any) -> Any:
    """What a content control (``w:sdt``) shows, its ``w:sdtContent``; None for any other
    element and for a control still showing its placeholder ("Click or tap here to enter
    text.", a field nobody filled in). The control holding a table of contents was taken out
    before (``_leave_out_contents``)."""
    if element.tag != _qn("w:sdt"):
        return None
    if element.find(f"{_qn('w:sdtPr')}/{_qn('w:showingPlcHdr')}") is not None:
        return None
    return element.find(_qn("w:sdtContent"))


def _qn(tag: str) -> str:
    from docx.oxml.ns import qn

    return str(qn(tag))


def _markdown_paragraph(shown: list[Any], document: Any) -> str:
    """Paragraphs shown as one (``_joined``) as a Markdown line, styled by the last."""
    from docx.text.paragraph import Paragraph

    paragraph = Paragraph(shown[-1], document)
    text = _inline_text(shown).strip()
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    if not text:
        return ""
    if style == "Title":
        return f"# {text}"
    if style.startswith("Heading "):
        level = style.removeprefix("Heading ").strip()
        return f"{'#' * min(int(level), 6) if level.isdigit() else '#'} {text}"
    if style.startswith("List") or _numbered(paragraph):
        return f"- {text}"
    return text


def _numbered(paragraph: Any) -> bool:
    """A list item by its numbering, whatever its style: pandoc, for one, writes list items in
    its ``Compact`` style with the numbering on the paragraph."""
    properties = paragraph._p.pPr
    return properties is not None and properties.numPr is not None


def _markdown_table(table: Any, notes: Notes) -> str:
    """The table's rows, rows and cells in content controls (a form's repeating section)
    included. As python-docx's ``_Row.cells`` gives them: a cell spanning columns fills each,
    and a cell merged with the one above repeats its text."""
    rows: list[list[str]] = []
    above: dict[int, str] = {}  # the text at each column of the row before
    for row in _content(table, "w:tr"):
        if row.find(f"{_qn('w:trPr')}/{_qn('w:del')}") is not None:
            continue  # a tracked deletion of the row: Word no longer shows it
        cells: list[str] = []
        column = row.grid_before
        for cell in _content(row, "w:tc"):
            text = above.get(column, "") if cell.vMerge == "continue" else _cell_text(cell, notes)
            cells.extend([text] * cell.grid_span)
            column += cell.grid_span
        above = {row.grid_before + index: text for index, text in enumerate(cells)}
        rows.append(cells)
    return markdown_table(rows)


def _cell_text(cell: Any, notes: Notes) -> str:
    return "\n".join(_lines(cell, notes))


def _lines(container: Any, notes: Notes) -> Iterator[str]:
    """The text of each paragraph in ``container`` (a cell, a note, a text box) as Word shows it
    (``_joined``), each followed by the notes it cites and its text boxes. A note cites no
    further notes."""
    for shown in _joined(_content(container, "w:p")):
        yield _inline_text(shown)
        for note in _cited_notes(shown, notes):
            yield from _lines(note, {})
        for box in _text_boxes(shown):
            yield from _lines(box, notes)
