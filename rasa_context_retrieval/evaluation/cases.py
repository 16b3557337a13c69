"""The evaluation file: conversations with the sources (and filter) a right answer comes from.

The format follows Rasa's e2e test files in spirit (a named case, user and bot turns, slots), but
what it checks is retrieval, not the bot's reply: after the last user turn, which documents come
back, and under which filter. Everything is checked when the file is read, before any model is
loaded, so a typo in a source path or a filter fails at once with the case's name in the message.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args

import yaml
from langchain_core.structured_query import FilterDirective
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.filters.syntax import attributes_of, parse_filter
from rasa_context_retrieval.knowledge.faq_table import CSV_SUFFIX, XLSX_SUFFIX
from rasa_context_retrieval.knowledge.listing import JSONL_SUFFIX
from rasa_context_retrieval.knowledge.loader import knowledge_files
from rasa_context_retrieval.knowledge.pdf import PDF_SUFFIX
from rasa_context_retrieval.knowledge.slides import PPTX_SUFFIX
from rasa_context_retrieval.knowledge.web_page import HTML_SUFFIXES

EvalRole = Literal["user", "bot"]
CaseKind = Literal["standalone", "follow-up", "clarification", "switch"]
"""What the last user turn is: a complete first question, a follow-up leaning on the previous
answer, a short answer to the bot's clarifying question, or a complete question on a new subject."""
CASE_KINDS: tuple[CaseKind, ...] = get_args(CaseKind)
"""The kinds in the order reports show them."""
UNLABELLED = "unlabelled"
"""The group of cases that state no ``kind``, in reports per kind."""

Item = TypeVar("Item")
FRAGMENT_SUFFIXES = (PDF_SUFFIX, PPTX_SUFFIX, *HTML_SUFFIXES)
"""Files whose citations end with ``#place`` (a page, a slide, an anchor)."""
ROW_SUFFIXES = {JSONL_SUFFIX: 1, CSV_SUFFIX: 1, XLSX_SUFFIX: 2}
"""Files whose citations end with ``:line`` or ``:worksheet:row``: how many colon parts."""


