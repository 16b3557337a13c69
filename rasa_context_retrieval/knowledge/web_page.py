"""Saved web pages (.html/.htm) → the main content as Markdown sections, each with its anchor.

A help-centre page saved from a website carries its site around the article: navigation, a
footer, a cookie banner, scripts. Indexing those would make every page match "privacy" or
"menu", and script text is no knowledge at all, so only the main content is read: ``<main>``
(or ``role="main"``, else the first ``<article>``, else ``<body>``), with navigation, headers,
footers, asides, forms, cookie and consent banners, hidden elements, scripts and styles removed
first. Headings (``h1``-``h6``) stay ``#`` headings, lists stay ``- `` items, tables become
Markdown tables.

A heading with an ``id`` (or inside a ``<section id=...>``) starts a section cited as
``page.html#id``, so a person lands on the paragraph. ``<title>`` fills ``title`` and
``<link rel="canonical">`` fills ``url``; no link is ever followed. ``trafilatura`` was compared
and not chosen: it drops element ids, so no anchor could be cited (``documentation/formats.md``).
The parser is ``lxml`` (``office`` extra), with the network off and entities not resolved.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.knowledge.markdown_table import markdown_table
from rasa_context_retrieval.knowledge.qa_entries import ANSWER, answers
from rasa_context_retrieval.knowledge.sections import HeadingPath, heading_of

HTML_SUFFIXES = (".html", ".htm")
MISSING_LIBRARY = (
    "reading HTML needs the 'office' extra: pip install 'rasa-context-retrieval[office]'"
)
NEVER_CONTENT = (
    "script", "style", "noscript", "template", "iframe", "object", "embed", "svg", "canvas",
    "nav", "footer", "aside", "form", "button", "select", "dialog", "head",
)  # fmt: skip
"""Elements whose text is never indexed, wherever they are (a ``header`` only outside an
article or section: there it is the site's banner, inside one it holds the article's title)."""
NEVER_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "dialog"})
BANNER_MARKERS = re.compile(r"cookie|consent|gdpr|banner|newsletter|breadcrumb", re.IGNORECASE)
"""In an element's id or class: site furniture (cookie banners, breadcrumbs), not content."""
HEADINGS = {f"h{level}": level for level in range(1, 7)}
BLOCKS = frozenset({"p", "pre", "blockquote", "dd", "dt", "figcaption", "address"})
SECTIONING = frozenset({"section", "article"})
DECLARED_CHARSET = re.compile(rb"<meta[^>]+charset", re.IGNORECASE)
DECLARATION_BYTES = 4096
"""Where a page declares its encoding: in a ``<meta>`` near its start."""
WHITESPACE = re.compile(r"\s+")


class PageUnreadable(ContextRetrievalError, ValueError):
    """The page cannot be indexed; the message is the one-line reason."""


@dataclass(frozen=True)
class PageSection:
    """Consecutive Markdown blocks of a page that share one anchor (``None``: the page itself)."""

    anchor: str | None
    text: str
    path: str = ""
    """The headings above and including the section's own (``knowledge.sections``)."""


def page_sections(raw: bytes) -> tuple[list[PageSection], dict[str, Any]]:
    """The main content's sections, and the page's properties (``title``, ``url``).

    Raises:
        PageUnreadable: the library is missing, the file is not HTML, or nothing is left once
            scripts, navigation and banners are removed (a JavaScript app shell).
    """
    try:
        from lxml import etree, html
    except ImportError:
        raise PageUnreadable(MISSING_LIBRARY) from None
    parser = html.HTMLParser(
        remove_comments=True,
        remove_pis=True,
        no_network=True,
        recover=True,
        encoding=_encoding(raw),
    )
    try:
        root = html.document_fromstring(raw, parser=parser)
    except (etree.ParserError, ValueError) as error:
        raise PageUnreadable(f"not a readable HTML page ({type(error).__name__})") from None
    properties = _properties(root)
    main = _main_content(root)
    _remove_furniture(main)
    _collapse_source_lines(main)
    for line_break in main.iter("br"):  # "Q: ...<br>A: ..." stays two lines
        line_break.tail = "\n" + (line_break.tail or "")
    sections = _sections(main)
    if not sections:
        raise PageUnreadable(
            "no text left once scripts, navigation, footers and banners are removed "
            "(a page built by JavaScript?); not indexed"
        )
    return sections, properties


def _encoding(raw: bytes) -> str | None:
    """UTF-8 for a page that declares no encoding and reads as UTF-8 (a saved page or a
    documentation fragment often has no ``<meta charset>``; lxml would guess Latin-1 and turn
    "→" into "â"); otherwise what the page declares (``None``: lxml reads the declaration)."""
    if raw.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        return None
    if DECLARED_CHARSET.search(raw[:DECLARATION_BYTES]):
        return None
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return "utf-8"


def _collapse_source_lines(main: Any) -> None:
    """Line breaks in the HTML source are spaces, as a browser shows them (a hard-wrapped
    paragraph reads as one line); only ``<br>`` (added after this), ``<pre>`` and a line that
    starts with ``A:`` (the answer of a ``Q:`` line, ``knowledge.qa_entries``) break a line."""
    for element in main.iter():
        if not isinstance(element.tag, str):
            continue
        if element.tag != "pre" and not element.xpath("ancestor::pre") and element.text:
            element.text = _collapsed(element.text)
        if element.tail and not element.xpath("ancestor::pre"):
            element.tail = _collapsed(element.tail)


