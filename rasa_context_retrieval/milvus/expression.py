"""Translate the filter IR into a Milvus boolean expression, evaluated on the Milvus servers.

The expression runs over the ``filterable`` JSON field (``milvus.normal_form``), where
every attribute is already stored normalised, so each comparison is a plain test on one facet::

    eq("plan", "Premium ")  ->  ((filterable["plan"]["s"] == "premium")
                                 or json_contains_any(filterable["plan"]["l"], ["premium"]))

Semantics are those of ``filters.faiss_translator`` (its docstring is the specification;
its ``read_operand`` reads filter values here too): casefolded trimmed strings, numbers also when
written as text, dates by day or by second, list membership, ``ne``/``nin`` only among chunks
having the attribute, ``not`` the plain complement, unknown attributes match nothing.
``HasAttribute`` (from the "absent means all" rewrite, ``filters.absence``) is ``exists``.

Milvus 2.3 evaluates ``like`` only as a prefix and has no substring test on list members, so
``like`` and ``contain`` on text are resolved against the attribute's vocabulary (its distinct
normalised strings, which the store keeps) into an exact ``in`` list. That stays exact, and
costs one pass over the distinct values, not over the chunks.

Every string that reaches the expression, values and attribute names alike, is written as a
fully escaped double-quoted literal (``_literal``), so no value can change the expression's
structure. Where this differs from LangChain's ``MilvusTranslator`` (``langchain_community``):

* it interpolates values with ``f'"{value}"'``: a value containing ``"`` breaks or rewrites the
  expression (filter injection); we escape every literal;
* it compares raw metadata fields case-sensitively and has no notion of numbers-as-text, dates
  or list membership; we compare the normal form;
* its ``ne``/``nin`` match chunks lacking the attribute (Milvus ``!=`` does); ours do not;
* it has no ``contain``, passes ``like`` through (prefix-only on Milvus 2.3) and has no ``not``;
  we support every comparator and operator of the IR.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from langchain_core.structured_query import (
    Comparator,
    Comparison,
    Operation,
    Operator,
    StructuredQuery,
    Visitor,
)

from rasa_context_retrieval.filters.absence import HasAttribute
from rasa_context_retrieval.filters.faiss_translator import Operand, comparison_operands
from rasa_context_retrieval.milvus.like import like_matches
from rasa_context_retrieval.milvus.normal_form import (
    BOOLEAN,
    CHUNK_ID_FIELD,
    DAYS,
    FILTERABLE_FIELD,
    INSTANT,
    MEMBERS,
    NUMBER,
    TEXT,
)

Vocabulary = Callable[[str], Collection[str]]
"""attribute -> its distinct normalised strings (scalar values and list members)."""

NEVER = f"({CHUNK_ID_FIELD} in [])"
"""Matches no chunk. Milvus 2.3 refuses a bare ``false`` as a filter."""
ALWAYS = f"(not {NEVER})"
"""Matches every chunk."""

_ORDER_SYMBOLS = {
    Comparator.GT: ">",
    Comparator.GTE: ">=",
    Comparator.LT: "<",
    Comparator.LTE: "<=",
}
_PRINTABLE_ASCII = range(0x20, 0x7F)
_SURROGATES = range(0xD800, 0xE000)
_REPLACEMENT_CHARACTER = 0xFFFD


def _no_vocabulary(attribute: str) -> Collection[str]:
    return ()


class MilvusExpressionTranslator(Visitor):
    """Write a filter directive as a Milvus expression over the ``filterable`` JSON field."""

    allowed_comparators = tuple(Comparator)
    allowed_operators = tuple(Operator)

    def __init__(self, vocabulary: Vocabulary = _no_vocabulary) -> None:
        """``vocabulary`` resolves ``like``/``contain``; without it they match no text."""
        self.vocabulary = vocabulary

    def visit_operation(self, operation: Operation) -> str:
        self._validate_func(operation.operator)
        parts = [argument.accept(self) for argument in operation.arguments]
        if operation.operator == Operator.AND:
            return _join(parts, "and", empty=ALWAYS)
        either = _join(parts, "or", empty=NEVER)
        return either if operation.operator == Operator.OR else f"(not {either})"

    def visit_comparison(self, comparison: Comparison) -> str:
        self._validate_func(comparison.comparator)
        attribute, comparator, value = (
            comparison.attribute,
            comparison.comparator,
            comparison.value,
        )
        if not attribute:
            return NEVER  # Milvus cannot address an empty JSON key; no chunk stores one.
        operands = comparison_operands(comparator, value)
        if comparator in _ORDER_SYMBOLS:
            return _ordered(attribute, operands[0], _ORDER_SYMBOLS[comparator])
        if comparator in (Comparator.EQ, Comparator.IN):
            return _equal(attribute, operands)
        if comparator in (Comparator.NE, Comparator.NIN):
            if operands and not any(operand.comparable for operand in operands):
                return NEVER
            return f"({_exists(attribute)} and (not {_equal(attribute, operands)}))"
        if comparator == Comparator.CONTAIN:
            return self._contain(attribute, operands[0])
        return self._like(attribute, operands[0])

    def visit_has_attribute(self, has_attribute: HasAttribute) -> str:
        if not has_attribute.attribute:
            return NEVER  # no chunk stores an empty key (see visit_comparison)
        return _exists(has_attribute.attribute)

    def visit_structured_query(
        self, structured_query: StructuredQuery
    ) -> tuple[str, Mapping[str, Any]]:
        if structured_query.filter is None:
            return structured_query.query, {}
        return structured_query.query, {"expr": structured_query.filter.accept(self)}

    def _contain(self, attribute: str, operand: Operand) -> str:
        if operand.text is None:
            return _equal(attribute, [operand])
        needle = operand.text
        containing = sorted(text for text in self.vocabulary(attribute) if needle in text)
        return _join(
            [_in(_path(attribute, TEXT), containing), _any_member(attribute, [needle])],
            "or",
            empty=NEVER,
        )

    def _like(self, attribute: str, operand: Operand) -> str:
        if operand.text is None:
            return NEVER
        matching = sorted(like_matches(operand.text, self.vocabulary(attribute)))
        return _join(
            [_in(_path(attribute, TEXT), matching), _any_member(attribute, matching)],
            "or",
            empty=NEVER,
        )


def _equal(attribute: str, operands: Sequence[Operand]) -> str:
    texts = sorted({op.text for op in operands if op.text is not None})
    numbers = sorted({op.number for op in operands if op.number is not None})
    days = sorted(
        {_days(op.instant) for op in operands if op.instant is not None and not op.has_time}
    )
    instants = sorted(
        {_seconds(op.instant) for op in operands if op.instant is not None and op.has_time}
    )
    booleans = sorted({op.boolean for op in operands if op.boolean is not None})
    return _join(
        [
            _in(_path(attribute, TEXT), texts),
            _any_member(attribute, texts),
            _in(_path(attribute, NUMBER), numbers),
            _in(_path(attribute, DAYS), days),
            _in(_path(attribute, INSTANT), instants),
            _in(_path(attribute, BOOLEAN), booleans),
        ],
        "or",
        empty=NEVER,
    )


def _ordered(attribute: str, operand: Operand, symbol: str) -> str:
    parts = []
    if operand.number is not None:
        parts.append(f"({_path(attribute, NUMBER)} {symbol} {_number(operand.number)})")
    if operand.instant is not None:
        if operand.has_time:
            parts.append(f"({_path(attribute, INSTANT)} {symbol} {_seconds(operand.instant)})")
        else:
            parts.append(f"({_path(attribute, DAYS)} {symbol} {_days(operand.instant)})")
    return _join(parts, "or", empty=NEVER)


def _in(path: str, values: Sequence[str | float | int | bool]) -> str:
    if not values:
        return ""
    return f"({path} in [{', '.join(_value(value) for value in values)}])"


def _any_member(attribute: str, texts: Sequence[str]) -> str:
    if not texts:
        return ""  # Milvus refuses json_contains_any with an empty list.
    members = ", ".join(string_literal(text) for text in texts)
    return f"json_contains_any({_path(attribute, MEMBERS)}, [{members}])"


def _exists(attribute: str) -> str:
    return f"(exists {FILTERABLE_FIELD}[{string_literal(attribute)}])"


def _path(attribute: str, facet: str) -> str:
    return f"{FILTERABLE_FIELD}[{string_literal(attribute)}][{string_literal(facet)}]"


def _join(parts: Iterable[str], keyword: str, *, empty: str) -> str:
    present = [part for part in parts if part]
    if not present:
        return empty
    if len(present) == 1:
        return present[0]
    return "(" + f" {keyword} ".join(present) + ")"


def _value(value: str | float | int | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _number(value)
    return string_literal(value)


def _number(number: float) -> str:
    # repr() of a finite float is a valid Milvus floating constant ("-2.5", "1e+20").
    return repr(float(number))


def string_literal(text: str) -> str:
    """A Milvus double-quoted string literal whose content is exactly ``text``.

    Hand-written because Milvus parses literals with its own grammar (C-style escapes decoded by
    Go's ``strconv.Unquote``), which neither ``json.dumps`` (it writes astral characters as
    surrogate pairs, which Go rejects) nor ``repr`` match. Only printable ASCII other than
    ``"`` and ``\\`` is written as is; everything else becomes ``\\uXXXX``/``\\UXXXXXXXX``.
    Lone surrogates cannot be stored in Milvus (UTF-8) and become U+FFFD.
    """
    pieces = ['"']
    for character in text:
        code = ord(character)
        if character in '"\\':
            pieces.append("\\" + character)
        elif code in _PRINTABLE_ASCII:
            pieces.append(character)
        elif code in _SURROGATES:
            pieces.append(f"\\u{_REPLACEMENT_CHARACTER:04x}")
        elif code <= 0xFFFF:
            pieces.append(f"\\u{code:04x}")
        else:
            pieces.append(f"\\U{code:08x}")
    pieces.append('"')
    return "".join(pieces)


def _days(instant: np.datetime64) -> int:
    return int(instant.astype("datetime64[D]").astype(np.int64))


def _seconds(instant: np.datetime64) -> int:
    return int(instant.astype("datetime64[s]").astype(np.int64))
