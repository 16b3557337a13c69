"""What every filter means, written once: each backend only spells a few primitive selections.

A filter (LangChain's IR) is lowered here onto ``Selections``, a small set of primitives that say
nothing about comparators: "rows having the attribute", "rows whose text is one of these",
"rows whose number/day/instant/bool is one of these or ordered against this", and/or/not. The
FAISS backend spells them as numpy masks over its columns (``filters.faiss_translator``), Milvus
as an expression over its normal form (``milvus.expression``). Everything else, which is where
backends used to disagree, lives in this module and in ``filters.values``, so the two backends
select the same chunks by construction (and are property-tested against each other).

Semantics, for every comparator (``eq ne gt gte lt lte contain like in nin``); values are read
by ``filters.values`` (case, numbers and dates written as text, lists, year numbers):

* A chunk matches when its value matches under one of the readings that applies to it: numbers
  (also numbers stored as strings) compare numerically, dates as dates (by day, or by second when
  the filter value has a time), bools as bools, other strings as text.
* ``gt gte lt lte`` order numbers and dates only; any other value matches nothing.
* On a list-valued attribute (``platform: [android, ios]``) ``eq``, ``contain``, ``in`` and
  ``like`` mean "some member matches", ``ne`` and ``nin`` "no member matches".
* ``contain`` on a plain string means substring, on a list an exact member; ``like`` takes SQL
  wildcards (``%`` any run, ``_`` one character) and matches the whole string or member, a
  pattern without wildcards is a substring. Both are resolved against the attribute's vocabulary
  (its distinct normalised strings): one pass over distinct values, not over chunks.
* ``in``/``nin`` take a list (a single value counts as a one-item list).
* A chunk lacking the attribute (missing, None, "", []) matches no comparison on it, not even
  ``ne``/``nin``. ``ne`` and ``nin`` are the complement of ``eq``/``in`` among chunks having it;
  with no comparable value at all they match nothing.
* ``and``/``or`` combine; ``not(x)`` is the plain complement of ``x``, and with several
  arguments ``not(a, b)`` means "neither", i.e. ``not(or(a, b))``.
* An unknown or empty attribute name, or a value that cannot be compared, matches nothing,
  never an exception.
* ``HasAttribute(a)`` (``filters.absence``) is the chunks having ``a``.
* NUL characters are ordinary characters of a string, also in ``contain`` and ``like``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import Enum
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
from langchain_core.structured_query import (
    Comparator,
    Comparison,
    Operation,
    Operator,
    Visitor,
)
from numpy.typing import NDArray

from rasa_context_retrieval.filters.absence import HasAttribute, PresenceVisitor
from rasa_context_retrieval.filters.values import (
    Operand,
    comparison_operands,
    epoch_days,
    epoch_seconds,
)

Selection = TypeVar("Selection")
Mask = NDArray[np.bool_]

ORDERINGS = (Comparator.GT, Comparator.GTE, Comparator.LT, Comparator.LTE)


class Facet(Enum):
    """A typed reading of an attribute's values, besides its text."""

    NUMBER = "number"
    """float, from a number or decimal text."""
    DAY = "day"
    """int, days since 1970-01-01 (UTC)."""
    INSTANT = "instant"
    """int, seconds since 1970-01-01T00:00:00 UTC."""
    BOOLEAN = "boolean"
    """bool, from a bool or the text ``true``/``false``."""


class Selections(Protocol[Selection]):
    """The primitive selections a backend spells (a mask, an expression, ...)."""

    def nothing(self) -> Selection: ...

    def everything(self) -> Selection: ...

    def all_of(self, parts: Sequence[Selection]) -> Selection:
        """Never called with an empty sequence."""
        ...

    def any_of(self, parts: Sequence[Selection]) -> Selection:
        """Never called with an empty sequence."""
        ...

    def complement(self, part: Selection) -> Selection: ...

    def having(self, attribute: str) -> Selection:
        """Chunks having the attribute (not missing)."""
        ...

    def texts(
        self, attribute: str, texts: Sequence[str], *, scalars: bool, members: bool
    ) -> Selection:
        """Chunks whose scalar text (``scalars``) or some list member (``members``) is one of
        ``texts`` (normalised, sorted, distinct, never empty)."""
        ...

    def facet_in(self, attribute: str, facet: Facet, values: Sequence[Any]) -> Selection:
        """Chunks whose ``facet`` reading is one of ``values`` (sorted, distinct, never empty)."""
        ...

    def facet_ordered(
        self, attribute: str, facet: Facet, comparator: Comparator, bound: Any
    ) -> Selection:
        """Chunks whose ``facet`` reading compares with ``bound`` as ``comparator`` says."""
        ...

    def vocabulary(self, attribute: str) -> NDArray[Any]:
        """The attribute's distinct normalised strings (scalars and list members), as a numpy
        ``StringDType`` array."""
        ...


