"""Retrieval evaluation on the assistant's own conversations (``python -m addons eval FILE``)."""
