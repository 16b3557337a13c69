"""Filters as self-query text: what an LLM writes is what we parse, what we print parses back."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from langchain_core.structured_query import (
    Comparator,
    Comparison,
    FilterDirective,
    Operation,
    Operator,
)

from rasa_context_retrieval.filters.syntax import conjoin, parse_filter, to_filter_syntax

PLAN = Comparison(comparator=Comparator.EQ, attribute="plan", value="premium")
REGION = Comparison(comparator=Comparator.EQ, attribute="region", value="eu")
PRICE = Comparison(comparator=Comparator.LT, attribute="price", value=20)


def test_prints_an_and_of_comparisons_in_self_query_syntax() -> None:
    directive = Operation(operator=Operator.AND, arguments=[PLAN, REGION])

    assert to_filter_syntax(directive) == 'and(eq("plan", "premium"), eq("region", "eu"))'


def test_date_values_print_as_the_quoted_iso_date_the_grammar_reads() -> None:
    directive = Comparison(
        comparator=Comparator.GTE,
        attribute="updated",
        value={"date": "2024-03-01", "type": "date"},
    )

    text = to_filter_syntax(directive)

    assert text == 'gte("updated", "2024-03-01")'
    assert parse_filter(text) == directive


def test_parses_what_langchain_query_constructor_writes() -> None:
    text = 'and(eq("genre", "science fiction"), gt("rating", 8.5), in("tag", ["a", 1, true]))'

    directive = parse_filter(text)

    assert directive == Operation(
        operator=Operator.AND,
        arguments=[
            Comparison(comparator=Comparator.EQ, attribute="genre", value="science fiction"),
            Comparison(comparator=Comparator.GT, attribute="rating", value=8.5),
            Comparison(comparator=Comparator.IN, attribute="tag", value=["a", 1, True]),
        ],
    )


@pytest.mark.parametrize(
    "text",
    ["", "eq(plan, 1)", 'eq("plan")', "and()", '"premium"', 'shout("plan", 1)', 'eq("a", 1'],
)
def test_bad_filter_text_raises_value_error_naming_the_text(text: str) -> None:
    with pytest.raises(ValueError, match="Cannot parse filter"):
        parse_filter(text)


@pytest.mark.parametrize(
    "value",
    ["both ' and \"", '"quoted"', "2024-03-01 release", float("nan"), object()],
)
def test_values_the_grammar_cannot_carry_raise_instead_of_printing_something_else(
    value: object,
) -> None:
    with pytest.raises(ValueError, match="Cannot write"):
        to_filter_syntax(Comparison(comparator=Comparator.EQ, attribute="a", value=value))


def test_strings_with_one_kind_of_quote_or_newlines_round_trip() -> None:
    for value in ['say "hi" now', "it's", "two\nlines", "back\\slash\\"]:
        directive = Comparison(comparator=Comparator.EQ, attribute="a", value=value)
        assert parse_filter(str(to_filter_syntax(directive))) == directive


def test_no_filter_prints_as_none() -> None:
    assert to_filter_syntax(None) is None


def test_conjoin_flattens_nested_ands_and_skips_none() -> None:
    inner = Operation(operator=Operator.AND, arguments=[PLAN, REGION])

    combined = conjoin(None, inner, PRICE, None)

    assert combined == Operation(operator=Operator.AND, arguments=[PLAN, REGION, PRICE])


def test_conjoin_keeps_an_or_as_one_argument() -> None:
    either = Operation(operator=Operator.OR, arguments=[PLAN, REGION])

    assert conjoin(either, PRICE) == Operation(operator=Operator.AND, arguments=[either, PRICE])


def test_conjoin_of_nothing_is_none_and_of_one_is_that_one() -> None:
    assert conjoin() is None
    assert conjoin(None, None) is None
    assert conjoin(None, PLAN) is PLAN


# A date at the start of a string is lexed as a date by the grammar, quotes must not be at the ends.
_DATE_START = re.compile(r"\d{4}-[01]\d-[0-3]\d")
_plain_text = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\"'"), max_size=12
)


@st.composite
def printable_strings(draw: st.DrawFn) -> str:
    text = draw(_plain_text)
    quote = draw(st.sampled_from(["", '"', "'"]))
    if quote and len(text) >= 2:
        middle = draw(st.integers(min_value=1, max_value=len(text) - 1))
        text = text[:middle] + quote + text[middle:]
    assume(not _DATE_START.match(text))
    if "'" in text:  # then it needs single quotes, which cannot hold these either
        assume("\n" not in text and not text.endswith("\\"))
    return text


scalars = st.one_of(
    printable_strings(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.dates().map(lambda day: {"date": day.isoformat(), "type": "date"}),
)
comparisons = st.builds(
    Comparison,
    comparator=st.sampled_from(list(Comparator)),
    attribute=printable_strings().filter(bool),
    value=st.one_of(scalars, st.lists(scalars, max_size=3)),
)
directives = st.recursive(
    comparisons,
    lambda children: st.one_of(
        st.builds(
            Operation,
            operator=st.sampled_from([Operator.AND, Operator.OR]),
            arguments=st.lists(children, min_size=2, max_size=3),
        ),
        st.builds(
            Operation, operator=st.just(Operator.NOT), arguments=st.lists(children, min_size=1)
        ),
    ),
    max_leaves=6,
)


@settings(suppress_health_check=[HealthCheck.too_slow])  # slow generation on a busy machine
@given(directives)
def test_every_printable_filter_parses_back_to_itself(directive: FilterDirective) -> None:
    assert parse_filter(str(to_filter_syntax(directive))) == directive
