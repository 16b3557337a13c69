"""Persisting ``MetadataColumns``, so that a restarted index filters without re-reading metadata.

Building the typed columns means reading every chunk's metadata, which at a million chunks takes
longer than the whole restart should (bench/results/scale.md). They are built once when an index is
written and stored as plain ``.npy`` arrays (mapped read-only on load, so worker processes share
them) plus a JSON file per attribute for its strings. Attribute names are free text (front matter
keys), so each attribute gets a numbered folder and ``attributes.json`` maps names to folders. No
pickle: every array has a plain dtype.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.filters.columns import AttributeColumn, MetadataColumns

COLUMNS_VERSION = 2
"""Version 2 added the numbers' exact remainders; older columns are rebuilt from the chunks."""
OLDER_VERSIONS = (1,)
ATTRIBUTES_FILE = "attributes.json"
STRINGS_FILE = "strings.json"
ROW_ARRAYS = {
    "present": np.dtype(np.bool_),
    "row_codes": np.dtype(np.int32),
    "numbers": np.dtype(np.float64),
    "remainders": np.dtype(np.int64),
    "days": np.dtype("datetime64[D]"),
    "instants": np.dtype("datetime64[s]"),
    "booleans": np.dtype(np.int8),
}
"""Arrays with one entry per row, and their dtypes."""
LIST_ARRAYS = {"list_rows": np.dtype(np.int32), "list_codes": np.dtype(np.int32)}
"""Arrays with one entry per list member, and their dtypes."""


class ColumnFilesError(ContextRetrievalError, ValueError):
    """Persisted columns are missing, truncated or do not fit the index they belong to."""


def write_columns(columns: MetadataColumns, folder: Path) -> None:
    """Build every attribute's columns (if not built yet) and write them into ``folder``."""
    folder.mkdir(parents=True)
    names = sorted(columns.attributes())
    for number, name in enumerate(names):
        column = columns.column(name)
        target = folder / str(number)
        target.mkdir()
        for field in (*ROW_ARRAYS, *LIST_ARRAYS):
            np.save(target / f"{field}.npy", getattr(column, field), allow_pickle=False)
        strings = {"vocabulary": column.vocabulary.tolist(), "spellings": sorted(column.spellings)}
        (target / STRINGS_FILE).write_text(json.dumps(strings), encoding="ascii")
    manifest = {"version": COLUMNS_VERSION, "rows": len(columns), "attributes": names}
    (folder / ATTRIBUTES_FILE).write_text(json.dumps(manifest), encoding="ascii")


def read_columns(folder: Path, rows: int) -> MetadataColumns | None:
    """The columns written by ``write_columns`` for an index of ``rows`` chunks; ``None`` when an
    older release wrote them without what exact comparisons need (build them from the chunks)."""
    try:
        manifest = json.loads((folder / ATTRIBUTES_FILE).read_text(encoding="ascii"))
        if manifest.get("version") in OLDER_VERSIONS:
            return None
        if manifest.get("version") != COLUMNS_VERSION or manifest.get("rows") != rows:
            raise ColumnFilesError(
                f"columns version {manifest.get('version')} for {manifest.get('rows')} rows, "
                f"expected version {COLUMNS_VERSION} for {rows} rows"
            )
        columns = {
            name: _read_attribute(folder / str(number), rows)
            for number, name in enumerate(manifest["attributes"])
        }
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ColumnFilesError(f"cannot read metadata columns in '{folder}': {error}") from error
    return MetadataColumns.from_columns(rows, columns)


def _read_attribute(folder: Path, rows: int) -> AttributeColumn:
    arrays = {field: _array(folder, field, dtype, rows) for field, dtype in ROW_ARRAYS.items()}
    members = len(np.load(folder / "list_rows.npy", mmap_mode="r", allow_pickle=False))
    arrays |= {field: _array(folder, field, dtype, members) for field, dtype in LIST_ARRAYS.items()}
    strings = json.loads((folder / STRINGS_FILE).read_text(encoding="ascii"))
    vocabulary = [str(text) for text in strings["vocabulary"]]
    if np.any(np.diff(arrays["list_codes"]) < 0):
        raise ColumnFilesError(f"list members in '{folder}' are not ordered by code")
    for field, lowest in (("row_codes", -1), ("list_codes", 0)):
        codes = arrays[field]
        if len(codes) and (int(codes.min()) < lowest or int(codes.max()) >= len(vocabulary)):
            raise ColumnFilesError(f"'{field}' in '{folder}' point outside its vocabulary")
    return AttributeColumn(
        vocabulary=np.array(vocabulary, dtype=np.dtypes.StringDType()),
        vocabulary_codes={text: code for code, text in enumerate(vocabulary)},
        spellings=frozenset(str(text) for text in strings["spellings"]),
        **arrays,
    )


def _array(folder: Path, field: str, dtype: np.dtype[Any], length: int) -> NDArray[Any]:
    array = np.load(folder / f"{field}.npy", mmap_mode="r", allow_pickle=False)
    if array.dtype != dtype or array.shape != (length,):
        raise ColumnFilesError(
            f"'{field}' in '{folder}' is {array.dtype}{array.shape}, expected {dtype}({length},)"
        )
    return array
