"""Reading the knowledge base folder into documents, reporting every file that cannot be read.

A knowledge base is edited by people: one file with broken front matter, a stray binary or a JSON
line with a typo must not take the assistant down. Each such file (or line) becomes an
:class:`IngestProblem` naming file, line and reason, and everything else still loads.

Attributes decide access, so a document whose attributes cannot be read exactly is refused, never
indexed without them (``knowledge.front_matter``, ``knowledge.access_attributes``). The access
attributes come in as plain names from whoever builds the index; this module reads no
configuration.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections import deque
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import structlog
import yaml

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.knowledge.access_attributes import (
    misspelled_access_keys,
    stray_access_line,
)
from rasa_context_retrieval.knowledge.attribute_files import AttributeRules, AttributesRefused
from rasa_context_retrieval.knowledge.conversion import (
    CONVERTED_SUFFIXES,
    PLACE_KEYS,
    ConversionRefused,
    converted_parts,
)
from rasa_context_retrieval.knowledge.faq_table import (
    CSV_SUFFIX,
    DEFAULT_FAQ_COLUMNS,
    XLSX_SUFFIX,
    FaqColumns,
    TableUnreadable,
    faq_rows,
)
from rasa_context_retrieval.knowledge.front_matter import (
    FrontMatterRefused,
    load_attribute_yaml,
    split_front_matter,
)
from rasa_context_retrieval.knowledge.listing import (
    JSONL_SUFFIX,
    is_attribute_file,
    is_inside,
    list_knowledge_files,
)
from rasa_context_retrieval.knowledge.parse_cache import ParseCache
from rasa_context_retrieval.workers import (
    Ready,
    WorkerCrashed,
    in_worker_processes,
    worker_processes,
)

logger = structlog.get_logger()

MAX_FILE_BYTES = 20 * 1024 * 1024
"""Larger files are refused: they are almost always exports or binaries put there by mistake."""
MAX_METADATA_DEPTH = 16
MAX_METADATA_VALUES = 10_000
"""Front matter nested deeper or holding more values is refused: YAML aliases can make a few
lines self-referencing or exponentially large once expanded."""


@dataclass(frozen=True)
class Document:
    """One knowledge-base document: a text file, or one line of a .jsonl file."""

    source: str
    """Path relative to the docs folder (``faq.jsonl:12`` for a JSON line)."""
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class IngestProblem:
    """A file (or line) that was skipped, and why."""

    file: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.reason}"


@dataclass
class KnowledgeBase:
    documents: list[Document]
    problems: list[IngestProblem]
    retry: list[str] = field(default_factory=list)
    """Files whose parse was lost to a dying worker process and that the next load parses again
    (each is among ``problems`` too): until then, what was read is not a settled outcome."""


def knowledge_files(folder: Path, extra_suffixes: Collection[str] = ()) -> list[Path]:
    """The knowledge files in a stable order (see ``rasa_context_retrieval.knowledge.listing``)."""
    return list_knowledge_files(folder, extra_suffixes).files


def content_digest(folder: Path, extra_suffixes: Collection[str] = ()) -> str:
    """A digest of every knowledge file's path and bytes: it changes iff the knowledge changes.

    Refused paths (links out of the folder) count by name, so that adding one is reported. A file
    over ``MAX_FILE_BYTES`` counts by size and modification time and is never read: ingest refuses
    it anyway, and hashing a stray multi-gigabyte export on every refresh would cost seconds and
    its size in memory.
    """
    digest = hashlib.sha256()
    listing = list_knowledge_files(folder, extra_suffixes)
    for path in listing.files:
        digest.update(path.relative_to(folder).as_posix().encode())
        digest.update(b"\0")
        digest.update(_file_digest(path))
    for path in listing.attribute_files:  # a changed sidecar or folder rule rebuilds
        digest.update(f"attributes:{path.relative_to(folder).as_posix()}".encode())
        digest.update(b"\0")
        digest.update(_file_digest(path))
    for refused in listing.refused:
        digest.update(f"refused:{refused.name}".encode())
    return digest.hexdigest()


def _file_digest(path: Path) -> bytes:
    """The hash of a file's bytes, or of its size and mtime when it is over the size cap."""
    try:
        status = path.stat()
        if status.st_size > MAX_FILE_BYTES:
            return f"oversized:{status.st_size}:{status.st_mtime_ns}".encode()
        with path.open("rb") as handle:  # never more than the cap, even if it grew meanwhile
            content = handle.read(MAX_FILE_BYTES + 1)
    except OSError:  # reported when loading; a file that becomes readable changes the digest
        return b"unreadable"
    if len(content) > MAX_FILE_BYTES:
        return f"oversized:{len(content)}".encode()
    return hashlib.sha256(content).digest()


