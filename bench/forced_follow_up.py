"""Replays that search one message as a follow-up, whatever its words say.

The replays of ``answer_evidence.py`` and ``standalone_by_retrieval.py`` compare each message's
reading with the other one; importing this module patches the product's follow-up decision
(``rewrite.heuristic.follows_up``) once, for the message named by ``read_as_follow_up`` only.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import rasa_context_retrieval.rewrite.heuristic as heuristic

_words_follow_up = heuristic.follows_up
_forced: list[str] = []


def _follows_up(message: str, stage: Any) -> bool:
    """The product's decision, except for the message a replay reads as a follow-up."""
    return message in _forced or _words_follow_up(message, stage)


heuristic.follows_up = _follows_up  # type: ignore[assignment]


@contextmanager
def read_as_follow_up(message: str) -> Iterator[None]:
    """Within the block, ``message`` is a follow-up to the planner."""
    _forced.append(message)
    try:
        yield
    finally:
        _forced.remove(message)
