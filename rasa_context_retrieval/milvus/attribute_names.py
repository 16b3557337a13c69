"""Which attribute names Milvus can filter on: one rule, read where a filter is written
(``milvus.expression``, each search) and where the names are declared (``config``, at start-up).

It imports nothing from the Milvus client, so the configuration reads it without loading one.
"""

from __future__ import annotations

from rasa_context_retrieval.errors import ContextRetrievalError

UNADDRESSABLE = "]["
"""The Milvus 2.3 server splits a JSON path at ``][`` even inside a quoted key, and
``json_contains_any`` on such a path stops the server (every conversation's search then fails):
a filter on such a name is refused before it is sent."""


class UnaddressableAttribute(ContextRetrievalError, ValueError):
    """A filter names an attribute Milvus cannot address in its JSON field; the search fails
    closed rather than sending it."""


def unaddressable_reason(attribute: str) -> str | None:
    """Why Milvus cannot filter on ``attribute``, or ``None`` when it can."""
    if UNADDRESSABLE in attribute:
        return (
            f"Milvus cannot filter on a name holding {UNADDRESSABLE!r} (the Milvus 2.3 server "
            "splits a JSON path there and stops on json_contains_any over it)"
        )
    return None
