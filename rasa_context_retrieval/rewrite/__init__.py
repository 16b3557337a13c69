"""Turning a follow-up into a standalone search query."""
