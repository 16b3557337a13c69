"""`rasa-context-retrieval eval FILE`: retrieval quality on the assistant's own conversations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from rasa.core.policies.enterprise_search_policy import EnterpriseSearchPolicy

from rasa_context_retrieval.console import main
from rasa_context_retrieval.conversation import Conversation
from rasa_context_retrieval.evaluation.cases import EvalCase
from rasa_context_retrieval.evaluation.metrics import (
    TopResult,
    suggest_threshold,
    threshold_outcome,
)
from rasa_context_retrieval.evaluation.report import render_text
from rasa_context_retrieval.evaluation.tracker import rasa_default_query, tracker_for, tracker_state

REPO_ROOT = Path(__file__).resolve().parent.parent
SHIPPED_CASES = "eval/lumen_drive.yml"
SHIPPED_MIN_MRR = "0.85"


def _report(stdout: str) -> dict[str, Any]:
    """The JSON report: the last thing printed (log lines may precede it on stdout)."""
    lines = stdout.splitlines()
    start = max(index for index, line in enumerate(lines) if line == "{")
    return json.loads("\n".join(lines[start:]))


@pytest.fixture(scope="module")
def shipped_report() -> dict[str, Any]:
    """One run of the command on the example assistant's cases (one engine for all cases)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(REPO_ROOT)
        capture = _Capture()
        with capture:
            code = main(["eval", SHIPPED_CASES, "--json", "--min-mrr", SHIPPED_MIN_MRR])
    assert code == 0, capture.stderr
    return _report(capture.stdout)


@pytest.mark.slow  # evaluates every shipped case
def test_shipped_cases_cover_follow_ups_slots_and_unanswerable_questions(
    shipped_report: dict[str, Any],
) -> None:
    cases = shipped_report["case_results"]
    assert shipped_report["cases"] >= 40
    assert shipped_report["follow_ups"] >= 10
    assert sum('"plan"' in str(c["filter"]) or '"region"' in str(c["filter"]) for c in cases) >= 10
    assert shipped_report["cases"] - shipped_report["answerable"] >= 3


@pytest.mark.slow  # evaluates every shipped case
def test_the_plugin_ranks_the_example_knowledge_base_well(shipped_report: dict[str, Any]) -> None:
    plugin = shipped_report["scores"]["context_model"]
    assert plugin["mrr"] >= float(SHIPPED_MIN_MRR)
    assert plugin["hit_at_1"] <= plugin["mrr"] <= plugin["hit_at_k"]
    assert shipped_report["passed"] is True
    by_name = {case["name"]: case for case in shipped_report["case_results"]}
    assert by_name["storage on Premium"]["sources"][0] == "plans/premium.md"
    assert by_name["storage on Free"]["sources"][0] == "plans/free.md"


@pytest.mark.slow  # evaluates every shipped case
def test_follow_ups_gain_from_the_context_model_over_the_latest_message(
    shipped_report: dict[str, Any],
) -> None:
    follow_ups = shipped_report["follow_up_scores"]
    assert follow_ups["context_model"]["mrr"] > follow_ups["latest_message"]["mrr"]
    ranks = {case["name"]: case["rank"] for case in shipped_report["case_results"]}
    assert ranks["offline files, then Android"]["context_model"] == 1
    assert ranks["offline files, then Android"]["latest_message"] != 1


@pytest.mark.slow  # evaluates every shipped case
def test_filters_are_checked_against_the_cases(shipped_report: dict[str, Any]) -> None:
    filters = shipped_report["filters"]
    assert filters["checked"] >= 20
    assert filters["right"] / filters["checked"] >= 0.9
    by_name = {case["name"]: case for case in shipped_report["case_results"]}
    scoped = by_name["VAT for Premium in the EU"]
    assert scoped["filter_right"] is True
    assert "premium" in scoped["filter"] and "eu" in scoped["filter"]


@pytest.mark.slow  # evaluates every shipped case
def test_threshold_suggestion_and_latency_are_reported(shipped_report: dict[str, Any]) -> None:
    suggested = shipped_report["threshold"]["suggested"]
    configured = shipped_report["threshold"]["configured"]
    assert 0.0 < suggested["threshold"] < 1.0
    assert suggested["right_kept"] + suggested["wrong_blocked"] >= (
        configured["right_kept"] + configured["wrong_blocked"]
    )
    # the questions the documents cannot answer are held back by the suggested threshold
    unanswerable = [c for c in shipped_report["case_results"] if not c["expected_sources"]]
    assert all(c["relevances"][0] < suggested["threshold"] for c in unanswerable)
    latency = shipped_report["latency_ms"]
    assert 0 < latency["p50"] <= latency["p95"]