class FilterSemantics(Visitor, PresenceVisitor, Generic[Selection]):
    """Lower a filter onto a backend's ``Selections`` (the module docstring is the meaning)."""

    allowed_comparators = tuple(Comparator)
    allowed_operators = tuple(Operator)

    def __init__(self, selections: Selections[Selection]) -> None:
        self.selections = selections

    def visit_operation(self, operation: Operation) -> Selection:
        self._validate_func(operation.operator)
        parts = [argument.accept(self) for argument in operation.arguments]
        if operation.operator == Operator.AND:
            return self.selections.all_of(parts) if parts else self.selections.everything()
        either = self._any(parts)
        return either if operation.operator == Operator.OR else self.selections.complement(either)

    def visit_comparison(self, comparison: Comparison) -> Selection:
        self._validate_func(comparison.comparator)
        attribute, comparator = comparison.attribute, comparison.comparator
        in_or_nin = comparator in (Comparator.IN, Comparator.NIN)
        operands = comparison_operands(in_or_nin, comparison.value)
        if not attribute:
            return self.selections.nothing()  # no chunk stores an empty attribute name
        if comparator in ORDERINGS:
            return self._ordered(attribute, operands[0], comparator)
        if comparator in (Comparator.EQ, Comparator.IN):
            return self._equal(attribute, operands)
        if comparator in (Comparator.NE, Comparator.NIN):
            if operands and not any(operand.comparable for operand in operands):
                return self.selections.nothing()
            having = self.selections.having(attribute)
            equal = self._equal(attribute, operands)
            return self.selections.all_of([having, self.selections.complement(equal)])
        if comparator == Comparator.CONTAIN:
            return self._contain(attribute, operands[0])
        return self._like(attribute, operands[0])

    def visit_has_attribute(self, has_attribute: HasAttribute) -> Selection:
        if not has_attribute.attribute:
            return self.selections.nothing()
        return self.selections.having(has_attribute.attribute)

    def _any(self, parts: Sequence[Selection]) -> Selection:
        return self.selections.any_of(parts) if parts else self.selections.nothing()

    def _equal(self, attribute: str, operands: Sequence[Operand]) -> Selection:
        s = self.selections
        parts = []
        texts = sorted({op.text for op in operands if op.text is not None})
        if texts:
            parts.append(s.texts(attribute, texts, scalars=True, members=True))
        readings: dict[Facet, set[Any]] = {
            Facet.NUMBER: {op.number for op in operands if op.number is not None},
            Facet.DAY: {
                epoch_days(op.instant)
                for op in operands
                if op.instant is not None and not op.has_time
            },
            Facet.INSTANT: {
                epoch_seconds(op.instant)
                for op in operands
                if op.instant is not None and op.has_time
            },
            Facet.BOOLEAN: {op.boolean for op in operands if op.boolean is not None},
        }
        for facet, values in readings.items():
            if values:
                parts.append(s.facet_in(attribute, facet, sorted(values)))
        return self._any(parts)

    def _ordered(self, attribute: str, operand: Operand, comparator: Comparator) -> Selection:
        s = self.selections
        parts = []
        if operand.number is not None:
            parts.append(s.facet_ordered(attribute, Facet.NUMBER, comparator, operand.number))
        if operand.instant is not None:
            if operand.has_time:
                bound = epoch_seconds(operand.instant)
                parts.append(s.facet_ordered(attribute, Facet.INSTANT, comparator, bound))
            else:
                bound = epoch_days(operand.instant)
                parts.append(s.facet_ordered(attribute, Facet.DAY, comparator, bound))
        return self._any(parts)

    def _contain(self, attribute: str, operand: Operand) -> Selection:
        if operand.text is None:
            return self._equal(attribute, [operand])
        vocabulary = self.selections.vocabulary(attribute)
        substrings = _entries(vocabulary, containing(vocabulary, operand.text))
        parts = [self.selections.texts(attribute, [operand.text], scalars=False, members=True)]
        if substrings:
            parts.append(self.selections.texts(attribute, substrings, scalars=True, members=False))
        return self._any(parts)

    def _like(self, attribute: str, operand: Operand) -> Selection:
        if operand.text is None:
            return self.selections.nothing()
        vocabulary = self.selections.vocabulary(attribute)
        matching = _entries(vocabulary, like(vocabulary, operand.text))
        if not matching:
            return self.selections.nothing()
        return self.selections.texts(attribute, matching, scalars=True, members=True)


def _entries(vocabulary: NDArray[Any], selected: Mask) -> list[str]:
    return sorted(str(text) for text in vocabulary[selected])


def containing(vocabulary: NDArray[Any], needle: str) -> Mask:
    """Vocabulary entries containing ``needle``.

    numpy's string functions drop trailing NUL characters, so a needle with a NUL would become
    "" there and match everything; such (hostile) needles are checked in Python.
    """
    if "\0" in needle:
        return np.fromiter((needle in str(text) for text in vocabulary), bool, len(vocabulary))
    return np.asarray(np.strings.find(vocabulary, needle) >= 0)


def like(vocabulary: NDArray[Any], pattern: str) -> Mask:
    """Which vocabulary entries match an SQL LIKE pattern (already casefolded).

    Hand-written because no library matches SQL LIKE on numpy strings (``fnmatch`` uses ``*``/``?``
    and treats ``[`` specially); the common shapes stay vectorised.
    """
    if "%" not in pattern and "_" not in pattern:
        return containing(vocabulary, pattern)
    inner = pattern.strip("%")
    if "%" not in inner and "_" not in inner and "\0" not in inner:
        if pattern.startswith("%") and pattern.endswith("%"):
            return containing(vocabulary, inner)
        if pattern.endswith("%"):
            return np.asarray(np.strings.startswith(vocabulary, inner))
        return np.asarray(np.strings.endswith(vocabulary, inner))
    # numpy has no vectorised regex; this loops over distinct values, not over rows.
    regex = re.compile(
        "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern),
        re.DOTALL,
    )
    return np.fromiter(
        (regex.fullmatch(str(text)) is not None for text in vocabulary),
        dtype=bool,
        count=len(vocabulary),
    )
