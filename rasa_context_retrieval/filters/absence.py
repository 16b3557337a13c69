"""Attributes whose absence means "applies to all": one rewrite of the filter IR, for every backend.

Some attributes only narrow a document down: a page about offline files on Android carries
``platform: [android]``, the general page about offline files carries no ``platform`` because it
holds for every app. With plain filter semantics (``filters.faiss_translator``) a chunk
lacking an attribute matches no comparison on it, so ``eq("platform", "android")`` would hide the
general page exactly when it is the right answer. ``metadata_fields`` entries with
``absent_means_all: true`` change that, and this module is the only place that says how.

The rule: **a chunk lacking such an attribute is never excluded by a condition on it.** Every
comparison on the attribute, negated or not, holds for that chunk; chunks having the attribute
are judged exactly as before. The rewrite spells this in the IR itself, so each backend only
has to spell one new leaf, :class:`HasAttribute` (a FAISS presence mask, a Milvus ``exists``).
A translator spells it by implementing :class:`PresenceVisitor`; ``HasAttribute.accept`` calls
that method explicitly instead of LangChain's name-based dispatch, so a stock LangChain translator
(which knows only comparisons and operations) gets :class:`PresenceNotSupported` saying what to
do, never an ``AttributeError`` from inside LangChain:

* a comparison ``C`` on a flagged attribute ``a`` under an even number of ``not`` becomes
  ``or(C, not(has(a)))``;
* under an odd number of ``not`` it stays ``C``: plain comparisons are already false on a chunk
  lacking ``a``, so the enclosing ``not`` already lets it through (``and(C, has(a))`` would be
  the same mask, written longer);
* ``and``/``or`` keep the polarity, ``not`` flips it (``not(x, y)`` is ``not(or(x, y))``).

Truth table for a chunk **lacking** a flagged ``platform`` (a chunk having it is unaffected)::

    filter                                   plain   absent_means_all
    eq("platform", "android")                false   true
    ne("platform", "android")                false   true
    in / nin / contain / like / gt ...       false   true
    not(eq("platform", "android"))           true    true
    not(ne("platform", "android"))           true    true
    not(not(eq("platform", "android")))      false   true
    and(eq("platform", "android"), X)        false   X
    or(eq("platform", "android"), X)         X       true

So ``ne`` and ``not(eq)`` mean the same here ("not specific to Android"), whichever of the two
a rule or an LLM writes. The result is never narrower than the plain filter: only conditions
that can let chunks through are loosened, and only for chunks lacking the attribute.

Only the filter read from the user's words goes through this rewrite. Slot filters (the user's
stated scope) stay strict: a slot never admits a chunk that lacks its attribute, whatever the flag
says. Access filters have their own absence rule (a chunk without the attribute is public,
:mod:`rasa_context_retrieval.access.entitlements`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any, Protocol, runtime_checkable

from langchain_core.structured_query import (
    Comparison,
    FilterDirective,
    Operation,
    Operator,
    Visitor,
)

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import attributes_of, conjoin


class PresenceNotSupported(ContextRetrievalError, ValueError):
    """A translator was asked to spell :class:`HasAttribute` and cannot.

    A ``ValueError``, like the one a LangChain translator raises for a comparator it does not
    allow.
    """


@runtime_checkable
class PresenceVisitor(Protocol):
    """A translator that can spell "chunks having this attribute" (ours all do)."""

    def visit_has_attribute(self, has_attribute: HasAttribute) -> Any:
        """The backend's selection of chunks that carry ``has_attribute.attribute``."""
        ...


class HasAttribute(FilterDirective):
    """True for chunks that carry ``attribute`` (a value the columns do not count as missing).

    Not part of LangChain's filter syntax: it exists only between this rewrite and a backend,
    whose translator implements :class:`PresenceVisitor`.
    """

    attribute: str

    def accept(self, visitor: Visitor) -> Any:
        """``visitor.visit_has_attribute(self)``, or a typed error if it cannot spell presence."""
        if isinstance(visitor, PresenceVisitor):
            return visitor.visit_has_attribute(self)
        raise PresenceNotSupported(
            f"{type(visitor).__name__} cannot select documents having '{self.attribute}', "
            f"which absent_means_all needs; use a translator that implements "
            f"visit_has_attribute (FaissTranslator, MilvusExpressionTranslator), or remove "
            f"absent_means_all from the metadata field '{self.attribute}'"
        )


def lacks(attribute: str) -> Operation:
    """Chunks without ``attribute``."""
    return Operation(operator=Operator.NOT, arguments=[HasAttribute(attribute=attribute)])


def include_documents_lacking(
    directive: FilterDirective | None, attributes: Collection[str]
) -> FilterDirective | None:
    """``directive`` rewritten so that chunks lacking any of ``attributes`` pass (module doc)."""
    if directive is None or not attributes:
        return directive
    return _rewrite(directive, frozenset(attributes), positive=True)


def absent_means_all(fields: Iterable[MetadataField]) -> tuple[str, ...]:
    """The names of the fields flagged ``absent_means_all``, in the order declared."""
    return tuple(field.name for field in fields if field.absent_means_all)


def search_filter(
    slot_filter: FilterDirective | None,
    extracted_filter: FilterDirective | None,
    fields: Iterable[MetadataField],
) -> FilterDirective | None:
    """The filter a backend runs: the slot filter as is, AND the extracted one rewritten."""
    return widened_filter(slot_filter, extracted_filter, absent_means_all(fields))


def widened_filter(
    scope: FilterDirective | None, words: FilterDirective | None, flagged: Collection[str]
) -> FilterDirective | None:
    """``scope`` as is AND ``words`` rewritten so that chunks lacking a ``flagged`` attribute
    pass (``filters.assembly.SearchFilter.for_backend`` is the search's one use of it)."""
    return conjoin(scope, include_documents_lacking(words, flagged))


def absence_notes(
    extracted_filter: FilterDirective | None, fields: Iterable[MetadataField]
) -> tuple[str, ...]:
    """One remark per flagged attribute the extracted filter tests, for the search explanation."""
    return notes_on_absence(extracted_filter, absent_means_all(fields))


def notes_on_absence(
    extracted_filter: FilterDirective | None, flagged: Iterable[str]
) -> tuple[str, ...]:
    """:func:`absence_notes` for the flagged attribute names."""
    tested = attributes_of(extracted_filter)
    return tuple(
        f"documents without '{name}' also match (absent_means_all)"
        for name in flagged
        if name in tested
    )


def _rewrite(
    directive: FilterDirective, attributes: frozenset[str], *, positive: bool
) -> FilterDirective:
    if isinstance(directive, Comparison):
        if positive and directive.attribute in attributes:
            return Operation(
                operator=Operator.OR, arguments=[directive, lacks(directive.attribute)]
            )
        return directive
    if isinstance(directive, Operation):
        inner = not positive if directive.operator == Operator.NOT else positive
        return Operation(
            operator=directive.operator,
            arguments=[
                _rewrite(argument, attributes, positive=inner) for argument in directive.arguments
            ],
        )
    return directive
