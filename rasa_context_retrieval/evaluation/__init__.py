"""Retrieval evaluation on the assistant's own conversations (``rasa-context-retrieval eval``)."""
