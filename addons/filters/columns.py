"""A columnar, read-only view of the chunks' metadata, so that filters run as numpy operations.

Document metadata comes from front matter and is loosely typed: one attribute can hold a string,
a list of strings (``platform: [android, ios]``), a number (also written as ``"19.99"``), a bool,
a date (``2024-03-01``, a datetime string or a ``date`` object) or nothing at all. Evaluating a
filter row by row in Python would cost milliseconds per comparison on a large index, so each
attribute is read once, on first use, into typed numpy columns:

* text: every string value, trimmed and casefolded, encoded as codes into a sorted vocabulary;
  scalar strings as one code per row (``-1`` for none), list members as (row, code) pairs;
* numbers (float64, NaN for none), including numeric strings;
* dates as days (``datetime64[D]``) and instants (``datetime64[s]``, UTC), NaT for none;
* booleans (int8: -1 none, 0 false, 1 true), including the strings ``"true"``/``"false"``.

Empty strings, empty lists, ``None`` and values of other types count as missing. Columns are
built under a lock and never modified afterwards, so any number of threads may read them.
"""

from __future__ import annotations

import datetime as dt
import numbers
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import structlog
from numpy.typing import NDArray

logger = structlog.get_logger(__name__)

NO_CODE = -1
"""Row code of a row without a scalar string value."""

_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_DATE_START = re.compile(r"\d{4}-\d{2}-\d{2}")
_BOOLEAN_WORDS = {"true": 1, "false": 0}
_DAY = "datetime64[D]"
_INSTANT = "datetime64[s]"


def normalise_text(text: str) -> str:
    """The form in which strings are compared: trimmed and casefolded."""
    return text.strip().casefold()


def parse_number(text: str) -> float | None:
    """A finite number written as decimal text, else ``None``."""
    text = text.strip()
    if not _NUMBER.fullmatch(text):
        return None
    number = float(text)
    return number if np.isfinite(number) else None


def parse_instant(value: Any) -> dt.datetime | None:
    """A naive UTC datetime from a date, a datetime or an ISO 8601 string, else ``None``.

    Strings are upper-cased first, so that a casefolded ``2024-03-01t10:00:00z`` still reads.
    """
    if isinstance(value, dt.datetime):
        instant = value
    elif isinstance(value, dt.date):
        instant = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str) and _DATE_START.match(value.strip()):
        try:
            instant = dt.datetime.fromisoformat(value.strip().upper())
        except ValueError:
            return None
    else:
        return None
    if instant.tzinfo is not None:
        instant = instant.astimezone(dt.UTC).replace(tzinfo=None)
    return instant


@dataclass(frozen=True)
class AttributeColumn:
    """One attribute of every chunk, as typed numpy arrays (see module docstring)."""

    present: NDArray[np.bool_]
    vocabulary: NDArray[Any]
    """Distinct normalised strings, sorted; a numpy ``StringDType`` array."""
    vocabulary_codes: Mapping[str, int]
    row_codes: NDArray[np.int32]
    list_rows: NDArray[np.int32]
    list_codes: NDArray[np.int32]
    numbers: NDArray[np.float64]
    days: NDArray[np.datetime64]
    instants: NDArray[np.datetime64]
    booleans: NDArray[np.int8]
    spellings: frozenset[str]
    """Distinct string values as written (trimmed), list members included."""

    def rows_with_text(
        self, selected: NDArray[np.bool_], *, scalars: bool = True, lists: bool = True
    ) -> NDArray[np.bool_]:
        """Rows whose scalar string / any list member is a selected vocabulary entry."""
        if not scalars:
            mask = np.zeros(len(self.present), dtype=bool)
        elif selected.sum() == 1:
            mask = self.row_codes == np.flatnonzero(selected)[0]
        else:
            # Row code -1 (no scalar string) indexes the appended False.
            mask = np.append(selected, False)[self.row_codes]
        if lists and len(self.list_rows):
            mask[self.list_rows[selected[self.list_codes]]] = True
        return mask