PARALLEL_FROM_FILES = 8
"""Fewer files are parsed in this process: starting the worker processes would cost more."""
FILES_PER_TRIP = 4
"""Files sent to a worker process together: a Markdown file parses in less time than one trip
to a worker and back takes (bench/results/build_speed.md)."""
LOST_PARSE_TRIES = 2
"""Loads in a row whose parse of the same bytes of a file may be lost to a dying worker process
before the file is left unparsed until it changes. A worker also dies of causes that have nothing
to do with its file (the out-of-memory killer on a busy machine), so one loss is tried again at
the next load; a file that takes its parser down every time (a zip bomb, a PDF that crashes the
PDF library) would otherwise cost a rebuild and a dead process at every refresh."""
CRASHED_REASON = (
    "its parser process died (a parser crash, or the machine ran out of memory); not indexed "
    "yet: it is parsed again at the next refresh or start"
)
REPEATEDLY_CRASHED_REASON = (
    f"its parser process died on each of {LOST_PARSE_TRIES} tries; not indexed until the file "
    "changes. Open and re-save it, or convert it to another format"
)


@dataclass(frozen=True)
class FileToParse:
    """One file's bytes and what decides how they parse: what a worker process is sent."""

    name: str
    suffix: str
    raw: bytes
    access: frozenset[str]
    faq_columns: FaqColumns


@dataclass(frozen=True)
class _Listed:
    """A listed file as the loader goes through them in order: what it inherits, and the
    digest its parse is cached under (None: not cached)."""

    name: str
    suffix: str
    inherited: dict[str, Any]
    digest: str | None


