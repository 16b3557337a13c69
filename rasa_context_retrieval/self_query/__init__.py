"""Self-query by rules: filters extracted from the user's own words, without an LLM."""
