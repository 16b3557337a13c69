"""One filter condition found in the user's words, with where it was said.

Every extractor (values, numbers, dates) reports ``Constraint``s; ``rules`` merges them into one
filter tree and, when asked, cuts their words out of the search text. Keeping the span next to
the condition is what makes that cut possible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.structured_query import Comparator


@dataclass(frozen=True)
class Constraint:
    """``attribute <comparator> value``, said in ``text[start:end]`` (filter words included)."""

    attribute: str
    comparator: Comparator
    value: Any
    start: int
    end: int

    def overlaps(self, start: int, end: int) -> bool:
        return self.start < end and start < self.end


def overlaps_any(start: int, end: int, taken: list[Constraint]) -> bool:
    """Whether ``text[start:end]`` is already claimed by another constraint."""
    return any(constraint.overlaps(start, end) for constraint in taken)