def load_knowledge_base(
    folder: Path,
    access_attributes: Collection[str] = (),
    extra_suffixes: Collection[str] = (),
    faq_columns: FaqColumns = DEFAULT_FAQ_COLUMNS,
    progress: Callable[[int, int], None] | None = None,
    *,
    cache: ParseCache | None = None,
    workers: int | None = None,
) -> KnowledgeBase:
    """Read every .md/.txt (optional YAML front matter) and .jsonl file under ``folder``, and
    the opted-in ``extra_suffixes`` (``.pdf``: one document per page, ``source`` citing it;
    ``.csv``/``.xlsx``: one per row of an FAQ table with ``faq_columns``).

    ``access_attributes`` are the document attributes that ``access_filters`` map to: a document
    that names one of them in a way that would not be read (``Plan:``, a JSON line's ``plan``
    outside its ``metadata``) is refused instead of being indexed as public. ``progress`` is told
    ``(file number, files in all)`` as each file is read, for a progress bar on a large folder.

    Files are parsed in ``workers`` processes (default: one per core from ``PARALLEL_FROM_FILES``
    files on), with the same documents and problems, in the same order, as one by one; a file
    whose parser kills its process becomes a problem, and is named in ``retry`` unless its parse
    was lost ``LOST_PARSE_TRIES`` times in a row (counted by ``cache``; without one, every loss is
    retried). A file ``cache`` has seen with the same bytes is not parsed again.
    """
    documents: list[Document] = []
    listing = list_knowledge_files(folder, extra_suffixes)
    problems = [IngestProblem(refused.name, None, refused.reason) for refused in listing.refused]
    root = folder.resolve()
    access = frozenset(access_attributes)
    rules = AttributeRules(
        folder, listing.attribute_files, lambda path: _attribute_file(path, root, access), access
    )
    problems.extend(IngestProblem(name, None, reason) for name, reason in rules.refused_files())
    for refused in listing.refused:  # reported above already; still fail closed
        if is_attribute_file(PurePosixPath(refused.name).name):
            rules.refuse(refused.name, refused.reason)
    if workers is None:
        workers = worker_processes() if len(listing.files) >= PARALLEL_FROM_FILES else 1
    listed: deque[_Listed] = deque()
    tasks = _parse_tasks(folder, listing.files, root, access, faq_columns, rules, cache, listed)
    outcomes = in_worker_processes(parse_file, tasks, workers, FILES_PER_TRIP)
    retry: list[str] = []
    for number, outcome in enumerate(outcomes, start=1):
        if progress is not None:
            progress(number, len(listing.files))
        file = listed.popleft()
        if isinstance(outcome, WorkerCrashed):
            outcome = [_lost_parse(file, cache, retry)]
        elif cache is not None and file.digest is not None:
            cache.put(file.name, file.digest, [_as_json(item) for item in outcome])
        own_wins = file.suffix not in CONVERTED_SUFFIXES or file.suffix == XLSX_SUFFIX
        for item in outcome:
            if isinstance(item, Document) and file.inherited:
                item = _with_inherited(item, file.inherited, rules, own_wins)
            (problems if isinstance(item, IngestProblem) else documents).append(item)  # type: ignore[arg-type]
    if cache is not None:
        cache.save()
    for problem in problems:
        logger.warning(
            "knowledge.load.skipped", file=problem.file, line=problem.line, reason=problem.reason
        )
    if retry:
        logger.warning(
            "knowledge.load.parse_lost",
            files=retry,
            event_info=f"{len(retry)} file(s) lost to a dying parser process are parsed again "
            "at the next refresh or start",
        )
    return KnowledgeBase(documents, problems, retry)


def _lost_parse(file: _Listed, cache: ParseCache | None, retry: list[str]) -> IngestProblem:
    """The problem a file whose parser process died is, counted in ``cache``; a file still due
    another try is added to ``retry``."""
    lost = 1
    if cache is not None and file.digest is not None:
        lost = cache.put_lost(file.name, file.digest)
    if lost >= LOST_PARSE_TRIES:
        return IngestProblem(file.name, None, REPEATEDLY_CRASHED_REASON)
    retry.append(file.name)
    return IngestProblem(file.name, None, CRASHED_REASON)


ParsedFile = list[Document | IngestProblem]


def _parse_tasks(
    folder: Path,
    files: list[Path],
    root: Path,
    access: frozenset[str],
    faq_columns: FaqColumns,
    rules: AttributeRules,
    cache: ParseCache | None,
    listed: deque[_Listed],
) -> Iterator[FileToParse | Ready[ParsedFile]]:
    """One task per file, in order: its bytes to parse, or its outcome when known already (a
    refused or unreadable file, a file the cache holds). ``listed`` is told each file first."""
    for path in files:
        name = path.relative_to(folder).as_posix()
        suffix = path.suffix.lower()
        try:
            inherited = rules.inherited(name)
            raw = _read_bytes(path, root)
        except AttributesRefused as refused:
            listed.append(_Listed(name, suffix, {}, None))
            yield Ready([IngestProblem(name, None, str(refused))])
            continue
        except _Unreadable as unreadable:
            listed.append(_Listed(name, suffix, {}, None))
            yield Ready([IngestProblem(name, unreadable.line, unreadable.reason)])
            continue
        digest = ParseCache.digest(raw) if cache is not None else None
        cached = cache.get(name, digest) if cache is not None and digest is not None else None
        if (
            cache is not None
            and digest is not None
            and (cache.lost_parses(name, digest) >= LOST_PARSE_TRIES)
        ):  # left until its bytes change: parsing it again would only kill another process
            listed.append(_Listed(name, suffix, {}, None))
            yield Ready([IngestProblem(name, None, REPEATEDLY_CRASHED_REASON)])
        elif cached is not None:
            listed.append(_Listed(name, suffix, inherited, None))
            yield Ready([_from_json(item) for item in cached])
        else:
            listed.append(_Listed(name, suffix, inherited, digest))
            yield FileToParse(name, suffix, raw, access, faq_columns)


