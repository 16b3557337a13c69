"""Self-query: filters extracted from the user's own words (rules or an LLM)."""