@pytest.mark.slow  # evaluates every shipped case
def test_the_table_shows_the_three_query_texts_side_by_side(
    shipped_report: dict[str, Any],
) -> None:
    table = render_text(shipped_report)
    for label in ("plugin (context model)", "latest message alone", "Rasa default query"):
        assert label in table
    mrr = shipped_report["scores"]["context_model"]["mrr"]
    assert f"MRR {mrr:.3f} vs --min-mrr {SHIPPED_MIN_MRR}: passed" in table
    assert (
        f"suggested threshold {shipped_report['threshold']['suggested']['threshold']:.3f}" in table
    )
    assert max(len(line) for line in table.splitlines()) <= 100


def test_a_retrieval_regression_fails_min_mrr(
    tmp_path: Path, model_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_small_assistant(tmp_path, model_path)
    _write_cases(
        tmp_path / "cases.yml",
        [
            {
                "name": "refund asked, pricing expected",
                "turns": [{"user": "Can I get a refund?"}],
                "expected_sources": ["pricing.md"],
                "expected_filter": 'eq("plan", "premium")',
            }
        ],
    )
    monkeypatch.chdir(tmp_path)
    capture = _Capture()
    with capture:
        code = main(["eval", "cases.yml", "--json", "--min-mrr", "0.9"])
    assert code == 1
    assert "MRR 0.500 is below --min-mrr 0.9" in capture.stderr
    report = _report(capture.stdout)
    assert report["passed"] is False
    assert report["case_results"][0]["sources"][0] == "refunds.md"
    assert report["filters"] == {
        "checked": 1,
        "right": 0,
        "accuracy": 0.0,
        "wrong": ["refund asked, pricing expected"],
    }


def test_the_right_document_with_the_wrong_answer_is_a_miss(
    tmp_path: Path, model_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_small_assistant(tmp_path, model_path)
    asked = [{"user": "Can I get a refund?"}]
    _write_cases(
        tmp_path / "cases.yml",
        [
            {
                "name": "answer holds the text",
                "turns": asked,
                "expected_sources": ["refunds.md"],
                "expected_answer": "within  14 DAYS",
            },
            {
                "name": "right document, other answer",
                "turns": asked,
                "expected_sources": ["refunds.md"],
                "expected_answer": "store credit only",
            },
        ],
    )
    monkeypatch.chdir(tmp_path)
    capture = _Capture()
    with capture:
        main(["eval", "cases.yml", "--json"])
    results = _report(capture.stdout)["case_results"]
    assert [case["sources"][0] for case in results] == ["refunds.md", "refunds.md"]
    assert [case["rank"]["context_model"] for case in results] == [1, None]


@pytest.mark.parametrize(
    ("case", "message"),
    [
        (
            {"name": "typo", "turns": [{"user": "q?"}], "expected_sources": ["plans/fre.md"]},
            "case 'typo': expected source 'plans/fre.md' is not a knowledge file",
        ),
        (
            {
                "name": "ends with bot",
                "turns": [{"user": "q?"}, {"bot": "a"}],
                "expected_sources": [],
            },
            "case 1 ('ends with bot')",
        ),
        (
            {
                "name": "bad filter",
                "turns": [{"user": "q?"}],
                "expected_sources": [],
                "expected_filter": "eq(plan, free",
            },
            "Cannot parse filter",
        ),
        (
            {"name": "unknown key", "turns": [{"user": "q?"}], "sources": []},
            "expected_sources: Field required",
        ),
        (
            {"name": "two speakers", "turns": [{"user": "q?", "bot": "a"}], "expected_sources": []},
            "either `user: text` or `bot: text`",
        ),
        (
            {"name": "odd kind", "turns": [{"user": "q?"}], "expected_sources": [], "kind": "x"},
            "case 1 ('odd kind').kind",
        ),
    ],
)
def test_a_bad_case_file_is_refused_before_any_model_loads(
    case: dict[str, Any], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = tmp_path / "cases.yml"
    _write_cases(cases, [case])
    monkeypatch.chdir(REPO_ROOT)
    capture = _Capture()
    with capture:
        code = main(["eval", str(cases)])
    assert code == 1
    assert message in capture.stderr
    assert capture.stdout == ""


def test_the_tracker_state_is_the_one_rasa_builds() -> None:
    case = EvalCase.model_validate(
        {
            "name": "follow-up with metadata",
            "slots": {"plan": "premium", "region": None},
            "turns": [
                {"user": "How do I enable offline files?"},
                {"bot": "Right-click a folder and choose Make available offline."},
                {"user": "and on Android?", "metadata": {"department": "sales"}},
            ],
            "expected_sources": ["sync/offline-files-android.md"],
        }
    )
    tracker = tracker_for(case)
    state = tracker_state(tracker)
    assert state["latest_message"]["text"] == "and on Android?"
    assert state["latest_message"]["metadata"] == {"department": "sales"}
    conversation = Conversation.from_tracker_state(state)
    assert [turn.role for turn in conversation.turns] == ["user", "bot", "user"]
    assert conversation.filled_slots == {"plan": "premium"}
    # Rasa's own query builder; it reads nothing from the policy instance
    rasa_query = EnterpriseSearchPolicy._prepare_search_query(None, tracker, 2)  # type: ignore[arg-type]
    assert rasa_default_query(tracker) == rasa_query
    assert rasa_query.startswith("and on Android? Right-click")


def test_the_suggested_threshold_separates_right_from_wrong_answers() -> None:
    tops = [
        TopResult(0.82, True),
        TopResult(0.61, True),
        TopResult(0.55, False),
        TopResult(0.40, True),
        TopResult(0.21, False),
        TopResult(0.18, False),
    ]
    best = suggest_threshold(tops)
    # 0.305 (between 0.21 and 0.40) keeps all three right answers and stops two wrong ones
    assert best.threshold == 0.305
    assert (best.right_kept, best.right_lost, best.wrong_passed, best.wrong_blocked) == (3, 0, 1, 2)


# Relevances on a 1e-4 grid: the suggestion is rounded to 6 decimals, so two scores closer than
# that cannot be told apart by any suggested threshold (hypothesis found 0 against 5e-239).
RELEVANCE = st.integers(0, 10_000).map(lambda steps: steps / 10_000)


@given(
    st.lists(
        st.tuples(RELEVANCE, st.booleans()).map(lambda t: TopResult(*t)),
        max_size=30,
    ),
    st.floats(0, 1, allow_nan=False),
)
def test_no_threshold_does_better_than_the_suggested_one(
    tops: list[TopResult], other: float
) -> None:
    best = suggest_threshold(tops, decimals=6)
    assert best.correct >= threshold_outcome(tops, other).correct
    assert best.right_kept + best.right_lost + best.wrong_passed + best.wrong_blocked == len(tops)


class _Capture:
    """stdout and stderr of an in-process command (capsys is function-scoped)."""

    def __enter__(self) -> _Capture:
        import contextlib
        import io

        self._out, self._err = io.StringIO(), io.StringIO()
        self._stack = contextlib.ExitStack()
        self._stack.enter_context(contextlib.redirect_stdout(self._out))
        self._stack.enter_context(contextlib.redirect_stderr(self._err))
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()
        self.stdout, self.stderr = self._out.getvalue(), self._err.getvalue()


def _write_cases(path: Path, cases: list[dict[str, Any]]) -> None:
    path.write_text(yaml.safe_dump({"cases": cases}, sort_keys=False), encoding="utf-8")


def _write_small_assistant(folder: Path, model_path: Path) -> None:
    docs = folder / "docs"
    docs.mkdir()
    (docs / "refunds.md").write_text(
        "---\nplan: [free, premium]\n---\nQ: Can I get a refund?\n"
        "A: Yes, within 14 days of purchase.\n",
        encoding="utf-8",
    )
    (docs / "pricing.md").write_text(
        "---\nplan: [premium]\n---\nQ: How much does Premium cost?\nA: 9.99 dollars a month.\n",
        encoding="utf-8",
    )
    policy = {
        "name": "EnterpriseSearchPolicy",
        "vector_store": {"type": "rasa_context_retrieval.ContextRetrieval"},
        "embeddings": {"provider": "huggingface_local", "model": str(model_path)},
    }
    (folder / "config.yml").write_text(yaml.safe_dump({"policies": [policy]}), encoding="utf-8")
    store = {
        "type": "rasa_context_retrieval.ContextRetrieval",
        "docs": "docs",
        "index_path": ".index",
        "metadata_fields": [{"name": "plan", "type": "list[string]"}],
    }
    (folder / "endpoints.yml").write_text(yaml.safe_dump({"vector_store": store}), encoding="utf-8")


def test_a_case_may_say_what_kind_of_question_it_ends_with_and_how_a_person_would_rewrite_it():
    case = EvalCase.model_validate(
        {
            "name": "which card",
            "turns": [
                {"user": "What's the annual fee on my credit card?"},
                {"bot": "Which card do you have?"},
                {"user": "the gold one"},
            ],
            "expected_sources": [],
            "kind": "clarification",
            "rewrite": "What is the annual fee on the Gold card?",
        }
    )

    assert (case.kind, case.rewrite) == (
        "clarification",
        "What is the annual fee on the Gold card?",
    )


def _tuning_cases() -> list[dict[str, Any]]:
    refund = [{"user": "Can I get a refund?"}, {"bot": "Yes, within 14 days of purchase."}]
    price = [{"user": "How much does Premium cost?"}, {"bot": "9.99 dollars a month."}]
    return [
        {
            "name": "s1",
            "kind": "standalone",
            "turns": [{"user": "Can I get a refund?"}],
            "expected_sources": ["refunds.md"],
        },
        {
            "name": "s2",
            "kind": "standalone",
            "turns": [{"user": "What does Premium cost?"}],
            "expected_sources": ["pricing.md"],
        },
        {
            "name": "s3",
            "kind": "standalone",
            "turns": [{"user": "Is my money returned?"}],
            "expected_sources": ["refunds.md"],
        },
        {
            "name": "f1",
            "kind": "follow-up",
            "turns": [*refund, {"user": "how long do I have?"}],
            "expected_sources": ["refunds.md"],
        },
        {
            "name": "f2",
            "kind": "follow-up",
            "turns": [*price, {"user": "and per year?"}],
            "expected_sources": ["pricing.md"],
        },
        {
            "name": "f3",
            "kind": "follow-up",
            "turns": [*refund, {"user": "for Premium too?"}],
            "expected_sources": ["refunds.md"],
        },
    ]


def _yaml_block(stdout: str, heading: str) -> dict[str, Any]:
    """The YAML lines printed under ``heading`` (up to the next blank line), parsed."""
    lines = stdout.splitlines()
    start = lines.index(heading)
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return yaml.safe_load("\n".join(lines[start:end]))


def test_tune_prints_settings_to_paste_picked_without_the_held_out_cases(
    tmp_path: Path, model_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rasa_context_retrieval.config import ContextWeightsBlock
    from rasa_context_retrieval.engine.search import KnowledgeSearch
    from rasa_context_retrieval.query_embedding.query_vectors import QueryVectors

    _write_small_assistant(tmp_path, model_path)
    _write_cases(tmp_path / "cases.yml", _tuning_cases())
    monkeypatch.chdir(tmp_path)
    searched: list[tuple[str, Any]] = []
    search = KnowledgeSearch.search

    async def recorded(self: Any, conversation: Conversation, *args: Any, **kwargs: Any) -> Any:
        searched.append((conversation.latest_user_text, self.planner._config.context_weights))
        return await search(self, conversation, *args, **kwargs)

    embedded: list[str] = []
    vectors = QueryVectors.vectors

    def counted(self: Any, texts: Any) -> Any:
        embedded.extend(text for text in texts if text not in self._cache)
        return vectors(self, texts)

    monkeypatch.setattr(KnowledgeSearch, "search", recorded)
    monkeypatch.setattr(QueryVectors, "vectors", counted)
    capture = _Capture()
    with capture:
        code = main(["eval", "cases.yml", "--tune"])

    assert code == 0
    endpoints = _yaml_block(capture.stdout, "# endpoints.yml")
    weights = ContextWeightsBlock(**endpoints["vector_store"]["context_weights"])
    assert set(endpoints["vector_store"]["context_weights"]) == set(
        ContextWeightsBlock.model_fields
    )
    config = _yaml_block(capture.stdout, "# config.yml, in the EnterpriseSearchPolicy entry")
    assert set(config["vector_store"]) == {"threshold"}
    assert 0.0 <= config["vector_store"]["threshold"] <= 1.0
    # every other case per kind is held out: s2, f2; they are searched only to score the pick
    # and the defaults, never with the other points of the grid
    held_out = {"What does Premium cost?", "and per year?"}
    used = [weights_ for text, weights_ in searched if text in held_out]
    assert sorted(map(repr, used)) == sorted(map(repr, [weights, weights, None, None]))
    picking = [text for text, _ in searched if text not in held_out]
    assert len(picking) == 4 * (32 + 1)  # every grid point, then the pick for its threshold
    assert len(embedded) == len(set(embedded))  # every text embedded once
