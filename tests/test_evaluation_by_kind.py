"""The evaluation report per kind of last question, and the human-rewrite row.

A developer labels cases with ``kind`` (standalone, follow-up, clarification, switch) and may add
``rewrite``, a person's standalone version of the last question. The report then shows every
row's scores per kind, and the rewrite searched the way the baselines are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from rasa_context_retrieval.console import main
from rasa_context_retrieval.evaluation.cases import EvalCase
from rasa_context_retrieval.evaluation.report import build_report, render_text
from rasa_context_retrieval.evaluation.runner import (
    CONTEXT_MODEL,
    HUMAN_REWRITE,
    LATEST_MESSAGE,
    RASA_DEFAULT_QUERY,
    CaseResult,
    Ranking,
)
from tests.test_retrieval_evaluation import _Capture, _report, _write_cases, _write_small_assistant

RIGHT = "cards/gold-card-fees.md"


def _result(
    name: str,
    ranks: dict[str, int | None],
    kind: str | None = None,
    rewrite: str | None = None,
    follow_up: bool = True,
) -> CaseResult:
    """A case whose rows found the right document at ``ranks`` (None: not at all)."""
    turns: list[dict[str, Any]] = [{"user": "What's the annual fee?"}]
    if follow_up:
        turns += [{"bot": "Which card do you have?"}, {"user": "the gold one"}]
    fields: dict[str, Any] = {"name": name, "turns": turns, "expected_sources": [RIGHT]}
    if kind is not None:
        fields["kind"] = kind
    if rewrite is not None:
        fields["rewrite"] = rewrite
    return CaseResult(
        case=EvalCase.model_validate(fields),
        rankings={row: _ranking(rank) for row, rank in ranks.items()},
        filter=None,
        filter_right=None,
        latency_ms=1.0,
    )


def _ranking(rank: int | None) -> Ranking:
    sources = ["other.md"] * 4
    if rank is not None:
        sources[rank - 1] = RIGHT
    return Ranking("query", tuple(sources), (0.5, 0.4, 0.3, 0.2), rank)


def _ranks(plugin: int | None, latest: int | None, rasa: int | None) -> dict[str, int | None]:
    return {CONTEXT_MODEL: plugin, LATEST_MESSAGE: latest, RASA_DEFAULT_QUERY: rasa}


def _labelled_results() -> list[CaseResult]:
    return [
        _result("fee", _ranks(1, 1, 1), kind="standalone", follow_up=False),
        _result("gold one", _ranks(2, None, 1), kind="clarification"),
        _result("business", _ranks(None, None, 1), kind="clarification"),
        _result("and abroad", _ranks(1, 3, 2), kind="follow-up"),
    ]


def test_a_report_over_cases_labelled_by_kind_shows_each_kinds_scores_for_every_row() -> None:
    report = build_report(_labelled_results(), top_k=4)

    by_kind = report["scores_by_kind"]
    assert list(by_kind) == ["standalone", "follow-up", "clarification"]  # the kinds' order
    clarification = by_kind["clarification"]
    assert {row: clarification[row]["cases"] for row in clarification} == {
        CONTEXT_MODEL: 2,
        LATEST_MESSAGE: 2,
        RASA_DEFAULT_QUERY: 2,
        HUMAN_REWRITE: 0,  # no case has a rewrite
    }
    # clarification answers lose to Rasa's default query, though all cases together do not
    assert clarification[CONTEXT_MODEL]["mrr"] == 0.25
    assert clarification[RASA_DEFAULT_QUERY]["mrr"] == 1.0
    assert clarification[LATEST_MESSAGE]["hit_at_k"] == 0.0
    assert by_kind["follow-up"][LATEST_MESSAGE]["mrr"] == 1 / 3
    assert report["scores"][CONTEXT_MODEL]["cases"] == 4

    table = render_text(report)
    block = table[table.index("by kind of last question") :].splitlines()
    start = block.index("clarification (2 answerable)")
    assert block[start + 1].split()[-3:] == ["0.000", "0.500", "0.250"]  # plugin
    assert block[start + 3].split()[-3:] == ["1.000", "1.000", "1.000"]  # Rasa default query
    assert "standalone (1 answerable)" in block and "follow-up (1 answerable)" in block
    assert "  business (clarification)" in table  # a miss says its kind
    assert max(len(line) for line in table.splitlines()) <= 100


def test_cases_without_a_kind_are_reported_as_before_and_grouped_apart_when_others_have_one() -> (
    None
):
    unlabelled = [_result("a", _ranks(1, 1, 1)), _result("b", _ranks(2, 2, 1))]
    report = build_report(unlabelled, top_k=4)
    assert report["scores_by_kind"] == {}
    assert "by kind" not in render_text(report)

    mixed = build_report([*unlabelled, _result("c", _ranks(1, 1, 1), kind="switch")], top_k=4)
    assert list(mixed["scores_by_kind"]) == ["switch", "unlabelled"]
    assert mixed["scores_by_kind"]["unlabelled"][CONTEXT_MODEL]["mrr"] == 0.75


def test_the_human_rewrite_row_counts_only_cases_that_have_a_rewrite() -> None:
    results = [
        _result("fee", {**_ranks(1, 1, 1), HUMAN_REWRITE: 1}, "standalone", "Annual fee?", False),
        _result("gold one", {**_ranks(2, None, 1), HUMAN_REWRITE: 2}, "clarification", "Gold fee"),
        _result("business", _ranks(None, None, 1), kind="clarification"),
    ]
    report = build_report(results, top_k=4)

    rewrite = report["scores"][HUMAN_REWRITE]
    assert (rewrite["cases"], rewrite["hit_at_1"], rewrite["mrr"]) == (2, 0.5, 0.75)
    assert report["scores"][CONTEXT_MODEL]["cases"] == 3  # the other rows keep every case
    assert report["follow_up_scores"][HUMAN_REWRITE]["cases"] == 1
    assert report["scores_by_kind"]["clarification"][HUMAN_REWRITE]["cases"] == 1
    entries = {entry["name"]: entry for entry in report["case_results"]}
    assert entries["gold one"]["rank"][HUMAN_REWRITE] == 2
    assert entries["gold one"]["rewrite"] == "Gold fee"
    assert HUMAN_REWRITE not in entries["business"]["rank"]

    table = render_text(report).splitlines()
    row = next(line for line in table if line.startswith("human rewrite (2 of 3)"))
    assert row.split()[-5:] == ["0.500", "1.000", "0.750", "0.000", "0.500"]
    block = table[table.index("clarification (2 answerable)") :]
    assert block[4].split() == ["human", "rewrite", "(1", "of", "2)", "0.000", "1.000", "0.500"]
    standalone = table[table.index("standalone (1 answerable)") :]
    assert standalone[4].startswith("  human rewrite (1 of 1)")


def test_without_rewrites_the_report_has_no_human_rewrite_row() -> None:
    report = build_report(_labelled_results(), top_k=4)
    assert report["scores"][HUMAN_REWRITE]["cases"] == 0
    assert "human rewrite" not in render_text(report)


def test_the_human_rewrite_is_searched_under_the_same_filter_as_the_other_rows(
    tmp_path: Path, model_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_small_assistant(tmp_path, model_path)
    endpoints = yaml.safe_load((tmp_path / "endpoints.yml").read_text(encoding="utf-8"))
    endpoints["vector_store"]["slot_filters"] = {"plan": "plan"}
    (tmp_path / "endpoints.yml").write_text(yaml.safe_dump(endpoints), encoding="utf-8")
    price = {"turns": [{"user": "What does it cost?"}], "expected_sources": ["pricing.md"]}
    _write_cases(
        tmp_path / "cases.yml",
        [
            {"name": "price, any plan", **price, "rewrite": "How much does Premium cost?"},
            {
                "name": "price, on the free plan",
                "slots": {"plan": "free"},  # the filter leaves only refunds.md
                **price,
                "rewrite": "How much does Premium cost?",
            },
            {"name": "price, no rewrite", **price},
        ],
    )
    monkeypatch.chdir(tmp_path)
    capture = _Capture()
    with capture:
        code = main(["eval", "cases.yml", "--json"])
    assert code == 0, capture.stderr
    report = _report(capture.stdout)
    ranks = {case["name"]: case["rank"] for case in report["case_results"]}
    assert ranks["price, any plan"]["human_rewrite"] == 1
    assert ranks["price, on the free plan"]["human_rewrite"] is None
    assert "human_rewrite" not in ranks["price, no rewrite"]
    assert report["scores"]["human_rewrite"]["cases"] == 2
    assert report["scores"]["context_model"]["cases"] == 3
