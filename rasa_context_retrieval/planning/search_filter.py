"""The filter of one search, assembled in one place from its parts.

A search is filtered by four kinds of condition, in order of trust:

* the **scope**, never relaxed: the access filter (from trusted channel metadata), the static
  filter (configuration) and the slot filter (slots);
* the **words**, which may be relaxed: the filter of the latest message (rules or an LLM) and the
  filter carried from earlier turns of the same subject (``planning.carried_filters``).

From these, :class:`SearchFilter` derives, once, everything the rest of the search needs:

* ``as_written``: ``and(scope, words)``, the filter shown to users and evaluated;
* ``for_backend``: the scope as is AND the words widened by ``absent_means_all``
  (``filters.absence``), which the backend runs and the result check re-checks;
* ``widened``: whether the two differ, so that results specific to the words come first;
* ``without_words``: the same scope with the words dropped (the relaxed search);
* ``without_carried``: the carried conditions dropped (a carried filter that hid every
  confident match of the latest message, ``engine.search``).

Nothing the user types can widen the scope: the words are only ever another conjunct.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from langchain_core.structured_query import FilterDirective

from rasa_context_retrieval.access.entitlements import AccessFilter
from rasa_context_retrieval.filters.absence import notes_on_absence, widened_filter
from rasa_context_retrieval.filters.syntax import conjoin
from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.retrieve.conformance import conforming


@dataclass(frozen=True)
class SearchFilter:
    """Every part of one search's filter, and what is derived from them (module docstring)."""

    access: AccessFilter | None = None
    static: FilterDirective | None = None
    slots: FilterDirective | None = None
    extracted: FilterDirective | None = None
    """From the latest message's words."""
    carried: FilterDirective | None = None
    """From earlier turns of the same subject (``planning.carried_filters``)."""
    absent_means_all: tuple[str, ...] = field(default=())
    """Attributes whose absence from a document means "applies to all" (``filters.absence``)."""

    @cached_property
    def scope(self) -> FilterDirective | None:
        """What is never relaxed: access AND static AND slot filters."""
        access = self.access.directive if self.access is not None else None
        return conjoin(access, self.static, self.slots)

    @cached_property
    def words(self) -> FilterDirective | None:
        """The conditions from the user's words: this message's and the carried ones."""
        return conjoin(self.extracted, self.carried)

    @property
    def has_words(self) -> bool:
        """Whether any condition comes from the user's words (only those may be relaxed)."""
        return self.extracted is not None or self.carried is not None

    @cached_property
    def as_written(self) -> FilterDirective | None:
        """The scope AND the words, taken strictly: what users see and evaluation checks."""
        return conjoin(self.scope, self.extracted, self.carried)

    @cached_property
    def for_backend(self) -> FilterDirective | None:
        """What the backend runs and the result check re-checks: the scope as is, the words
        widened where ``absent_means_all`` says a document lacking the attribute applies."""
        return widened_filter(self.scope, self.words, self.absent_means_all)

    @property
    def widened(self) -> bool:
        """Whether ``absent_means_all`` lets general documents in beside the specific ones."""
        return self.for_backend != self.as_written

    @cached_property
    def notes(self) -> tuple[str, ...]:
        """One remark per ``absent_means_all`` attribute the words test (for the explanation)."""
        return notes_on_absence(self.words, self.absent_means_all)

    def without_words(self) -> SearchFilter:
        """The same scope, the words dropped: the filter of a relaxed search."""
        return replace(self, extracted=None, carried=None)

    def without_carried(self) -> SearchFilter:
        """The same filter without the conditions carried from earlier turns."""
        return replace(self, carried=None)

    def check(self, chunks: Sequence[Chunk]) -> tuple[list[bool], int]:
        """For each chunk the backend returned, whether it satisfies ``for_backend`` and the
        exact access rule; and how many the access rule alone rejected
        (``retrieve.conformance``)."""
        return conforming(chunks, self.for_backend, self.access)
