"""How large a metadata filter may be, from whatever source it comes.

Every stage after planning walks a filter recursively (validation, the FAISS translator, the
Milvus expression, printing), and a few walk it once per document. A filter a person or the
example assistant writes is a handful of comparisons a few levels deep; one an LLM was talked
into, or one built from a slot holding a huge list, can be thousands of levels deep or wide and
end in a ``RecursionError`` or seconds of CPU. The bounds below are far above any real filter
and far below what hurts; one check applies them to the text before it is parsed (so that no
parser recurses on hostile input) and one to the tree, whichever way it was built.
"""

from __future__ import annotations

from typing import Any

from langchain_core.structured_query import Comparison, Operation

from rasa_context_retrieval.errors import ContextRetrievalError

MAX_FILTER_DEPTH = 32
"""Nesting of operations (``and``/``or``/``not``); real filters stay under 5."""
MAX_FILTER_NODES = 1_000
"""Comparisons, operations and listed values together."""
MAX_FILTER_TEXT_CHARS = 16_000
"""Length of a filter written as text (about 400 comparisons)."""

_OPENING = "(["
_CLOSING = ")]"
_QUOTES = "\"'"


class FilterTooLarge(ContextRetrievalError, ValueError):
    """A filter exceeds the depth or size bounds; the message says which and by how much."""


def check_filter_text(text: str) -> None:
    """Refuse filter text that is too long or nested too deeply, before any parser sees it.

    Brackets inside quoted strings do not count. The scan is a loop, not a parser, so it cannot
    itself run out of stack.

    Raises:
        FilterTooLarge: the text is longer than MAX_FILTER_TEXT_CHARS or nests brackets deeper
            than the tree check allows (MAX_FILTER_DEPTH, plus one for a list of values).
    """
    if len(text) > MAX_FILTER_TEXT_CHARS:
        raise FilterTooLarge(
            f"the filter is {len(text)} characters long, over the limit of {MAX_FILTER_TEXT_CHARS}"
        )
    depth = deepest = 0
    quote: str | None = None
    for char in text:
        if quote is not None:
            quote = None if char == quote else quote
        elif char in _QUOTES:
            quote = char
        elif char in _OPENING:
            depth += 1
            deepest = max(deepest, depth)
        elif char in _CLOSING:
            depth -= 1
    # A comparison counts as a level of the tree (see check_filter); its value list adds one.
    if deepest > MAX_FILTER_DEPTH + 1:
        raise FilterTooLarge(
            f"the filter nests {deepest} levels deep, over the limit of {MAX_FILTER_DEPTH}"
        )


def check_filter(directive: Any) -> None:
    """Refuse a filter tree deeper than MAX_FILTER_DEPTH or larger than MAX_FILTER_NODES.

    The top node is at depth 1 and a comparison counts as a level.

    Walks the tree with an explicit stack, stopping as soon as a bound is passed, so a tree of
    any depth or size is checked in bounded time and stack.

    Raises:
        FilterTooLarge: naming the bound that was passed.
    """
    if directive is None:
        return
    stack: list[tuple[Any, int]] = [(directive, 1)]
    nodes = 0
    while stack:
        node, depth = stack.pop()
        if depth > MAX_FILTER_DEPTH:
            raise FilterTooLarge(f"the filter nests deeper than the limit of {MAX_FILTER_DEPTH}")
        nodes += 1
        if isinstance(node, Comparison) and isinstance(node.value, list | tuple):
            nodes += len(node.value)
        elif isinstance(node, Operation):
            stack.extend((argument, depth + 1) for argument in node.arguments)
        if nodes > MAX_FILTER_NODES:
            raise FilterTooLarge(
                f"the filter holds more than {MAX_FILTER_NODES} comparisons and values"
            )
