"""Retrieval: dense, lexical and fused rankings."""
