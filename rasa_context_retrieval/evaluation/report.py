"""The evaluation report: one JSON-ready dict, and its rendering for people.

The dict is the single source of every number; the text is only a view of it, so ``--json``
(for CI) and the printed table never disagree.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from rasa_context_retrieval.evaluation.cases import UNLABELLED, group_by_kind
from rasa_context_retrieval.evaluation.metrics import (
    TopResult,
    latency_percentiles,
    ranking_scores,
    suggest_threshold,
    threshold_outcome,
)
from rasa_context_retrieval.evaluation.runner import (
    CONTEXT_MODEL,
    HUMAN_REWRITE,
    ROWS,
    CaseResult,
)

ROW_LABELS = {
    CONTEXT_MODEL: "plugin (context model)",
    "latest_message": "latest message alone",
    "rasa_default_query": "Rasa default query",
    HUMAN_REWRITE: "human rewrite",
}
LABEL_WIDTH = 28


def build_report(
    results: Sequence[CaseResult],
    top_k: int,
    configured_threshold: float | None = None,
    min_mrr: float | None = None,
) -> dict[str, Any]:
    """Every number of the evaluation; ``passed`` is False when MRR is below ``min_mrr``."""
    answerable = [result for result in results if result.case.answerable]
    follow_ups = [result for result in answerable if result.case.is_follow_up]
    checked = [result for result in results if result.filter_right is not None]
    tops = [_top(result) for result in results]
    scores = _scores(answerable)
    mrr = scores[CONTEXT_MODEL]["mrr"]
    return {
        "cases": len(results),
        "answerable": len(answerable),
        "follow_ups": len(follow_ups),
        "top_k": top_k,
        "scores": scores,
        "follow_up_scores": _scores(follow_ups),
        "scores_by_kind": _scores_by_kind(answerable),
        "filters": {
            "checked": len(checked),
            "right": sum(bool(result.filter_right) for result in checked),
            "accuracy": _ratio(sum(bool(r.filter_right) for r in checked), len(checked)),
            "wrong": [result.case.name for result in checked if not result.filter_right],
        },
        "latency_ms": latency_percentiles([result.latency_ms for result in results]),
        "threshold": {
            "suggested": dataclasses.asdict(suggest_threshold(tops)),
            "configured": None
            if configured_threshold is None
            else dataclasses.asdict(threshold_outcome(tops, configured_threshold)),
        },
        "min_mrr": min_mrr,
        "passed": min_mrr is None or (mrr is not None and mrr >= min_mrr),
        "case_results": [_case_entry(result) for result in results],
    }


def render_text(report: dict[str, Any]) -> str:
    """The report as a short table, readable at 100 columns."""
    lines = [
        f"{report['cases']} cases ({report['answerable']} answerable, "
        f"{report['follow_ups']} of them follow-ups), top_k {report['top_k']}",
        "",
        f"{'searched text':<{LABEL_WIDTH}}{'Hit@1':>8}{'Hit@k':>8}{'MRR':>8}"
        f"   {'follow-ups:':<12}{'Hit@1':>6}{'MRR':>7}",
    ]
    for row in _shown_rows(report["scores"]):
        follow = report["follow_up_scores"][row]
        lines.append(
            _score_line(_row_label(row, report["scores"]), report["scores"][row])
            + f"   {'':<12}{_num(follow['hit_at_1']):>6}{_num(follow['mrr']):>7}"
        )
    lines += _kind_lines(report["scores_by_kind"])
    filters, latency = report["filters"], report["latency_ms"]
    lines += [
        "",
        f"filters right: {filters['right']}/{filters['checked']}"
        + (f" (wrong: {', '.join(filters['wrong'])})" if filters["wrong"] else ""),
        f"latency (plan + retrieve): p50 {latency['p50']} ms, p95 {latency['p95']} ms",
        *_threshold_lines(report["threshold"]),
        *_miss_lines(report["case_results"]),
    ]
    if report["min_mrr"] is not None:
        verdict = "passed" if report["passed"] else "FAILED"
        lines.append(
            f"MRR {_num(report['scores'][CONTEXT_MODEL]['mrr'])} "
            f"vs --min-mrr {report['min_mrr']}: {verdict}"
        )
    return "\n".join(lines)


def _scores(results: Sequence[CaseResult]) -> dict[str, dict[str, Any]]:
    """Each row over the cases it was searched for (the human rewrite: those that have one)."""
    return {
        row: dataclasses.asdict(
            ranking_scores(
                [
                    result.rankings[row].first_right_rank
                    for result in results
                    if row in result.rankings
                ]
            )
        )
        for row in ROWS
    }


def _scores_by_kind(answerable: Sequence[CaseResult]) -> dict[str, dict[str, dict[str, Any]]]:
    """Every row's scores per kind of last question; empty when no case states a kind."""
    groups = group_by_kind(answerable, lambda result: result.case.kind)
    if set(groups) <= {UNLABELLED}:
        return {}
    return {kind: _scores(members) for kind, members in groups.items()}


