"""Section paths: the headings above a piece of a converted document (``Refunds > Premium``).

A chunk cut from the middle of a Word file or a web page loses the headings that say what it is
about; its ``section`` attribute keeps them, outermost first, so a person reading a citation
(and the LLM reading the prompt) knows where it stands. Only converted formats get one: adding
it to Markdown would change every existing chunk and every measured baseline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SECTION = "section"
"""The attribute a converted document's parts carry their heading path in."""
SEPARATOR = " > "
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


@dataclass
class HeadingPath:
    """The open headings while reading a document top to bottom, one per level."""

    headings: list[tuple[int, str]]

    def __init__(self) -> None:
        self.headings = []

    def enter(self, level: int, title: str) -> None:
        """A heading of ``level``: it closes every open heading at that level or deeper."""
        self.headings = [(at, text) for at, text in self.headings if at < level]
        self.headings.append((level, title))

    def __str__(self) -> str:
        return SEPARATOR.join(text for _, text in self.headings)


def heading_of(block: str) -> tuple[int, str] | None:
    """``(level, title)`` when a Markdown block is one ``#`` heading line."""
    match = _HEADING.match(block.strip()) if "\n" not in block.strip() else None
    return (len(match[1]), match[2]) if match else None


def split_at_headings(text: str) -> list[tuple[str, str]]:
    """``(section path, text)`` per heading of a Markdown text (blocks separated by blank lines),
    each heading starting its own part; text before the first heading has an empty path."""
    path = HeadingPath()
    parts: list[tuple[str, list[str]]] = []
    for block in re.split(r"\n\s*\n", text.strip()):
        heading = heading_of(block)
        if heading is not None:
            path.enter(*heading)
            parts.append((str(path), [block]))
        elif parts:
            parts[-1][1].append(block)
        else:
            parts.append(("", [block]))
    return [(where, "\n\n".join(blocks)) for where, blocks in parts]
