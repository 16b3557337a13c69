"""Pre-flight: the whole setup checked in one pass, before Rasa's machinery or a model loads.

``rasa-context-retrieval check`` runs only this; ``index``, ``ask``, ``chat`` and ``eval`` run it
first and stop on an error. It reads config.yml, endpoints.yml and credentials.yml as plain YAML,
validates the ``vector_store:`` block with the store's own :class:`StoreConfig`, locates the class
``vector_store.type`` names, compares the filters with the documents and the access filters' keys
with the entitled channel's ``entitlement_keys``, and checks the combinations
only the console can see (config.yml's ``use_generative_llm`` never reaches the store).
"""

from rasa_context_retrieval.preflight.assistant_files import AssistantSetup, check_assistant
from rasa_context_retrieval.preflight.findings import CheckReport, Finding

__all__ = ["AssistantSetup", "CheckReport", "Finding", "check_assistant"]
