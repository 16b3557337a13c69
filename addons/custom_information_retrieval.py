"""The example assistant's knowledge store, as config.yml names it.

An assistant can name ``rasa_context_retrieval.ContextRetrieval`` in ``vector_store.type``
directly; this thin subclass only keeps the example's historic dotted path
(``addons.custom_information_retrieval.MyVectorStore``) working and shows where a project would
customise the store.
"""

from rasa_context_retrieval import ContextRetrieval


class MyVectorStore(ContextRetrieval):
    """Lumen Drive's store: the plugin unchanged, configured by ``vector_store:``."""


__all__ = ["MyVectorStore"]
