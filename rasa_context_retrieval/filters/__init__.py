"""Metadata filters: LangChain self-query IR, its text syntax, and its FAISS execution."""
