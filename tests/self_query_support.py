"""What the rules self-query tests share: one fixed day, the rules on a schema, a filter in the
self-query syntax."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from langchain_core.structured_query import FilterDirective

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import parse_filter
from rasa_context_retrieval.self_query.rules import RuleQueryConstructor

TODAY = dt.date(2025, 6, 15)
"""The day every relative date in these tests is read from."""


def rules_on(
    fields: Sequence[MetadataField],
    values: Mapping[str, Collection[str]] | None = None,
    **options: Any,
) -> RuleQueryConstructor:
    """The rules for ``fields`` with the index holding ``values``, on :data:`TODAY`."""
    return RuleQueryConstructor(fields, values or {}, today=lambda: TODAY, **options)


def expected(text: str | None) -> FilterDirective | None:
    """The filter written in the self-query syntax (None: no filter meant)."""
    return None if text is None else parse_filter(text)