def parse_file(task: FileToParse) -> ParsedFile:
    """The documents and problems one file's bytes make, before folder and sidecar attributes."""
    if task.suffix in CONVERTED_SUFFIXES:
        return list(
            _converted_documents(task.name, task.suffix, task.raw, task.access, task.faq_columns)
        )
    try:
        text = _decoded_text(task.raw)
    except _Unreadable as unreadable:
        return [IngestProblem(task.name, unreadable.line, unreadable.reason)]
    if task.suffix == JSONL_SUFFIX:
        return list(_jsonl_documents(task.name, text, task.access))
    if task.suffix == CSV_SUFFIX:
        return list(_csv_documents(task.name, text, task.access, task.faq_columns))
    return list(_text_documents(task.name, text, task.access))


def _as_json(item: Document | IngestProblem) -> dict[str, Any]:
    if isinstance(item, Document):
        return {"source": item.source, "text": item.text, "metadata": item.metadata}
    return {"file": item.file, "line": item.line, "reason": item.reason}


def _from_json(item: dict[str, Any]) -> Document | IngestProblem:
    if "source" in item:
        return Document(item["source"], item["text"], item["metadata"])
    return IngestProblem(item["file"], item["line"], item["reason"])


def _with_inherited(
    document: Document, inherited: dict[str, Any], rules: AttributeRules, own_wins: bool
) -> Document | IngestProblem:
    """The document with its folder and sidecar attributes (``knowledge.attribute_files``).

    Attributes a person wrote in the document (front matter, a JSON line, a table row) narrow
    the inherited ones; properties a converter read (a PDF's title) give way to them, except the
    part's place (page, anchor).
    """
    if not own_wins:
        place = {key: document.metadata[key] for key in PLACE_KEYS if key in document.metadata}
        return Document(document.source, document.text, {**document.metadata, **inherited, **place})
    try:
        metadata = rules.narrowed(inherited, document.metadata, "its own attributes")
    except AttributesRefused as refused:
        return IngestProblem(document.source, None, str(refused))
    return Document(document.source, document.text, metadata)


def _attribute_file(path: Path, root: Path, access: frozenset[str]) -> dict[str, Any]:
    """A sidecar or folder file, read with the front-matter rules.

    Raises:
        AttributesRefused: unreadable, bad YAML, a key twice, not a mapping, or a misspelled
            access attribute.
    """
    try:
        loaded = load_attribute_yaml(_read_bytes(path, root).decode("utf-8-sig"))
        metadata = _plain_metadata(loaded) if isinstance(loaded, dict) else None
    except _Unreadable as unreadable:
        raise AttributesRefused(unreadable.reason) from None
    except FrontMatterRefused as refused:
        raise AttributesRefused(refused.reason) from None
    except UnicodeDecodeError:
        raise AttributesRefused("not UTF-8; save it as UTF-8") from None
    except yaml.YAMLError as error:
        raise AttributesRefused(f"bad YAML: {getattr(error, 'problem', error)}") from None
    except (ValueError, TypeError, RecursionError) as error:
        raise AttributesRefused(f"bad attributes: {type(error).__name__}") from None
    if metadata is None:
        raise AttributesRefused("not a mapping of attribute: value; not read")
    problem = _misplaced_access(metadata, access)
    if problem is not None:
        raise AttributesRefused(problem)
    return metadata


class _Unreadable(ContextRetrievalError):
    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


