"""What each knowledge file parsed to, kept beside the index so that an unchanged file is never
parsed again.

A rebuild after one edited file used to parse every file once more: seconds for a folder of PDFs
and Word files, only to reuse their vectors. Entries are keyed by the file's name and a digest of
its bytes, under a key of everything else that decides a parse (the access attributes, the FAQ
columns, the parser's version): a changed file, or a changed setting, is parsed afresh.

The cache is plain JSON (no pickle), written to a temporary name and renamed into place, and
holds only the files of the last load, so it never grows beyond the knowledge base. A parse whose
output would not read back from JSON exactly is not kept. A cache that cannot be read or
written costs a full parse, never a build.

A parse lost to a dying worker process is no outcome and is never kept as one: the entry records
only how many times in a row the parse of those bytes was lost (``lost_parses``), so that the
loader can try the file again, and stop trying after repeated losses until its bytes change.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any

import structlog

logger = structlog.get_logger()

CACHE_FORMAT = 1
"""Bump when what an entry holds changes: an older cache is then ignored."""

ParsedItems = list[dict[str, Any]]
"""One file's documents and problems, each a JSON object (``knowledge.loader`` converts)."""


class ParseCache:
    """Parsed files by name and digest; ``save`` keeps the files looked up or stored since it
    was opened (the files of this load)."""

    def __init__(self, path: Path, settings: str, *, records_losses: bool = True) -> None:
        """``records_losses``: False for a load that only looks (a refresh's check for changed
        text before it rebuilds): a parse it loses is not counted against the file, so that the
        check and the rebuild right after it are one try, not two."""
        self.path = path
        self.settings = f"{CACHE_FORMAT}:{settings}"
        self.records_losses = records_losses
        self._kept: dict[str, dict[str, Any]] = {}
        self._used: dict[str, dict[str, Any]] = {}
        self._changed = False
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return  # none yet, or damaged: every file is parsed
        if isinstance(stored, dict) and stored.get("settings") == self.settings:
            files = stored.get("files")
            self._kept = files if isinstance(files, dict) else {}

    @staticmethod
    def digest(raw: bytes) -> str:
        return hashlib.sha256(raw).hexdigest()

    def get(self, name: str, digest: str) -> ParsedItems | None:
        """What ``name`` parsed to when its bytes had ``digest``, if that is known."""
        entry = self._kept.get(name)
        if not isinstance(entry, dict) or entry.get("digest") != digest:
            return None
        items = entry.get("items")
        if not isinstance(items, list):
            return None
        self._used[name] = entry
        return items

    def lost_parses(self, name: str, digest: str) -> int:
        """How many times in a row the parse of ``name`` with bytes ``digest`` was lost to a dying
        worker process (0: never, or it parsed since); the count is kept for this load."""
        entry = self._kept.get(name)
        if not isinstance(entry, dict) or entry.get("digest") != digest:
            return 0
        lost = entry.get("lost")
        if not isinstance(lost, int) or isinstance(lost, bool) or lost < 1:
            return 0
        self._used[name] = entry
        return lost

    def put_lost(self, name: str, digest: str) -> int:
        """Record that the parse of ``name`` with bytes ``digest`` was lost once more; the number
        of times in a row it was lost, this one included; where losses are not recorded, the
        times recorded already (at least this one)."""
        recorded = self.lost_parses(name, digest)
        if not self.records_losses:
            return max(recorded, 1)
        self._used[name] = {"digest": digest, "lost": recorded + 1}
        self._changed = True
        return recorded + 1

    def put(self, name: str, digest: str, items: ParsedItems) -> None:
        """Keep what ``name`` parsed to, unless JSON would not give it back exactly."""
        try:
            if json.loads(json.dumps(items)) != items:
                return
        except (TypeError, ValueError):
            return
        self._used[name] = {"digest": digest, "items": items}
        self._changed = True

    def save(self) -> None:
        """Write the entries of this load, when they differ from the stored ones."""
        if not self._changed and self._used.keys() == self._kept.keys():
            return
        staging = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            payload = {"settings": self.settings, "files": self._used}
            staging.write_text(json.dumps(payload, ensure_ascii=False), encoding="utf-8")
            os.replace(staging, self.path)
        except OSError as error:  # the next build parses again; the index itself is unaffected
            logger.warning("knowledge.parse_cache.unwritten", path=str(self.path), error=str(error))
        finally:
            staging.unlink(missing_ok=True)
        self._kept, self._changed = dict(self._used), False
