"""A table of cell texts as a Markdown table: what every converted format's tables become.

Word, PowerPoint and HTML tables all reach the chunker this way, so a table reads the same
whatever format it came from; rows shorter than the widest are padded with empty cells.
"""

from __future__ import annotations


def markdown_table(rows: list[list[str]]) -> str:
    """The rows (the first is the header) as a Markdown table; nothing for no rows."""
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    rows = [row + [""] * (width - len(row)) for row in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
    lines.extend("| " + " | ".join(row) + " |" for row in rows[1:])
    return "\n".join(lines)