def _top(result: CaseResult) -> TopResult:
    ranking = result.rankings[CONTEXT_MODEL]
    relevance = ranking.relevances[0] if ranking.relevances else 0.0
    return TopResult(relevance=relevance, right=ranking.first_right_rank == 1)


def _case_entry(result: CaseResult) -> dict[str, Any]:
    plugin = result.rankings[CONTEXT_MODEL]
    return {
        "name": result.case.name,
        "kind": result.case.kind,
        "rewrite": result.case.rewrite,
        "follow_up": result.case.is_follow_up,
        "expected_sources": list(result.case.expected_sources),
        "expected_answer": result.case.expected_answer,
        "searched_text": plugin.query,
        "filter": result.filter,
        "expected_filter": result.case.expected_filter if result.case.checks_filter else None,
        "filter_right": result.filter_right,
        "sources": list(plugin.sources),
        "relevances": list(plugin.relevances),
        "rank": {row: ranking.first_right_rank for row, ranking in result.rankings.items()},
        "latency_ms": result.latency_ms,
    }


def _score_line(label: str, scores: dict[str, Any]) -> str:
    return (
        f"{label:<{LABEL_WIDTH}}{_num(scores['hit_at_1']):>8}"
        f"{_num(scores['hit_at_k']):>8}{_num(scores['mrr']):>8}"
    )


def _kind_lines(scores_by_kind: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """One block per kind of last question: every row's scores on those cases only."""
    if not scores_by_kind:
        return []
    lines = ["", f"{'by kind of last question':<{LABEL_WIDTH}}{'Hit@1':>8}{'Hit@k':>8}{'MRR':>8}"]
    for kind, scores in scores_by_kind.items():
        lines.append(f"{kind} ({scores[CONTEXT_MODEL]['cases']} answerable)")
        lines += [
            _score_line(f"  {_row_label(row, scores)}", scores[row]) for row in _shown_rows(scores)
        ]
    return lines


def _shown_rows(scores: dict[str, dict[str, Any]]) -> list[str]:
    """The rows to print: the human rewrite only when some of these cases have one."""
    return [row for row in ROWS if row != HUMAN_REWRITE or scores[row]["cases"]]


def _row_label(row: str, scores: dict[str, dict[str, Any]]) -> str:
    """The row's name; the human rewrite's says over how many of the cases it ran."""
    if row != HUMAN_REWRITE:
        return ROW_LABELS[row]
    return f"{ROW_LABELS[row]} ({scores[row]['cases']} of {scores[CONTEXT_MODEL]['cases']})"


def _threshold_lines(threshold: dict[str, Any]) -> list[str]:
    lines = []
    for label, outcome in (
        ("suggested", threshold["suggested"]),
        ("configured", threshold["configured"]),
    ):
        if outcome is None:
            continue
        lines.append(
            f"{label} threshold {outcome['threshold']:.3f}: top results answered "
            f"{outcome['right_kept']} right / {outcome['wrong_passed']} wrong, held back "
            f"{outcome['right_lost']} right / {outcome['wrong_blocked']} wrong"
        )
    return lines


def _miss_lines(cases: Sequence[dict[str, Any]]) -> list[str]:
    misses = [
        case for case in cases if case["expected_sources"] and case["rank"][CONTEXT_MODEL] != 1
    ]
    if not misses:
        return []
    lines = ["", "top result not from an expected source (or without the expected answer):"]
    for case in misses:
        found = case["sources"][0] if case["sources"] else "nothing"
        rank = case["rank"][CONTEXT_MODEL]
        where = f"at rank {rank}" if rank else "not in the results"
        kind = f" ({case['kind']})" if case["kind"] else ""
        lines.append(f"  {case['name']}{kind}")
        expected = ", ".join(case["expected_sources"])
        if case.get("expected_answer"):
            expected += f' answering "{case["expected_answer"]}"'
        lines.append(f"    got {found}; expected {expected} {where}")
    return lines


def _ratio(part: int, whole: int) -> float | None:
    return None if whole == 0 else part / whole


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
