"""The row masks of recent filters over one index, so that a filter searches share is run once.

Filters repeat from search to search: a conversation keeps its access, static and slot filters turn
after turn, and many conversations share slot values. Evaluating one over the metadata columns is
numpy work on every row plus the walk of the filter tree in Python, every time. An index never
changes once built (a refresh publishes a new one), so a mask stays right for the whole life of
its index; the masks belong to the index and go with it when it is replaced.

A filter is known by its tree: each condition's operator, attribute and value, the value with its
type and ``repr`` (``'1'``, ``1``, ``1.0`` and ``True`` differ), so two filters that share a key
select the same rows; at worst two spellings of one filter are kept twice. (pydantic's own ``repr``
of the tree would do too, but costs about half of evaluating the filter.) Masks are read-only: one
array serves any number of threads at once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

import numpy as np
from langchain_core.structured_query import Comparison, FilterDirective, Operation
from numpy.typing import NDArray

from rasa_context_retrieval.filters.columns import MetadataColumns
from rasa_context_retrieval.filters.faiss_translator import FaissTranslator

MASKS_BYTES = 32 * 1024 * 1024
"""Memory the masks of one index may take (one byte per row each): 32 masks at a million chunks."""
MAX_MASKS = 256
"""Masks kept at most, however small the index."""


class FilterMasks:
    """``mask(directive)``: the rows a filter allows, from the most recently used ones if known."""

    def __init__(self, columns: MetadataColumns, budget_bytes: int = MASKS_BYTES) -> None:
        self._columns = columns
        self._capacity = max(1, min(MAX_MASKS, budget_bytes // max(len(columns), 1)))
        self._masks: OrderedDict[Hashable, NDArray[np.bool_]] = OrderedDict()
        self._lock = threading.Lock()

    def mask(self, directive: FilterDirective) -> NDArray[np.bool_]:
        key = filter_key(directive)
        with self._lock:
            mask = self._masks.get(key)
            if mask is not None:
                self._masks.move_to_end(key)
                return mask
        mask = np.asarray(directive.accept(FaissTranslator(self._columns)), dtype=bool)
        mask.flags.writeable = False
        with self._lock:
            self._masks[key] = mask
            if len(self._masks) > self._capacity:
                self._masks.popitem(last=False)
        return mask


def filter_key(directive: FilterDirective) -> Hashable:
    """What tells one filter from another: its tree with every value's type and ``repr``."""
    if isinstance(directive, Comparison):
        value = directive.value
        return (directive.comparator.value, directive.attribute, type(value), repr(value))
    if isinstance(directive, Operation):
        return (directive.operator.value, *(filter_key(part) for part in directive.arguments))
    return (type(directive), repr(directive))  # e.g. absence's HasAttribute
