"""Q/A entries as converted documents hold them: a ``Q:`` paragraph, then an ``A:`` paragraph.

The chunker reads an entry as a ``Q:`` line directly followed by an ``A:`` line (Rasa's FAQ
format, ``knowledge.chunking``). Markdown authors write it so; in a Word file, a web page or a
PDF the question and the answer are often two paragraphs. Every converter joins them with this
one rule, so an entry keeps its answer whatever format it was saved in.
"""

from __future__ import annotations

QUESTION = "Q:"
ANSWER = "A:"


def answers(question: str, block: str) -> bool:
    """Whether ``block`` is the answer to the unanswered question paragraph ``question``."""
    return (
        question.startswith(QUESTION) and f"\n{ANSWER}" not in question and block.startswith(ANSWER)
    )


def entries_joined(blocks: list[str]) -> list[str]:
    """The paragraphs, each ``Q:`` one joined to the ``A:`` one after it (one line apart)."""
    joined: list[str] = []
    for block in blocks:
        if joined and answers(joined[-1], block):
            joined[-1] = f"{joined[-1]}\n{block}"
        else:
            joined.append(block)
    return joined
