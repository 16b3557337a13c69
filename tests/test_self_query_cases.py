"""Every labelled row of ``tests/self_query_cases.yaml``: on its schema, the user's question
gives the filter written in the row (null: no filter at all). A new rule or phrase arrives as a
row there, so what it changes is one line a reviewer can read."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.self_query.rules import RuleQueryConstructor
from tests.self_query_support import expected, rules_on

CASES_FILE = Path(__file__).with_name("self_query_cases.yaml")
LABELLED = yaml.safe_load(CASES_FILE.read_text(encoding="utf-8"))


@cache
def rules_for(schema_name: str) -> RuleQueryConstructor:
    """The rules on a schema of the table, built once per schema."""
    schema = LABELLED["schemas"][schema_name]
    fields = [MetadataField(**field) for field in schema["fields"]]
    return rules_on(fields, schema.get("indexed_values") or {})


def _row_id(row: dict[str, Any]) -> str:
    return f"{row['schema']}: {row['q']}"


@pytest.mark.parametrize("row", LABELLED["cases"], ids=_row_id)
def test_a_labelled_question_gives_its_filter(row: dict[str, Any]) -> None:
    assert rules_for(row["schema"]).construct(row["q"]).filter == expected(row["filter"])


def test_every_row_names_a_schema_of_the_table_and_some_rows_mean_no_filter() -> None:
    names = {row["schema"] for row in LABELLED["cases"]}
    assert names <= set(LABELLED["schemas"])
    assert any(row["filter"] is None for row in LABELLED["cases"])
    assert any(row["filter"] is not None for row in LABELLED["cases"])
