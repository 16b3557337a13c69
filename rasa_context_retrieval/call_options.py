"""Keyword arguments a newer Rasa passes to ``InformationRetrieval.search()``.

Rasa's policy calls ``search(query, tracker_state, threshold)`` today; newer Rasa code also passes
``k=`` (how many results it wants), and later versions may pass more. An unexpected keyword would
raise ``TypeError``, which the policy does not catch, so the whole turn would fail. The store
therefore accepts any keyword: ``k`` is honoured, the rest is ignored with a debug event, and a
``k`` that is not a positive whole number is ignored with a warning instead of failing the turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog

logger = structlog.get_logger()

RESULT_COUNT_KEY = "k"


@dataclass(frozen=True)
class CallOptions:
    """What one ``search()`` call asks for beyond the query, the tracker and the threshold."""

    top_k: int | None = None
    """Results wanted for this call (``k=``); None keeps the configured ``top_k``."""


def read_call_options(kwargs: Mapping[str, Any]) -> CallOptions:
    """The options this store understands; unknown keywords are logged and ignored."""
    unknown = sorted(key for key in kwargs if key != RESULT_COUNT_KEY)
    if unknown:
        logger.debug("context_retrieval.search.ignored_arguments", arguments=unknown)
    return CallOptions(top_k=_result_count(kwargs.get(RESULT_COUNT_KEY)))


def _result_count(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    logger.warning(
        "context_retrieval.search.invalid_k",
        k=repr(value),
        event_info="k must be a whole number >= 1; the configured top_k is used instead",
    )
    return None
