"""LLM access through Rasa's own client factory."""