def _converted_documents(
    name: str, suffix: str, raw: bytes, access: frozenset[str], faq_columns: FaqColumns
) -> Iterator[Document | IngestProblem]:
    """A PDF page, an HTML section, a Word file or a spreadsheet row per document, cited by
    ``name`` plus the part's place (``knowledge.conversion``)."""
    try:
        parts = converted_parts(suffix, raw, faq_columns)
    except ConversionRefused as refused:
        yield IngestProblem(name, None, str(refused))
        return
    for part in parts:
        problem = _misplaced_access(part.metadata, access) if part.row else None
        if problem is not None:
            yield IngestProblem(f"{name}{part.where}", None, problem)
        else:
            yield Document(f"{name}{part.where}", part.text, part.metadata)


def _read_bytes(path: Path, root: Path) -> bytes:
    # Listed files were inside; checked again here because a link can change in between.
    target = path.resolve()
    if not is_inside(target, root):
        raise _Unreadable("symbolic link to a file outside the docs folder; not read")
    try:
        size = target.stat().st_size
    except OSError as error:  # removed or replaced since it was listed
        raise _Unreadable(f"cannot read the file: {error.strerror or error}") from None
    if size > MAX_FILE_BYTES:
        raise _Unreadable(
            f"file is {size / 1e6:.0f} MB, over the {MAX_FILE_BYTES // 2**20} MiB limit"
        )
    try:
        return target.read_bytes()
    except OSError as error:
        raise _Unreadable(f"cannot read the file: {error.strerror or error}") from None


def _decoded_text(raw: bytes) -> str:
    if b"\0" in raw:
        raise _Unreadable("binary file (contains NUL bytes), not text")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise _Unreadable(
            f"not UTF-8 (byte 0x{raw[error.start]:02x}); save it as UTF-8", line
        ) from None
    if not text.strip():
        raise _Unreadable("empty file")
    return text


def _text_documents(
    name: str, text: str, access_attributes: frozenset[str]
) -> Iterator[Document | IngestProblem]:
    try:
        front_matter, content = split_front_matter(text)
    except FrontMatterRefused as refused:
        yield IngestProblem(name, refused.line, refused.reason)
        return
    except yaml.YAMLError as error:
        # The context mark is where the broken construct starts (an unclosed bracket), which is
        # the line a person has to fix; the problem mark is only where the parser gave up.
        mark = getattr(error, "context_mark", None) or getattr(error, "problem_mark", None)
        # The YAML handed to the parser starts on the line after the opening "---".
        line = mark.line + 2 if mark is not None else 1
        yield IngestProblem(
            name, line, f"bad YAML front matter: {getattr(error, 'problem', error)}"
        )
        return
    except (ValueError, TypeError, RecursionError) as error:
        yield IngestProblem(name, 1, f"bad front matter: {type(error).__name__}: {error}")
        return
    if not isinstance(front_matter, dict):
        # Indexing the text with no attributes would make a document meant to be restricted
        # public.
        kind = "a list" if isinstance(front_matter, list) else f"a {type(front_matter).__name__}"
        yield IngestProblem(
            name, 1, f"front matter is {kind}, not a mapping of attribute: value; not indexed"
        )
        return
    if not content.strip():
        yield IngestProblem(name, None, "no text after the front matter")
        return
    try:
        metadata = _plain_metadata(front_matter)
    except _Unreadable as unreadable:
        yield IngestProblem(name, 1, unreadable.reason)
        return
    problem = _misplaced_access(metadata, access_attributes)
    stray = stray_access_line(content, access_attributes, headless=not front_matter)
    if problem is None and stray is not None:
        problem = (
            f"the text has a line '{stray[1]}: ...' where front matter might have been meant; "
            "attributes are read only from front matter at the top of the file; not indexed"
        )
    if problem is not None:
        yield IngestProblem(name, None, problem)
        return
    yield Document(name, content, metadata)


