"""The knowledge base: documents on disk → chunks with metadata → an index."""
