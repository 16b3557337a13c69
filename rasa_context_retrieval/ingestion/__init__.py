"""Ingestion: documents → chunks → vectors, handed to every backend as one ``EmbeddedKnowledge``."""
