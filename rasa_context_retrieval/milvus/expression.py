"""Translate the filter IR into a Milvus boolean expression, evaluated on the Milvus servers.

Every attribute is stored already normalised (``milvus.normal_form``), so each comparison is a
plain test on one facet: on the typed fields of a declared attribute (``milvus.layout``), or on
the ``filterable`` JSON field for the others::

    eq("plan", "Premium ")  ->  (m1a2b3c4d_plan_s in ["premium"])          # declared string
    eq("tier", "Premium ")  ->  ((filterable["tier"]["s"] in ["premium"])
                                 or json_contains_any(filterable["tier"]["l"], ["premium"]))

What a filter means is defined once, in ``filters.semantics`` (shared with the FAISS backend);
this module only spells its primitive selections over the normal form: "has the attribute" is
the presence field (typed) or ``exists`` (JSON), texts are an ``in`` list on the scalar facet or
``array_contains_any``/``json_contains_any`` on the members (member flags, where the layout has
them, for a list's declared values), typed readings compare one facet.
A typed attribute whose layout admits overflow rows is also tested on the ``overflow`` JSON.
Numbers compare exactly, as ``filters.values.number_parts`` defines: on the JSON, by the float
``n`` and, where that float stands for several integers (2**53 and beyond), by the remainder
``r`` (absent means 0); an integer field holds only integers up to 2**53 and a float field only
floats, so a number they cannot hold goes to the overflow JSON and their tests stay exact.
Milvus 2.3 evaluates ``like`` only as a prefix and has no substring test on list members; the
shared semantics resolves ``like`` and ``contain`` against the attribute's vocabulary (its
distinct normalised strings, which the store keeps) into exact text lists, so that
stays exact and costs one pass over the distinct values, not over the chunks.

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

import math
import operator
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from langchain_core.structured_query import Comparator, StructuredQuery
from numpy.typing import NDArray

from rasa_context_retrieval.filters.semantics import Facet, FilterSemantics
from rasa_context_retrieval.filters.values import FLOAT_EXACT_LIMIT, Number, number_parts
from rasa_context_retrieval.milvus.attribute_names import UNADDRESSABLE as UNADDRESSABLE
from rasa_context_retrieval.milvus.attribute_names import (
    UnaddressableAttribute as UnaddressableAttribute,
)
from rasa_context_retrieval.milvus.attribute_names import unaddressable_reason
from rasa_context_retrieval.milvus.layout import (
    ABSENT,
    MAX_EXACT_INTEGER,
    TYPED,
    CollectionLayout,
    TypedAttribute,
)
from rasa_context_retrieval.milvus.normal_form import (
    BOOLEAN,
    CHUNK_ID_FIELD,
    DAYS,
    FILTERABLE_FIELD,
    INSTANT,
    MEMBERS,
    NUMBER,
    OVERFLOW_FIELD,
    REMAINDER,
    TEXT,
)

Vocabulary = Callable[[str], Collection[str]]
"""attribute -> its distinct normalised strings (scalar values and list members)."""

NEVER = f"({CHUNK_ID_FIELD} in [])"
"""Matches no chunk. Milvus 2.3 refuses a bare ``false`` as a filter."""
ALWAYS = f"(not {NEVER})"
"""Matches every chunk."""

_ORDER_SYMBOLS = {
    Comparator.EQ: "==",
    Comparator.GT: ">",
    Comparator.GTE: ">=",
    Comparator.LT: "<",
    Comparator.LTE: "<=",
}
_STRICT_SYMBOLS = {
    Comparator.GT: ">",
    Comparator.GTE: ">",
    Comparator.LT: "<",
    Comparator.LTE: "<",
}
_COMPARES: dict[Comparator, Callable[[int, int], bool]] = {
    Comparator.EQ: operator.eq,
    Comparator.GT: operator.gt,
    Comparator.GTE: operator.ge,
    Comparator.LT: operator.lt,
    Comparator.LTE: operator.le,
}
_FACET_KEYS = {
    Facet.NUMBER: NUMBER,
    Facet.DAY: DAYS,
    Facet.INSTANT: INSTANT,
    Facet.BOOLEAN: BOOLEAN,
}
_PRINTABLE_ASCII = range(0x20, 0x7F)
_SURROGATES = range(0xD800, 0xE000)
_REPLACEMENT_CHARACTER = 0xFFFD


def _no_vocabulary(attribute: str) -> Collection[str]:
    return ()


class ExpressionSelections:
    """``filters.semantics.Selections`` as Milvus boolean expressions: over the typed fields of
    the attributes the collection's layout types (``milvus.layout``), over the ``filterable``
    normal form for every other attribute."""

    def __init__(
        self, vocabulary: Vocabulary = _no_vocabulary, layout: CollectionLayout | None = None
    ) -> None:
        self._vocabulary = vocabulary
        self._layout = layout or CollectionLayout.legacy()

    def nothing(self) -> str:
        return NEVER

    def everything(self) -> str:
        return ALWAYS

    def all_of(self, parts: Sequence[str]) -> str:
        return _join(parts, "and")

    def any_of(self, parts: Sequence[str]) -> str:
        return _join(parts, "or")

    def complement(self, part: str) -> str:
        return f"(not {part})"

    def having(self, attribute: str) -> str:
        typed = self._layout.typed_attribute(attribute)
        if typed is not None:
            return f"({typed.presence} != {ABSENT})"
        return f"(exists {FILTERABLE_FIELD}[{_json_key(attribute)}])"

    def texts(self, attribute: str, texts: Sequence[str], *, scalars: bool, members: bool) -> str:
        typed = self._layout.typed_attribute(attribute)
        if typed is None:
            return _json_texts(FILTERABLE_FIELD, attribute, texts, scalars, members)
        parts = []
        present = [text for text in texts if text]  # "" is the typed fields' filler
        if present and scalars and TEXT in typed.facets:
            parts.append(_in(typed.field(TEXT), present))
        if present and members and MEMBERS in typed.facets:
            parts.extend(_typed_members(typed, present))
        if attribute in self._layout.overflow:
            parts.append(_json_texts(OVERFLOW_FIELD, attribute, texts, scalars, members))
        return _join(parts, "or") if parts else NEVER

    def facet_in(self, attribute: str, facet: Facet, values: Sequence[Any]) -> str:
        key = _FACET_KEYS[facet]
        typed = self._layout.typed_attribute(attribute)
        if typed is None:
            return _json_in(FILTERABLE_FIELD, attribute, key, values)
        parts = []
        if key in typed.facets:
            parts.extend(_typed_in(typed, key, values))
        if attribute in self._layout.overflow:
            parts.append(_json_in(OVERFLOW_FIELD, attribute, key, values))
        return _join(parts, "or") if parts else NEVER

    def facet_ordered(
        self, attribute: str, facet: Facet, comparator: Comparator, bound: Any
    ) -> str:
        key = _FACET_KEYS[facet]
        typed = self._layout.typed_attribute(attribute)
        if typed is None:
            return _json_ordered(FILTERABLE_FIELD, attribute, key, comparator, bound)
        parts = []
        if key in typed.facets:
            test = _ordered(typed.field(key), comparator, bound)
            if key == NUMBER and typed.type == "integer":
                test = _ordered(typed.field(key), comparator, _integer_bound(comparator, bound))
            elif key == NUMBER:
                test = _float_ordered(typed.field(key), comparator, bound)
            parts.append(_guarded(typed, test))
        if attribute in self._layout.overflow:
            parts.append(_json_ordered(OVERFLOW_FIELD, attribute, key, comparator, bound))
        return _join(parts, "or") if parts else NEVER

    def vocabulary(self, attribute: str) -> NDArray[Any]:
        return np.array(sorted(self._vocabulary(attribute)), dtype=np.dtypes.StringDType())


def _json_texts(
    field: str, attribute: str, texts: Sequence[str], scalars: bool, members: bool
) -> str:
    parts = []
    if scalars:
        parts.append(_in(_path(field, attribute, TEXT), texts))
    if members:
        literals = ", ".join(string_literal(text) for text in texts)
        parts.append(f"json_contains_any({_path(field, attribute, MEMBERS)}, [{literals}])")
    return _join(parts, "or")


def _typed_members(typed: TypedAttribute, texts: Sequence[str]) -> list[str]:
    """Some typed member is one of ``texts``: an indexed flag test for each declared value, and
    ``array_contains_any`` (no index in Milvus 2.3) for the others (``milvus.layout``)."""
    flags = [typed.flag_field(text) for text in texts]
    tests = [f"({flag} == 1)" for flag in flags if flag is not None]
    others = [text for text, flag in zip(texts, flags, strict=True) if flag is None]
    if others:
        literals = ", ".join(string_literal(text) for text in others)
        tests.append(f"array_contains_any({typed.field(MEMBERS)}, [{literals}])")
    return tests


def _typed_in(typed: TypedAttribute, key: str, values: Sequence[Any]) -> list[str]:
    """The typed test for ``values`` (empty when no value can be stored in the field)."""
    if key == BOOLEAN:
        wanted = set(values)
        test = f"({typed.field(key)} == {_value(True in wanted)})" if len(wanted) == 1 else ""
        return [_guarded(typed, test)]
    if key == NUMBER and typed.type == "integer":
        values = [int(v) for v in values if float(v).is_integer() and abs(v) <= MAX_EXACT_INTEGER]
    elif key == NUMBER:  # a float field holds floats only: a number no float is, is not there
        values = [rounded for rounded, remainder in map(number_parts, values) if not remainder]
    if not values:
        return []
    test = _in(typed.field(key), values)
    return [_guarded(typed, test) if key in typed.guarded else test]


def _guarded(typed: TypedAttribute, test: str) -> str:
    """``test`` only where the typed fields hold the value (their filler is a real number)."""
    presence = f"({typed.presence} == {TYPED})"
    return f"({presence} and {test})" if test else presence


def _integer_bound(comparator: Comparator, bound: Number) -> int:
    """The same ordering against an integer bound, for an integer field: ``x > 2.5`` is
    ``x > 2``, ``x >= 2.5`` is ``x >= 3``. Bounds beyond the stored range are clamped (an
    integer bound exactly, never through a float)."""
    limit = 2 * MAX_EXACT_INTEGER
    if isinstance(bound, int):
        return min(max(bound, -limit), limit)
    clamped = min(max(float(bound), -limit), limit)
    up = comparator in (Comparator.GTE, Comparator.LT)
    return int(math.ceil(clamped) if up else math.floor(clamped))


def _ordered(path: str, comparator: Comparator, bound: Any) -> str:
    return f"({path} {_ORDER_SYMBOLS[comparator]} {_value(bound)})"


def _float_ordered(path: str, comparator: Comparator, bound: Number) -> str:
    """The ordering on a field of floats, against a bound no float may be: a float equal to the
    bound's float orders as its remainder 0 does against the bound's (``number_parts``)."""
    rounded, remainder = number_parts(bound)
    if not remainder:
        return _ordered(path, comparator, rounded)
    tied = _COMPARES[comparator](0, remainder)
    symbol = _STRICT_SYMBOLS[comparator] + ("=" if tied else "")
    return f"({path} {symbol} {_number(rounded)})"


def _json_in(field: str, attribute: str, key: str, values: Sequence[Any]) -> str:
    """Some JSON facet is one of ``values``; numbers exactly, by float and remainder."""
    path = _path(field, attribute, key)
    if key != NUMBER:
        return _in(path, values)
    pairs = sorted({number_parts(value) for value in values})
    plain = [rounded for rounded, _ in pairs if abs(rounded) < FLOAT_EXACT_LIMIT]
    parts = [_in(path, plain)] if plain else []
    remainder = _path(field, attribute, REMAINDER)
    for rounded, left in pairs:
        if abs(rounded) >= FLOAT_EXACT_LIMIT:
            test = _remainder_test(remainder, Comparator.EQ, left)
            parts.append(f"(({path} == {_number(rounded)}) and {test})")
    return _join(parts, "or")


def _json_ordered(field: str, attribute: str, key: str, comparator: Comparator, bound: Any) -> str:
    """A JSON facet ordered against ``bound``; numbers exactly: by float, and where the floats
    are equal and stand for several integers, by the remainder."""
    path = _path(field, attribute, key)
    if key != NUMBER:
        return _ordered(path, comparator, bound)
    rounded, left = number_parts(bound)
    if abs(rounded) < FLOAT_EXACT_LIMIT:
        return _ordered(path, comparator, rounded)
    beyond = f"({path} {_STRICT_SYMBOLS[comparator]} {_number(rounded)})"
    remainder = _remainder_test(_path(field, attribute, REMAINDER), comparator, left)
    return f"({beyond} or (({path} == {_number(rounded)}) and {remainder}))"


def _remainder_test(path: str, comparator: Comparator, bound: int) -> str:
    """The stored remainder (absent means 0) compares with ``bound`` as ``comparator`` says."""
    test = _ordered(path, comparator, bound)
    if _COMPARES[comparator](0, bound):
        return f"((not (exists {path})) or {test})"
    return test


class MilvusExpressionTranslator(FilterSemantics[str]):
    """Write a filter directive as a Milvus expression over the ``filterable`` JSON field."""

    def __init__(
        self, vocabulary: Vocabulary = _no_vocabulary, layout: CollectionLayout | None = None
    ) -> None:
        """``vocabulary`` resolves ``like``/``contain``; without it they match no text.
        ``layout`` says which attributes have typed fields (default: none, the previous
        release's JSON-only collection)."""
        super().__init__(ExpressionSelections(vocabulary, layout))

    def visit_structured_query(
        self, structured_query: StructuredQuery
    ) -> tuple[str, Mapping[str, Any]]:
        if structured_query.filter is None:
            return structured_query.query, {}
        return structured_query.query, {"expr": structured_query.filter.accept(self)}


def _in(path: str, values: Sequence[str | float | int | bool]) -> str:
    return f"({path} in [{', '.join(_value(value) for value in values)}])"


def _path(field: str, attribute: str, facet: str) -> str:
    return f"{field}[{_json_key(attribute)}][{string_literal(facet)}]"


def _json_key(attribute: str) -> str:
    if reason := unaddressable_reason(attribute):
        raise UnaddressableAttribute(f"attribute {attribute!r}: {reason}")
    return string_literal(attribute)


def _join(parts: Iterable[str], keyword: str) -> str:
    present = list(parts)
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
