"""The configuration against the documents: attributes and values that only a typo explains.

A slot or access filter on an attribute that no document carries (and no field declares) matches
nothing, silently; a front-matter key that nothing names is never filtered on; a declared value
that no document has can never match. Each is cheap to see by reading the documents once, with
the same loader that indexes them, before any model loads.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from tqdm import tqdm

from rasa_context_retrieval.config import StoreConfig
from rasa_context_retrieval.filters.schema import STRING_TYPES
from rasa_context_retrieval.knowledge.conversion import PLACE_KEYS, format_suffixes
from rasa_context_retrieval.knowledge.faq_table import FaqColumns
from rasa_context_retrieval.knowledge.loader import Document, load_knowledge_base
from rasa_context_retrieval.knowledge.sections import SECTION
from rasa_context_retrieval.preflight.findings import CheckReport
from rasa_context_retrieval.result_metadata import ANSWER, SOURCE, TITLE, URL

CITATION_ATTRIBUTES = frozenset({ANSWER, SOURCE, TITLE, URL, "question", *PLACE_KEYS, SECTION})
"""Attributes the plugin reads or sets itself (citations, answers, a converted document's page,
slide, anchor and section): never a filter, never a typo."""
PROGRESS_FROM_FILES = 200
"""A knowledge base this large shows a progress bar while its documents are read."""
FILES_SHOWN = 3
VALUES_SHOWN = 12


def check_documents(config: StoreConfig, report: CheckReport, where: str) -> None:
    """Compare slot/access filters and ``metadata_fields`` with what the documents carry."""
    if config.docs is None or config.milvus_replica:
        return
    with _ProgressBar() as progress:
        knowledge = load_knowledge_base(
            config.docs,
            config.access_attributes,
            format_suffixes(config.document_formats),
            FaqColumns(config.faq_columns.question, config.faq_columns.answer),
            progress=progress,
        )
    for problem in knowledge.problems:
        where = f"{config.docs}/{problem.file}" + (
            "" if problem.line is None else f":{problem.line}"
        )
        said = "" if "not indexed" in problem.reason else "; not indexed"
        report.warning(where, f"{problem.reason}{said}")
    carriers = _attribute_carriers(knowledge.documents)
    declared = config.field_names
    known = sorted(declared | set(carriers))
    for key, mapping in (
        ("slot_filters", config.slot_filters),
        ("access_filters", config.access_filters),
    ):
        for name, attribute in mapping.items():
            if attribute not in declared and attribute not in carriers:
                report.error(
                    f"{where} vector_store.{key}.{name}",
                    f"attribute '{attribute}' is declared in no `metadata_fields` entry and "
                    f"carried by no document, so it matches nothing; known attributes: "
                    f"{', '.join(known) or 'none'}",
                )
    named = declared | set(config.slot_filters.values()) | set(config.access_filters.values())
    for attribute in sorted(set(carriers) - named - CITATION_ATTRIBUTES):
        report.warning(
            f"{config.docs}",
            f"documents carry attribute '{attribute}' ({_shown(carriers[attribute], FILES_SHOWN)}) "
            "that no `metadata_fields` entry, slot filter or access filter names: a misspelt "
            "front-matter key? Fix the key or declare the field",
        )
    _check_declared_values(config, carriers, report, where)


def _check_declared_values(
    config: StoreConfig, carriers: dict[str, dict[str, set[str]]], report: CheckReport, where: str
) -> None:
    for field in config.metadata_fields:
        if not field.values or field.type not in STRING_TYPES or field.name not in carriers:
            continue
        present = set(carriers[field.name]) - {""}
        for value in field.values:
            if value not in present:
                report.warning(
                    f"{where} vector_store.metadata_fields.{field.name}.values",
                    f"'{value}' is in no document; the documents have: "
                    f"{_shown(present, VALUES_SHOWN)}",
                )


def _attribute_carriers(documents: Iterable[Document]) -> dict[str, dict[str, set[str]]]:
    """attribute -> string value -> files carrying it ("" stands for a non-string value)."""
    carriers: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for document in documents:
        file = document.source.split(":")[0]
        for attribute, value in document.metadata.items():
            for item in _strings(value):
                carriers[attribute][item].add(file)
    return carriers


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [item for item in value if isinstance(item, str)] or [""]
    return [""]


def _shown(values: Iterable[str] | dict[str, set[str]], limit: int) -> str:
    if isinstance(values, dict):
        values = {file for files in values.values() for file in files}
    ordered = sorted(values)
    more = f" and {len(ordered) - limit} more" if len(ordered) > limit else ""
    return ", ".join(ordered[:limit]) + more


class _ProgressBar:
    """A bar on stderr while a large knowledge base is read; nothing for a small one."""

    def __init__(self) -> None:
        self._bar: tqdm | None = None

    def __call__(self, number: int, total: int) -> None:
        if self._bar is None and total >= PROGRESS_FROM_FILES:
            self._bar = tqdm(total=total, desc="Reading documents", unit="file", file=sys.stderr)
        if self._bar is not None:
            self._bar.update(number - self._bar.n)

    def __enter__(self) -> _ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.close()
