"""A columnar, read-only view of the chunks' metadata, so that filters run as numpy operations.

Document metadata comes from front matter and is loosely typed: one attribute can hold a string,
a list of strings (``platform: [android, ios]``), a number (also written as ``"19.99"``), a bool,
a date (``2024-03-01``, a datetime string or a ``date`` object) or nothing at all. Evaluating a
filter row by row in Python would cost milliseconds per comparison on a large index, so each
attribute is read once, on first use, into typed numpy columns:

* text: every string value, trimmed and casefolded, encoded as codes into a sorted vocabulary;
  scalar strings as one code per row (``-1`` for none), list members as (row, code) pairs;
* numbers, including numeric strings, as two parts (``filters.values.number_parts``): the
  nearest float64 (NaN for none) and the exact integer remainder (int64, 0 for every float and
  every integer below 2**53), so 64-bit ids compare exactly;
* dates as days (``datetime64[D]``) and instants (``datetime64[s]``, UTC), NaT for none;
* booleans (int8: -1 none, 0 false, 1 true), including the strings ``"true"``/``"false"``.

Empty strings, empty lists, ``None`` and values of other types count as missing. Columns are
built under a lock and never modified afterwards, so any number of threads may read them.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np
import structlog
from numpy.typing import NDArray

from rasa_context_retrieval.filters.values import (  # noqa: F401  (re-exported)
    Number,
    normalise_text,
    number_parts,
    parse_instant,
    parse_number,
    read_string,
    stored_value,
)

logger = structlog.get_logger(__name__)

NO_CODE = -1
"""Row code of a row without a scalar string value."""

SLICED_CODES_MAX = 32
"""Up to this many selected strings, list members are found by slicing the code-ordered pairs."""

_DAY = "datetime64[D]"
_INSTANT = "datetime64[s]"


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
    """List members as (row, code) pairs, ordered by code: a code's rows are one slice."""
    numbers: NDArray[np.float64]
    remainders: NDArray[np.int64]
    """What each number exceeds its float by (``filters.values.number_parts``)."""
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
            codes = np.flatnonzero(selected)
            if len(codes) <= SLICED_CODES_MAX:
                # Touches only the selected codes' pairs instead of testing every pair.
                starts = np.searchsorted(self.list_codes, codes, side="left")
                ends = np.searchsorted(self.list_codes, codes, side="right")
                for start, end in zip(starts, ends, strict=True):
                    mask[self.list_rows[start:end]] = True
            else:
                mask[self.list_rows[selected[self.list_codes]]] = True
        return mask


@dataclass(frozen=True)
class _StringReading:
    """Everything one distinct raw string value means, as column entries."""

    text: str
    number: float
    remainder: int
    instant: np.datetime64
    boolean: int

    @classmethod
    def of(cls, raw: str) -> _StringReading:
        reading = read_string(raw)
        number, remainder = (np.nan, 0) if reading.number is None else number_parts(reading.number)
        return cls(
            text=reading.text,
            number=number,
            remainder=remainder,
            instant=_instant(reading.instant),
            boolean=-1 if reading.boolean is None else int(reading.boolean),
        )


def _instant(instant: dt.datetime | None) -> np.datetime64:
    return np.datetime64("NaT") if instant is None else np.datetime64(instant, "s")


Entry = TypeVar("Entry")


@dataclass
class _Entries(Generic[Entry]):
    """The values of one kind an attribute holds, each with the row it stands in."""

    rows: list[int] = field(default_factory=list)
    values: list[Entry] = field(default_factory=list)

    def add(self, row: int, *values: Entry) -> None:
        self.rows.extend([row] * len(values))
        self.values.extend(values)


