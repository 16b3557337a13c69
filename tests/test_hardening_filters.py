"""Every filter, from text, an LLM or slots, is bounded in depth and size before anything walks it.

Validation, translators and printing walk a filter recursively; a filter thousands of levels deep
(``not(not(...))`` from a talked-into LLM) must be refused with a clear ``ValueError``, never end
in a ``RecursionError``, and a filter of ordinary shape must keep working.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.structured_query import Comparator, Comparison, Operation, Operator

from rasa_context_retrieval.filters import syntax
from rasa_context_retrieval.filters.bounds import (
    MAX_FILTER_DEPTH,
    MAX_FILTER_NODES,
    MAX_FILTER_TEXT_CHARS,
    FilterTooLarge,
    check_filter,
)
from rasa_context_retrieval.filters.slot_filters import slot_filter
from rasa_context_retrieval.filters.syntax import parse_filter, to_filter_syntax

PREMIUM = 'eq("plan", "premium")'


def nested(operations: int) -> str:
    return "not(" * operations + PREMIUM + ")" * operations


def test_a_filter_at_the_depth_limit_parses_and_one_level_more_is_refused():
    deepest = parse_filter(nested(MAX_FILTER_DEPTH - 1))
    assert to_filter_syntax(deepest) == nested(MAX_FILTER_DEPTH - 1)
    with pytest.raises(FilterTooLarge, match="nests"):
        parse_filter(nested(MAX_FILTER_DEPTH))


def test_a_filter_3000_levels_deep_is_refused_before_parsing(monkeypatch: pytest.MonkeyPatch):
    parsed: list[str] = []
    real_parser = syntax._get_parser

    def counted_parser() -> Any:
        parsed.append("parser")
        return real_parser()

    monkeypatch.setattr(syntax, "_get_parser", counted_parser)
    with pytest.raises(ValueError, match=f"limit of {MAX_FILTER_DEPTH}"):
        parse_filter(nested(3_000))
    assert parsed == [], "the text must be refused before the parser walks it"
    parse_filter(PREMIUM)
    assert parsed == ["parser"], "an ordinary filter still goes through the parser"


def test_too_many_comparisons_or_too_much_text_is_refused():
    wide = "or(" + ", ".join([PREMIUM] * (MAX_FILTER_NODES + 1)) + ")"
    with pytest.raises(FilterTooLarge):
        parse_filter(wide)
    fits_text = "or(" + ", ".join([PREMIUM] * 200) + ")"
    assert len(fits_text) < MAX_FILTER_TEXT_CHARS
    assert isinstance(parse_filter(fits_text), Operation)
    with pytest.raises(FilterTooLarge, match="characters"):
        parse_filter('eq("plan", "' + "p" * MAX_FILTER_TEXT_CHARS + '")')


def test_brackets_inside_quoted_values_do_not_count_as_nesting():
    value = "(" * (MAX_FILTER_DEPTH * 2)
    directive = parse_filter(f'eq("title", "{value}")')
    assert isinstance(directive, Comparison) and directive.value == value


@pytest.mark.slow  # a large property run
def test_a_tree_built_in_code_of_any_depth_is_checked_without_recursion():
    node: Comparison | Operation = Comparison(
        comparator=Comparator.EQ, attribute="plan", value="premium"
    )
    for _ in range(100_000):
        node = Operation(operator=Operator.NOT, arguments=[node])
    with pytest.raises(FilterTooLarge, match="deeper"):
        check_filter(node)


def test_a_slot_listing_more_values_than_a_filter_may_hold_fails_instead_of_being_cut():
    many = [f"plan-{n}" for n in range(MAX_FILTER_NODES + 1)]
    with pytest.raises(FilterTooLarge):
        slot_filter({"plan": many}, {"plan": "plan"})
    few = slot_filter({"plan": many[:10]}, {"plan": "plan"})
    assert isinstance(few, Comparison) and few.value == many[:10]
