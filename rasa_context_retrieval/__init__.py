"""Context-aware retrieval for Rasa Pro's EnterpriseSearchPolicy.

An assistant names :class:`rasa_context_retrieval.ContextRetrieval` as its ``vector_store.type``;
everything else in this package is a small library (conversation → plan → retrieve → results) that
imports nothing from Rasa's policy machinery, so tests, the console and benchmarks drive it.

The class is exported lazily: Rasa imports ``rasa_context_retrieval`` and then asks for the
attribute, while the console (``python -m rasa_context_retrieval``) must not pay for importing
Rasa's retrieval module when it only prints help or an index summary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rasa_context_retrieval.store import ContextRetrieval

__all__ = ["ContextRetrieval"]


def __getattr__(name: str) -> Any:
    if name == "ContextRetrieval":
        from rasa_context_retrieval.store import ContextRetrieval

        return ContextRetrieval
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
