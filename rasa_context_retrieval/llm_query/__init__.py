"""The LLM self-query: an LLM writes the filter, and only what the schema allows is kept.

It sits above ``self_query`` (it reads the rules' clock type and limit bounds) and below
``planning`` and ``rewrite``, which ask it for a filter.
"""
