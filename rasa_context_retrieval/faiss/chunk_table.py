"""The chunks of a persisted index as one memory-mapped table, read back without parsing.

Reading a million chunks from one JSON document was most of the cost of a restart, although a search
only ever looks at its top ``k`` chunks (bench/results/scale.md). Here each chunk is a small JSON
record ``[id, text, metadata]`` in one byte file, found through an offsets array; opening the table
maps both files and parses nothing, and ``table[row]`` parses one record when a search returns it.

Hand-written because no dependency of the project offers random access to variable-length
records without loading them all (pyarrow would, as a large new dependency for these few lines). The
mapped arrays are read-only, so any number of threads read the table without locks, and worker
processes share its pages through the page cache. Records are ASCII JSON (non-ASCII escaped), so
any Python string, lone surrogates included, round-trips. No pickle.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import overload

import numpy as np
from numpy.typing import NDArray

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.knowledge.models import Chunk

RECORDS_FILE = "records.bin"
OFFSETS_FILE = "offsets.npy"


class ChunkTableError(ContextRetrievalError, ValueError):
    """The table files are missing, truncated or hold a record that is not a chunk."""


class ChunkTable(Sequence[Chunk]):
    """Read-only sequence of chunks, row i = chunk i of the index; parsed row by row."""

    def __init__(self, records: NDArray[np.uint8], offsets: NDArray[np.int64]) -> None:
        if offsets.ndim != 1 or len(offsets) == 0 or offsets[0] != 0:
            raise ChunkTableError("the offsets array does not start a record table at 0")
        if int(offsets[-1]) != len(records) or np.any(np.diff(offsets) <= 0):
            raise ChunkTableError(
                f"the offsets do not cover the {len(records)} bytes of records in order"
            )
        self._records = records
        self._offsets = offsets

    @staticmethod
    def write(chunks: Sequence[Chunk], folder: Path) -> None:
        """Write ``chunks`` into ``folder`` (created) as a record file and its offsets."""
        folder.mkdir(parents=True)
        lengths = np.zeros(len(chunks) + 1, dtype=np.int64)
        with open(folder / RECORDS_FILE, "wb") as records:
            for row, chunk in enumerate(chunks):
                record = json.dumps([chunk.chunk_id, chunk.text, chunk.metadata]).encode("ascii")
                records.write(record)
                lengths[row + 1] = len(record)
        np.save(folder / OFFSETS_FILE, np.cumsum(lengths), allow_pickle=False)

    @classmethod
    def read(cls, folder: Path) -> ChunkTable:
        """Map a table written by ``write``; raises ``ChunkTableError`` if it is incomplete."""
        try:
            offsets = np.load(folder / OFFSETS_FILE, mmap_mode="r", allow_pickle=False)
            size = (folder / RECORDS_FILE).stat().st_size
            # np.memmap refuses empty files; a table of zero chunks has no record bytes.
            records = (
                np.memmap(folder / RECORDS_FILE, dtype=np.uint8, mode="r")
                if size
                else np.zeros(0, dtype=np.uint8)
            )
        except (OSError, ValueError) as error:
            raise ChunkTableError(f"cannot map the chunk table in '{folder}': {error}") from error
        if offsets.dtype != np.int64:
            raise ChunkTableError(f"chunk offsets in '{folder}' are {offsets.dtype}, not int64")
        return cls(records, offsets)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, row: int) -> Chunk: ...

    @overload
    def __getitem__(self, row: slice) -> list[Chunk]: ...

    def __getitem__(self, row: int | slice) -> Chunk | list[Chunk]:
        if isinstance(row, slice):
            return [self._chunk(i) for i in range(*row.indices(len(self)))]
        if not -len(self) <= row < len(self):
            raise IndexError(f"chunk row {row} is outside the table of {len(self)}")
        return self._chunk(row % len(self))

    def __iter__(self) -> Iterator[Chunk]:
        return (self._chunk(row) for row in range(len(self)))

    def _chunk(self, row: int) -> Chunk:
        start, end = int(self._offsets[row]), int(self._offsets[row + 1])
        try:
            chunk_id, text, metadata = json.loads(self._records[start:end].tobytes())
        except ValueError as error:
            raise ChunkTableError(f"chunk record {row} is not valid: {error}") from error
        if not (isinstance(chunk_id, str) and isinstance(text, str) and isinstance(metadata, dict)):
            raise ChunkTableError(f"chunk record {row} is not [id, text, metadata]")
        return Chunk(chunk_id, text, metadata)
