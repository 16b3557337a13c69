"""The Milvus backend: the same retrieval on a distributed vector database."""