def _csv_documents(
    name: str, text: str, access_attributes: frozenset[str], faq_columns: FaqColumns
) -> Iterator[Document | IngestProblem]:
    """One Q/A document per row of an FAQ table (``knowledge.faq_table``), cited as ``name:N``."""
    try:
        rows = list(faq_rows(text, faq_columns))
    except TableUnreadable as unreadable:
        yield IngestProblem(name, None, str(unreadable))
        return
    for line, entry, attributes in rows:
        problem = _misplaced_access(attributes, access_attributes)
        if problem is not None:
            yield IngestProblem(name, int(line), problem)
        else:
            yield Document(f"{name}:{line}", entry, attributes)


def _misplaced_access(metadata: dict[str, Any], access_attributes: frozenset[str]) -> str | None:
    """Why a document's keys would leave an access attribute unread, if they would."""
    misses = misspelled_access_keys(metadata, access_attributes)
    if not misses:
        return None
    key, attribute = misses[0]
    return (
        f"key {key!r} is not the access attribute {attribute!r} (keys are exact: case and plural "
        f"count); rename it to {attribute!r}; not indexed"
    )


class _DuplicateKey(ContextRetrievalError, ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` refusing an object that names a key twice (``json`` keeps the last)."""
    record: dict[str, Any] = {}
    for key, value in pairs:
        if key in record:
            raise _DuplicateKey(key)
        record[key] = value
    return record


def _jsonl_documents(
    name: str, text: str, access_attributes: frozenset[str]
) -> Iterator[Document | IngestProblem]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line, object_pairs_hook=_unique_keys)
        except _DuplicateKey as duplicate:
            yield IngestProblem(
                name,
                number,
                f"names {str(duplicate)!r} twice in one object; keep one (JSON readers would "
                "silently use the last); not indexed",
            )
            continue
        except json.JSONDecodeError as error:
            yield IngestProblem(name, number, f"broken JSON: {error.msg} at column {error.colno}")
            continue
        except RecursionError:
            yield IngestProblem(name, number, "JSON nested too deeply")
            continue
        body = record.get("text") if isinstance(record, dict) else None
        metadata = record.get("metadata", {}) if isinstance(record, dict) else None
        if not isinstance(body, str) or not body.strip():
            yield IngestProblem(name, number, 'each line needs a non-empty string "text"')
        elif not isinstance(metadata, dict):
            yield IngestProblem(name, number, '"metadata" must be an object')
        else:
            yield _jsonl_document(name, number, record, access_attributes)


def _jsonl_document(
    name: str, number: int, record: dict[str, Any], access_attributes: frozenset[str]
) -> Document | IngestProblem:
    outside = sorted(
        {key for key in record if key not in ("text", "metadata")}
        & (
            {*access_attributes}
            | {key for key, _ in misspelled_access_keys(record, access_attributes)}
        )
    )
    if outside:
        return IngestProblem(
            name,
            number,
            f'access attribute {outside[0]!r} is outside "metadata" (only "metadata" is read); '
            'move it into "metadata"; not indexed',
        )
    try:
        metadata = _plain_metadata(record.get("metadata", {}))
    except _Unreadable as unreadable:
        return IngestProblem(name, number, unreadable.reason)
    problem = _misplaced_access(metadata, access_attributes)
    if problem is not None:
        return IngestProblem(name, number, problem)
    return Document(f"{name}:{number}", record["text"], metadata)


def _plain_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """JSON-safe metadata: YAML dates become ISO strings, so the index persists without pickle.

    Raises:
        _Unreadable: for metadata nested deeper than MAX_METADATA_DEPTH or holding more than
            MAX_METADATA_VALUES values (self-referencing or alias-bombed YAML).
    """
    budget = [MAX_METADATA_VALUES]
    return {str(key): _plain(value, 1, budget) for key, value in metadata.items()}


def _plain(value: Any, depth: int, budget: list[int]) -> Any:
    budget[0] -= 1
    if depth > MAX_METADATA_DEPTH or budget[0] < 0:
        raise _Unreadable(
            f"front matter nested deeper than {MAX_METADATA_DEPTH} levels or holding more than "
            f"{MAX_METADATA_VALUES} values (a self-referencing YAML alias?)"
        )
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_plain(item, depth + 1, budget) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item, depth + 1, budget) for key, item in value.items()}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)