class EvalTurn(BaseModel):
    """One message: ``user: text`` (optionally with channel ``metadata``) or ``bot: text``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    user: str | None = None
    bot: str | None = None
    metadata: dict[str, Any] | None = None
    """What the channel sent along with a user message (Rasa's ``UserUttered.metadata``)."""

    @model_validator(mode="after")
    def _one_speaker(self) -> EvalTurn:
        if (self.user is None) == (self.bot is None):
            raise ValueError("a turn is either `user: text` or `bot: text`")
        if not (self.user or self.bot or "").strip():
            raise ValueError("a turn needs some text")
        if self.metadata is not None and self.bot is not None:
            raise ValueError("`metadata` belongs to a user turn (it is what the channel sent)")
        return self

    @property
    def role(self) -> EvalRole:
        return "user" if self.user is not None else "bot"

    @property
    def text(self) -> str:
        return (self.user if self.user is not None else self.bot or "").strip()


class EvalCase(BaseModel):
    """A conversation and what retrieval should find for its last user turn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    slots: dict[str, Any] = Field(default_factory=dict)
    """Slot values when the last user turn arrives (for ``slot_filters``)."""
    turns: tuple[EvalTurn, ...] = Field(min_length=1)
    expected_sources: tuple[str, ...]
    """Files relative to the docs folder; any chunk of one of them is a right result. A source
    with a place (``manual.pdf#page=12``, ``help/sync.html#pausing``, ``deck.pptx#slide=3``,
    ``faq.csv:7``, ``faq.xlsx:FAQ:7``, ``faq.jsonl:3``) is right only for chunks cited with
    that place. Empty: the documents hold no answer, so the right behaviour is to return
    nothing relevant."""
    expected_filter: str | None = None
    """The final filter in self-query syntax; ``null`` expects no filter; absent: not checked."""
    kind: CaseKind | None = None
    """Label of the last user turn, for reports per kind; optional."""
    rewrite: str | None = None
    """A person's standalone rewrite of the last user turn (the upper bound of any context
    model); optional."""
    expected_answer: str | None = Field(default=None, min_length=1)
    """A text the right result's answer must contain (case and spacing aside); optional. With
    it, a result from an expected document counts as right only when its answer (the Q/A
    entry's answer, or a prose chunk's text) contains this text, so the right document with the
    wrong entry is a miss, as it would be for the user."""

    @field_validator("turns")
    @classmethod
    def _ends_with_the_question(cls, turns: tuple[EvalTurn, ...]) -> tuple[EvalTurn, ...]:
        if turns and turns[-1].role != "user":
            raise ValueError("the last turn must be the user's question being evaluated")
        return turns

    @field_validator("expected_filter")
    @classmethod
    def _filter_parses(cls, text: str | None) -> str | None:
        if text is not None:
            parse_filter(text)
        return text

    @property
    def checks_filter(self) -> bool:
        return "expected_filter" in self.model_fields_set

    @property
    def parsed_filter(self) -> FilterDirective | None:
        return None if self.expected_filter is None else parse_filter(self.expected_filter)

    def is_right(self, source: str, answer: str, pages: Sequence[int] = ()) -> bool:
        """Whether a result cited as ``source`` whose answer is ``answer`` answers this case;
        ``pages`` are the PDF pages the result covers when it runs across a page break (it is
        cited by the first: ``#page=4`` for ``[4, 5]``), each of which an expected page names."""
        places = cited_places(source, pages)
        if not any(
            names(expected, place) for expected in self.expected_sources for place in places
        ):
            return False
        return self.expected_answer is None or _folded(self.expected_answer) in _folded(answer)

    @property
    def answerable(self) -> bool:
        return bool(self.expected_sources)

    @property
    def is_follow_up(self) -> bool:
        """True when an earlier user turn exists: the question may lean on it."""
        return sum(turn.role == "user" for turn in self.turns) > 1


class EvalFile(BaseModel):
    """The whole file: ``cases:`` followed by a list of cases."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cases: tuple[EvalCase, ...] = Field(min_length=1)


class EvalFileError(ContextRetrievalError, ValueError):
    """The evaluation file cannot be used; the message names the case and the key."""


def load_cases(
    path: Path,
    docs: Path,
    fields: frozenset[str] | None = None,
    extra_suffixes: Collection[str] = (),
) -> tuple[EvalCase, ...]:
    """Read and check an evaluation file against the knowledge base in ``docs`` (with the
    files of the opted-in formats, ``extra_suffixes``).

    Raises:
        EvalFileError: unreadable YAML, a wrong key or value, a duplicate case name, an
            expected source that is not a knowledge file under ``docs``, or an
            ``expected_filter`` naming an attribute outside ``fields`` (the declared ones).
    """
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise EvalFileError(f"cannot read {path}: {error}") from None
    try:
        cases = EvalFile.model_validate(raw).cases
    except ValidationError as error:
        raise EvalFileError(f"{path}: {_problems(error, raw)}") from None
    _check_unique_names(path, cases)
    _check_sources(path, cases, docs, extra_suffixes)
    if fields is not None:
        _check_filter_attributes(path, cases, fields)
    return cases


def group_by_kind(
    items: Sequence[Item], kind_of: Callable[[Item], str | None]
) -> dict[str, list[Item]]:
    """``items`` per kind of question, in the order of ``CASE_KINDS``, unlabelled ones last.

    Only groups that hold an item appear; each keeps the items' order.
    """
    groups: dict[str, list[Item]] = {kind: [] for kind in (*CASE_KINDS, UNLABELLED)}
    for item in items:
        groups[kind_of(item) or UNLABELLED].append(item)
    return {kind: members for kind, members in groups.items() if members}


def source_file(source: str) -> str:
    """The file a chunk's citation names, without the place in it: ``faq.jsonl:12``,
    ``faq.csv:12`` and ``faq.xlsx:FAQ:12`` (a line or a row), ``manual.pdf#page=3``,
    ``deck.pptx#slide=3`` and ``help/sync.html#pausing`` (a page, a slide, an anchor)."""
    head, separator, _ = source.partition("#")
    if separator and head.lower().endswith(FRAGMENT_SUFFIXES):
        return head
    for suffix, colons in ROW_SUFFIXES.items():
        parts = source.rsplit(":", colons)
        if len(parts) == colons + 1 and parts[0].lower().endswith(suffix) and parts[-1].isdigit():
            return parts[0]
    return source


def cited_places(source: str, pages: Sequence[int]) -> tuple[str, ...]:
    """``source`` and, for a result across a page break, the same file at each of its pages."""
    file, separator, _ = source.partition("#page=")
    if not separator:
        return (source,)
    return (source, *(f"{file}#page={page}" for page in pages))


def names(expected: str, source: str) -> bool:
    """Whether the expected source ``expected`` names the chunk cited as ``source``: a file
    names every place in it (``manual.pdf`` each page), a place only itself (``#page=3``)."""
    return expected == source or expected == source_file(source)


def _check_unique_names(path: Path, cases: Sequence[EvalCase]) -> None:
    seen: set[str] = set()
    for case in cases:
        if case.name in seen:
            raise EvalFileError(f"{path}: two cases are named {case.name!r}; names must differ")
        seen.add(case.name)


def _check_sources(
    path: Path, cases: Sequence[EvalCase], docs: Path, extra_suffixes: Collection[str]
) -> None:
    listed = knowledge_files(docs, extra_suffixes)
    known = {file.relative_to(docs).as_posix() for file in listed}
    for case in cases:
        for source in case.expected_sources:
            if source_file(source) not in known:
                raise EvalFileError(
                    f"{path}: case {case.name!r}: expected source {source!r} is not a knowledge "
                    f"file under {docs} (write the path relative to it, e.g. 'plans/free.md')"
                )


def _check_filter_attributes(path: Path, cases: Sequence[EvalCase], fields: frozenset[str]) -> None:
    """A filter on an undeclared attribute can never be the plan's: a mistake in the case."""
    for case in cases:
        if case.parsed_filter is None:
            continue
        unknown = sorted(attributes_of(case.parsed_filter) - fields)
        if unknown:
            raise EvalFileError(
                f"{path}: case {case.name!r}: expected_filter names {unknown}, which "
                f"`metadata_fields` does not declare (declared: {', '.join(sorted(fields))}); "
                "fix the case"
            )


def _problems(error: ValidationError, raw: Any) -> str:
    """Pydantic's errors as one line each, naming the case instead of its list index."""
    lines = []
    for problem in error.errors():
        location = list(problem["loc"])
        if location[:1] == ["cases"] and len(location) > 1 and isinstance(location[1], int):
            location[1] = _case_label(raw, location[1])
        where = ".".join(str(part) for part in location) or "file"
        lines.append(f"{where}: {problem['msg']}{_quoting_hint(problem)}")
    return "; ".join(lines)


def _quoting_hint(problem: Any) -> str:
    """YAML reads ``yes``, ``no``, ``on``, ``42`` as a boolean or number: say to quote it."""
    value = problem.get("input")
    if problem["type"] != "string_type" or not isinstance(value, bool | int | float):
        return ""
    return f' (YAML read it as {value!r}: quote it, e.g. "{_as_written(value)}")'


def _as_written(value: bool | int | float) -> str:
    return ("yes" if value else "no") if isinstance(value, bool) else str(value)


def _case_label(raw: Any, index: int) -> str:
    try:
        name = raw["cases"][index]["name"]
    except (KeyError, IndexError, TypeError):
        name = None
    return f"case {index + 1} ({name!r})" if isinstance(name, str) else f"case {index + 1}"


def _folded(text: str) -> str:
    return " ".join(text.casefold().split())
