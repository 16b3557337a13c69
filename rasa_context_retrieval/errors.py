"""The one root of every error this package raises: ``ContextRetrievalError``.

Rasa has ``RasaException``; this is the same idea for the store. A caller that wants "anything the
store refused or could not do" catches this one class, and every typed subclass keeps the built-in
base it had (``ValueError`` for bad input or configuration, ``RuntimeError`` for a broken index,
``TimeoutError`` for a lease), so code that catches those still catches them. Rasa's policy
never sees these directly: ``ContextRetrieval.search`` re-raises any failure as Rasa's
``InformationRetrievalException``, and the policy wraps a failed ``connect()`` in its own error.

This module imports nothing, so any layer may use it.
"""

from __future__ import annotations


class ContextRetrievalError(Exception):
    """Base class of every error raised by ``rasa_context_retrieval``; messages say how to fix."""


__all__ = ["ContextRetrievalError"]
