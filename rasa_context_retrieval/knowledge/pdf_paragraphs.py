"""A PDF page's laid-out lines → paragraphs separated by blank lines, wrapped lines rejoined.

A PDF has no paragraphs, only lines at positions. ``pypdf``'s plain text gives one line per
printed line and no gap between paragraphs, so a page of ``Q:``/``A:`` entries read as one
entry whose answer ran on through every later question, and every answer carried the line
breaks of the page's width. Its layout mode keeps the vertical gaps as blank lines and each
line's horizontal extent; from those this module rebuilds what the author wrote:

* a blank line (a vertical gap) ends a paragraph, as in Markdown;
* a line that the next line's first word would have pushed past the right margin was wrapped
  by the layout, so the next line continues it, unless that line starts an item of its own
  (``Q:``, ``A:``, a bullet, a number, a heading mark);
* a ``Q:`` paragraph followed by an ``A:`` paragraph is one entry (``knowledge.qa_entries``);
* runs of spaces (the layout's columns) shrink to one space, so a table row reads
  ``Free 5 GB``.
"""

from __future__ import annotations

import re

from rasa_context_retrieval.knowledge.qa_entries import entries_joined

FILLED_LINE = 0.9
"""A line that, with the next line's first word, fills this share of the page's widest line was
wrapped by the layout: that word did not fit (widths in the layout's character columns)."""
COLUMN_GAP = re.compile(r"\S {3,}\S")
"""Three spaces or more inside a laid-out line: columns (a table row), never wrapped text."""
STARTS_ITEM = re.compile(r"^(Q:|A:|[-•*▪◦‣–]\s|\d{1,3}[.)]\s|#)")
"""A line that begins an item of its own, whatever the line above it looks like."""


def paragraphs(layout_text: str, plain_text: str) -> str:
    """The page's paragraphs, separated by one blank line each.

    The words come from the plain text, the geometry (gaps, line lengths, columns) from the
    laid-out text: the layout mode places words by position and drops the spaces a typesetter
    such as TeX draws as offsets (``OpenGovdoesnotsell``), the plain mode keeps them. When the
    two do not hold the same lines in the same order, the plain text is returned as it is.
    """
    lines = [line.rstrip() for line in layout_text.splitlines()]
    printed = [line for line in plain_text.splitlines() if line.strip()]
    if [_letters(line) for line in lines if line.strip()] != [_letters(line) for line in printed]:
        return plain_text
    words_of = iter(printed)
    margin = max((len(line) for line in lines), default=0) * FILLED_LINE
    blocks: list[list[str]] = [[]]
    above = ""
    for line in lines:
        words = " ".join(next(words_of).split()) if line.strip() else ""
        if not words:
            if blocks[-1]:
                blocks.append([])
            above = ""
            continue
        if above and _continues(above, words, margin):
            blocks[-1][-1] = f"{blocks[-1][-1]} {words}"
        else:
            blocks[-1].append(words)
        above = line if len(line.strip()) >= len(words) else words
    return "\n\n".join(entries_joined(["\n".join(block) for block in blocks if block]))


def _letters(line: str) -> str:
    return "".join(line.split())


def _continues(above: str, words: str, margin: float) -> bool:
    """Whether ``words`` (a line's text) is the wrapped rest of the laid-out line ``above``."""
    if STARTS_ITEM.match(words) or COLUMN_GAP.search(above.strip()):
        return False
    return len(above) + 1 + len(words.split()[0]) >= margin
