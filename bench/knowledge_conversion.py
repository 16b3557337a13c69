"""A Markdown knowledge base converted to PDF, Word or HTML by libraries, never by hand.

``markdown-it-py`` (CommonMark) parses each Markdown or text file; its HTML is saved as a web
page, rendered to PDF by ``fpdf2``'s HTML renderer (headings become the PDF outline) and its
token stream is written to Word by ``python-docx`` (headings as ``Heading N`` styles, lists as
``List Bullet``/``List Number``, tables as tables). A line break inside a paragraph stays a line
break in every format (``breaks``), because the knowledge base's ``Q:``/``A:`` entries are
written as two lines and a reader sees them so. pandoc and LibreOffice were not installed on the
machine that wrote this; these libraries are what the ``office`` and ``dev`` extras bring.

Front matter cannot live in a PDF, a Word file or a page, so it goes to the converted file's
sidecar (``premium.pdf.meta.yml``). ``.jsonl`` files (one document with its own attributes per
line) are copied unchanged: a sidecar holds one file's attributes, not one per line.
"""

from __future__ import annotations

import html
import io
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib
import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from rasa_context_retrieval.knowledge.front_matter import split_front_matter

FORMATS = ("pdf", "docx", "html")
CONVERTED_FROM = (".md", ".txt")
SIDECAR_SUFFIX = ".meta.yml"
PDF_FONT = "DejaVuSans"
"""A Unicode font (the PDF core fonts have no "€"); matplotlib, a ``bench`` extra, ships it."""
PDF_FONT_STYLES = {"": "", "B": "-Bold", "I": "-Oblique", "BI": "-BoldOblique"}
PDF_FONT_SIZE = 11


def convert_knowledge_base(docs: Path, target: Path, fmt: str) -> dict[str, str]:
    """Write ``docs`` converted to ``fmt`` under ``target``; returns old name → new name.

    Every ``.md`` and ``.txt`` file becomes ``name.<fmt>`` with a sidecar holding its front
    matter; every other file is copied as it is.
    """
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r} is not one of {FORMATS}")
    names: dict[str, str] = {}
    for path in sorted(docs.rglob("*")):
        if not path.is_file():
            continue
        name = path.relative_to(docs).as_posix()
        if path.suffix.lower() not in CONVERTED_FROM:
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target / name)
            names[name] = name
            continue
        new_name = f"{name.rsplit('.', 1)[0]}.{fmt}"
        names[name] = new_name
        attributes, body = split_front_matter(path.read_text(encoding="utf-8"))
        title = path.stem.replace("-", " ").capitalize()
        output = target / new_name
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_bytes(CONVERTERS[fmt](body, title))
        if attributes:
            sidecar = output.with_name(output.name + SIDECAR_SUFFIX)
            sidecar.write_text(yaml.safe_dump(attributes, sort_keys=False), encoding="utf-8")
    return names


def markdown_parser() -> MarkdownIt:
    """CommonMark with tables, and a line break inside a paragraph kept as a line break."""
    return MarkdownIt("commonmark", {"breaks": True}).enable("table")


def to_html(markdown: str, title: str) -> bytes:
    """A saved web page: the document in ``<main>`` under a site header and footer."""
    body = markdown_parser().render(markdown)
    page = (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)} | Lumen Drive help</title></head>\n<body>\n"
        "<header><nav><a href='/'>Lumen Drive help</a></nav></header>\n"
        f"<main>\n{body}</main>\n<footer>Lumen Labs</footer>\n</body></html>\n"
    )
    return page.encode("utf-8")


def to_pdf(markdown: str, title: str) -> bytes:
    """The HTML rendered by fpdf2 on A4 pages; the PDF title is set, headings form the outline."""
    from fpdf import FPDF

    document = FPDF(format="A4")
    document.set_title(title)
    fonts = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    for style, suffix in PDF_FONT_STYLES.items():
        document.add_font(PDF_FONT, style, str(fonts / f"{PDF_FONT}{suffix}.ttf"))
    document.set_font(PDF_FONT, size=PDF_FONT_SIZE)
    document.add_page()
    document.write_html(markdown_parser().render(markdown))
    return bytes(document.output())


def to_docx(markdown: str, title: str) -> bytes:
    """The Markdown token stream written with Word's built-in styles; ``title`` as property."""
    import docx

    document = docx.Document()
    document.core_properties.title = title
    tokens = markdown_parser().parse(markdown)
    _write_blocks(document, tokens)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _write_blocks(document: Any, tokens: Sequence[Token]) -> None:
    lists: list[str] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.type in ("bullet_list_open", "ordered_list_open"):
            lists.append("List Bullet" if token.type == "bullet_list_open" else "List Number")
        elif token.type in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
        elif token.type == "heading_open":
            level = int(token.tag[1])
            document.add_heading(tokens[index + 1].content, level=level)
        elif token.type == "paragraph_open":
            style = lists[-1] if lists else None
            _write_inline(document.add_paragraph(style=style), tokens[index + 1])
        elif token.type == "table_open":
            index = _write_table(document, tokens, index)
        elif token.type in ("fence", "code_block"):
            document.add_paragraph(token.content.rstrip("\n"))
        index += 1


def _write_inline(paragraph: Any, inline: Token) -> None:
    bold = italic = False
    for child in inline.children or ():
        if child.type in ("softbreak", "hardbreak"):
            paragraph.add_run().add_break()
        elif child.type in ("strong_open", "strong_close"):
            bold = child.type == "strong_open"
        elif child.type in ("em_open", "em_close"):
            italic = child.type == "em_open"
        elif child.type in ("text", "code_inline"):
            run = paragraph.add_run(child.content)
            run.bold, run.italic = bold or None, italic or None


def _write_table(document: Any, tokens: Sequence[Token], index: int) -> int:
    rows: list[list[str]] = []
    while tokens[index].type != "table_close":
        token = tokens[index]
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline":
            rows[-1].append(token.content)
        index += 1
    table = document.add_table(rows=len(rows), cols=max(len(row) for row in rows))
    for row, cells in zip(table.rows, rows, strict=False):
        for cell, text in zip(row.cells, cells, strict=False):
            cell.text = text
    return index


CONVERTERS: dict[str, Callable[[str, str], bytes]] = {
    "pdf": to_pdf,
    "docx": to_docx,
    "html": to_html,
}