class _ColumnBuilder:
    """Reads one attribute of every row into Python lists, then freezes them as numpy arrays."""

    def __init__(self, n: int) -> None:
        self.present = np.zeros(n, dtype=bool)
        self.row_texts: dict[int, str] = {}
        self.list_members: list[tuple[int, str]] = []
        self.numbers = np.full(n, np.nan)
        self.instants = np.full(n, np.datetime64("NaT"), dtype=_INSTANT)
        self.booleans = np.full(n, -1, dtype=np.int8)
        self.spellings: set[str] = set()

    def add(self, row: int, value: Any) -> None:
        if isinstance(value, bool):
            self.booleans[row] = int(value)
        elif isinstance(value, numbers.Real):
            if not np.isfinite(float(value)):
                return
            self.numbers[row] = float(value)
        elif isinstance(value, dt.date):
            self._add_instant(row, value)
        elif isinstance(value, str):
            if not value.strip():
                return
            self._add_string(row, value)
        elif isinstance(value, list | tuple | set | frozenset):
            self._add_members(row, value)
            return
        else:
            return
        self.present[row] = True

    def _add_string(self, row: int, value: str) -> None:
        self.spellings.add(value.strip())
        text = normalise_text(value)
        self.row_texts[row] = text
        number = parse_number(text)
        if number is not None:
            self.numbers[row] = number
        self._add_instant(row, value)
        if text in _BOOLEAN_WORDS:
            self.booleans[row] = _BOOLEAN_WORDS[text]

    def _add_instant(self, row: int, value: Any) -> None:
        instant = parse_instant(value)
        if instant is not None:
            self.instants[row] = np.datetime64(instant, "s")

    def _add_members(self, row: int, members: Any) -> None:
        for member in members:
            if isinstance(member, bool):
                member = "true" if member else "false"
            if isinstance(member, str | numbers.Real) and str(member).strip():
                self.spellings.add(str(member).strip())
                self.list_members.append((row, normalise_text(str(member))))
                self.present[row] = True

    def freeze(self) -> AttributeColumn:
        texts = sorted({*self.row_texts.values(), *(text for _, text in self.list_members)})
        codes = {text: code for code, text in enumerate(texts)}
        row_codes = np.full(len(self.present), NO_CODE, dtype=np.int32)
        for row, text in self.row_texts.items():
            row_codes[row] = codes[text]
        list_rows = np.array([row for row, _ in self.list_members], dtype=np.int32)
        list_codes = np.array([codes[text] for _, text in self.list_members], dtype=np.int32)
        column = AttributeColumn(
            present=self.present,
            vocabulary=np.array(texts, dtype=np.dtypes.StringDType()),
            vocabulary_codes=codes,
            row_codes=row_codes,
            list_rows=list_rows,
            list_codes=list_codes,
            numbers=self.numbers,
            days=self.instants.astype(_DAY),
            instants=self.instants,
            booleans=self.booleans,
            spellings=frozenset(self.spellings),
        )
        frozen: tuple[NDArray[Any], ...] = (
            column.present,
            column.row_codes,
            column.list_rows,
            column.list_codes,
            column.numbers,
            column.days,
            column.instants,
            column.booleans,
        )
        for array in frozen:
            array.flags.writeable = False
        return column


class MetadataColumns:
    """Columnar, read-only view of the metadata of an index's chunks, row i = chunk i.

    Built once per index; an attribute's columns are created on first use and cached. Safe for
    concurrent readers.
    """

    def __init__(self, metadatas: Sequence[Mapping[str, Any]]) -> None:
        self._metadatas = tuple(metadatas)
        self._attributes = frozenset(key for metadata in self._metadatas for key in metadata)
        self._columns: dict[str, AttributeColumn] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._metadatas)

    def attributes(self) -> frozenset[str]:
        """Every attribute that at least one chunk has."""
        return self._attributes

    def values_of(self, attribute: str) -> frozenset[str]:
        """Distinct string values of an attribute as written (trimmed), list members included."""
        return self.column(attribute).spellings

    def column(self, attribute: str) -> AttributeColumn:
        """The typed columns of one attribute; an unknown attribute is missing on every row."""
        column = self._columns.get(attribute)
        if column is not None:
            return column
        if attribute not in self._attributes:
            # Not cached: attribute names may come from an LLM and are not bounded.
            return _ColumnBuilder(len(self)).freeze()
        with self._lock:
            column = self._columns.get(attribute)
            if column is None:
                column = self._build(attribute)
                self._columns[attribute] = column
        return column

    def _build(self, attribute: str) -> AttributeColumn:
        builder = _ColumnBuilder(len(self))
        for row, metadata in enumerate(self._metadatas):
            value = metadata.get(attribute)
            if value is not None:
                builder.add(row, value)
        column = builder.freeze()
        logger.debug(
            "filters.columns.built",
            attribute=attribute,
            rows=len(self),
            present=int(column.present.sum()),
            distinct_strings=len(column.vocabulary),
        )
        return column