class _ColumnBuilder:
    """Sorts one attribute's values by type, then freezes them as numpy arrays.

    Metadata strings repeat a lot (plans, regions, dates), so each distinct string is parsed once
    and spread to its rows with numpy indexing.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.strings: _Entries[str] = _Entries()
        self.members: _Entries[str] = _Entries()
        self.numbers: _Entries[Number] = _Entries()
        self.instants: _Entries[np.datetime64] = _Entries()
        self.booleans: _Entries[int] = _Entries()

    def add(self, row: int, value: Any) -> None:
        stored = stored_value(value)
        if stored is None:
            return
        if stored.string is not None:
            self.strings.add(row, stored.string)
        elif stored.boolean is not None:
            self.booleans.add(row, int(stored.boolean))
        elif stored.number is not None:
            self.numbers.add(row, stored.number)
        elif stored.instant is not None:
            self.instants.add(row, _instant(stored.instant))
        else:
            self.members.add(row, *stored.members)

    def freeze(self) -> AttributeColumn:
        distinct = list(dict.fromkeys([*self.strings.values, *self.members.values]))
        readings = [_StringReading.of(raw) for raw in distinct]
        texts = sorted({reading.text for reading in readings})
        codes = {text: code for code, text in enumerate(texts)}
        slot = {raw: i for i, raw in enumerate(distinct)}
        distinct_codes = np.array([codes[r.text] for r in readings], dtype=np.int32)

        present = np.zeros(self.n, dtype=bool)
        row_codes = np.full(self.n, NO_CODE, dtype=np.int32)
        numbers_ = np.full(self.n, np.nan)
        remainders = np.zeros(self.n, dtype=np.int64)
        instants = np.full(self.n, np.datetime64("NaT"), dtype=_INSTANT)
        booleans = np.full(self.n, -1, dtype=np.int8)

        rows = np.array(self.strings.rows, dtype=np.intp)
        which = np.array([slot[raw] for raw in self.strings.values], dtype=np.intp)
        present[rows] = True
        if len(which):
            row_codes[rows] = distinct_codes[which]
            numbers_[rows] = np.array([r.number for r in readings])[which]
            remainders[rows] = np.array([r.remainder for r in readings], dtype=np.int64)[which]
            instants[rows] = np.array([r.instant for r in readings], dtype=_INSTANT)[which]
            booleans[rows] = np.array([r.boolean for r in readings], dtype=np.int8)[which]
        parts = [number_parts(number) for number in self.numbers.values]
        present[self.numbers.rows] = True
        numbers_[self.numbers.rows] = [rounded for rounded, _ in parts]
        remainders[self.numbers.rows] = [remainder for _, remainder in parts]
        for entries, target in (
            (self.instants, instants),
            (self.booleans, booleans),
        ):
            present[entries.rows] = True
            target[entries.rows] = entries.values
        list_rows = np.array(self.members.rows, dtype=np.int32)
        present[list_rows] = True
        list_codes = distinct_codes[
            np.array([slot[raw] for raw in self.members.values], dtype=np.intp)
        ]
        by_code = np.argsort(list_codes, kind="stable")
        list_rows, list_codes = list_rows[by_code], list_codes[by_code]
        return _frozen(
            AttributeColumn(
                present=present,
                vocabulary=np.array(texts, dtype=np.dtypes.StringDType()),
                vocabulary_codes=codes,
                row_codes=row_codes,
                list_rows=list_rows,
                list_codes=list_codes.astype(np.int32),
                numbers=numbers_,
                remainders=remainders,
                days=instants.astype(_DAY),
                instants=instants,
                booleans=booleans,
                spellings=frozenset(raw.strip() for raw in distinct),
            )
        )


def _frozen(column: AttributeColumn) -> AttributeColumn:
    arrays: tuple[NDArray[Any], ...] = (
        column.present,
        column.row_codes,
        column.list_rows,
        column.list_codes,
        column.numbers,
        column.remainders,
        column.days,
        column.instants,
        column.booleans,
    )
    for array in arrays:
        array.flags.writeable = False
    return column


class MetadataColumns:
    """Columnar, read-only view of the metadata of an index's chunks, row i = chunk i.

    Built once per index; an attribute's columns are created on first use and cached. Safe for
    concurrent readers.
    """

    def __init__(self, metadatas: Sequence[Mapping[str, Any]]) -> None:
        self._metadatas = tuple(metadatas)
        self._rows = len(self._metadatas)
        self._attributes = frozenset(key for metadata in self._metadatas for key in metadata)
        self._columns: dict[str, AttributeColumn] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_columns(cls, rows: int, columns: Mapping[str, AttributeColumn]) -> MetadataColumns:
        """Columns of every attribute, built earlier (read back with a persisted index)."""
        prebuilt = cls(())
        prebuilt._rows = rows
        prebuilt._attributes = frozenset(columns)
        prebuilt._columns = dict(columns)
        return prebuilt

    def __len__(self) -> int:
        return self._rows

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