def _collapsed(text: str) -> str:
    def space(match: re.Match[str]) -> str:
        keeps_line = "\n" in match[0] and text.startswith(ANSWER, match.end())
        return "\n" if keeps_line else " "

    return WHITESPACE.sub(space, text)


def _list_mark(item: Any, parent: Any) -> str:
    """``- `` in a bulleted list; in a numbered one the item's number (``start`` counted)."""
    if parent is None or parent.tag != "ol":
        return "-"
    start = parent.get("start", "1").strip()
    first = int(start) if start.lstrip("-").isdigit() else 1
    position = sum(1 for sibling in item.itersiblings(preceding=True) if sibling.tag == "li")
    return f"{first + position}."


def _properties(root: Any) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    title = " ".join(" ".join(root.xpath("//head/title//text()")).split())
    if title:
        properties["title"] = title
    for link in root.xpath("//link[@href]"):
        relations = (link.get("rel") or "").lower().split()
        href = link.get("href", "").strip()
        if "canonical" in relations and href.lower().startswith(("https://", "http://")):
            properties["url"] = href
            break
    return properties


def _main_content(root: Any) -> Any:
    for query in ("//main", "//*[@role='main']", "//article", "//body"):
        found = root.xpath(query)
        if found:
            return found[0]
    return root


def _remove_furniture(main: Any) -> None:
    doomed = [
        element
        for element in main.iter()
        if isinstance(element.tag, str) and element is not main and _is_furniture(element)
    ]
    for element in doomed:
        if element.getparent() is not None:
            element.drop_tree()


def _is_furniture(element: Any) -> bool:
    if element.tag in NEVER_CONTENT:
        return True
    if element.tag == "header" and not element.xpath(
        "ancestor::main|ancestor::article|ancestor::section"
    ):
        return True
    if (element.get("role") or "").lower() in NEVER_ROLES:
        return True
    if element.get("hidden") is not None or element.get("aria-hidden") == "true":
        return True
    marker = f"{element.get('id') or ''} {element.get('class') or ''}"
    return bool(BANNER_MARKERS.search(marker))


def _sections(main: Any) -> list[PageSection]:
    """One section per heading, with its anchor and heading path."""
    sections: list[PageSection] = []
    anchor: str | None = None
    path, where = HeadingPath(), ""
    blocks: list[str] = []
    for block_anchor, starts, text in _blocks(main):
        if starts:
            if blocks:
                sections.append(PageSection(anchor, "\n\n".join(blocks), where))
            heading = heading_of(text)
            if heading is not None:
                path.enter(*heading)
            anchor, blocks, where = block_anchor, [], str(path)
        if blocks and answers(blocks[-1], text):
            blocks[-1] = f"{blocks[-1]}\n{text}"  # one Q/A entry (knowledge.qa_entries)
        else:
            blocks.append(text)
    if blocks:
        sections.append(PageSection(anchor, "\n\n".join(blocks), where))
    return sections


def _blocks(main: Any) -> Iterator[tuple[str | None, bool, str]]:
    """``(anchor, starts a section, Markdown block)`` in document order."""
    for element in main.iter():
        if not isinstance(element.tag, str) or _inside_block(element, main):
            continue
        tag = element.tag
        if tag in HEADINGS:
            text = " ".join(_words(element).split())
            if text:
                yield _anchor(element, main), True, f"{'#' * HEADINGS[tag]} {text}"
        elif tag == "li":
            text = _words(element)
            if text:
                parent = element.getparent()
                mark = _list_mark(element, parent)
                yield None, False, f"{mark} {text}"
        elif tag == "table":
            table = _markdown_table(element)
            if table:
                yield None, False, table
        elif tag in BLOCKS or (tag == "div" and _has_own_text(element)):
            text = element.text_content().strip() if tag == "pre" else _words(element)
            if text:
                yield None, False, f"> {text}" if tag == "blockquote" else text


def _inside_block(element: Any, main: Any) -> bool:
    """Whether an ancestor below ``main`` already yields this element's text."""
    parent = element.getparent()
    while parent is not None and parent is not main:
        if parent.tag in HEADINGS or parent.tag in BLOCKS or parent.tag in ("li", "table"):
            return True
        if parent.tag == "div" and _has_own_text(parent):
            return True
        parent = parent.getparent()
    return False


def _has_own_text(element: Any) -> bool:
    """A ``div`` used as a paragraph: text directly in it, not only in child blocks."""
    if (element.text or "").strip():
        return True
    return any((child.tail or "").strip() for child in element)


def _anchor(heading: Any, main: Any) -> str | None:
    if heading.get("id"):
        return str(heading.get("id"))
    for named in heading.xpath(".//a[@id or @name]"):
        return str(named.get("id") or named.get("name"))
    parent = heading.getparent()
    while parent is not None and parent is not main.getparent():
        if parent.tag in SECTIONING and parent.get("id"):
            return str(parent.get("id"))
        parent = parent.getparent()
    return None


def _words(element: Any) -> str:
    """The element's text, spaces collapsed, line breaks (``<br>``) kept."""
    lines = (" ".join(line.split()) for line in element.text_content().splitlines())
    return "\n".join(line for line in lines if line)


def _markdown_table(table: Any) -> str:
    rows = [[_words(cell) for cell in row.xpath("./th|./td")] for row in table.xpath(".//tr")]
    rows = [row for row in rows if any(row)]
    return markdown_table(rows)
