"""Entitlements are bounded like any filter, cost linear work per search, keep audit lines short.

The work is measured by structure (how often a value is converted for comparison), never by
wall clock; timings are in ``bench/access_bounds.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from rasa_context_retrieval.access.channel import ChannelMetadata
from rasa_context_retrieval.access.entitlements import AccessFilter
from rasa_context_retrieval.engine.search import (
    AUDIT_FILTER_CHARS,
    AUDIT_VALUE_CHARS,
    AUDIT_VALUES,
    SearchOutcome,
)
from rasa_context_retrieval.filters.bounds import MAX_FILTER_NODES, FilterTooLarge
from rasa_context_retrieval.filters.slot_filters import slot_filter
from rasa_context_retrieval.planning.plan import SearchPlan
from rasa_context_retrieval.planning.search_filter import SearchFilter

PLAN = {"plan": "plan"}


def access(message: Any) -> AccessFilter:
    found = AccessFilter.from_channel(ChannelMetadata(message), PLAN)
    assert found is not None
    return found


class CountedNumber(int):
    """An entitlement number that counts how often it is read as a float (once per comparison
    under the rules' ``1 == 1.0``)."""

    reads = 0

    def __float__(self) -> float:
        CountedNumber.reads += 1
        return int.__float__(self)


@pytest.fixture
def reads() -> Any:
    CountedNumber.reads = 0
    return lambda: CountedNumber.reads


# --- the bound --------------------------------------------------------------------------------


def test_an_entitlement_list_as_long_as_a_slot_list_may_be_is_granted() -> None:
    plans = [f"plan-{number}" for number in range(MAX_FILTER_NODES)]
    granted = access({"plan": plans})
    assert len(granted.clauses[0].allowed) == MAX_FILTER_NODES
    assert granted.admits({"plan": plans[-1]})


def test_a_longer_entitlement_list_grants_public_documents_only_with_one_warning() -> None:
    plans = [f"secret-{number}" for number in range(MAX_FILTER_NODES + 1)]
    with capture_logs() as logs:
        denied = access({"plan": plans})
    assert denied.clauses[0].allowed == ()
    assert not denied.admits({"plan": plans[0]})
    assert denied.admits({"title": "a public page"})
    warnings = [log for log in logs if log["log_level"] == "warning"]
    assert len(warnings) == 1
    assert warnings[0]["key"] == "plan"
    assert warnings[0]["count"] == MAX_FILTER_NODES + 1
    assert "secret-" not in repr(warnings[0])


def test_a_slot_list_over_the_same_bound_is_refused() -> None:
    values = [f"plan-{number}" for number in range(MAX_FILTER_NODES + 1)]
    with pytest.raises(FilterTooLarge):
        slot_filter({"plan": values}, {"plan": "plan"})


def test_a_list_over_the_bound_in_the_message_does_not_fall_back_to_the_session() -> None:
    channel = ChannelMetadata({"plan": ["x"] * (MAX_FILTER_NODES + 1)}, {"plan": "premium"})
    denied = AccessFilter.from_channel(channel, PLAN)
    assert denied is not None
    assert not denied.admits({"plan": "premium"})


# --- linear work ------------------------------------------------------------------------------


def test_de_duplication_keeps_the_rules_and_the_first_spelling() -> None:
    granted = access({"plan": [1, 1.0, True, "1", " a ", "a", False, 0, 2.5, "a "]})
    assert granted.clauses[0].allowed == (1, True, "1", "a", False, 0, 2.5)


def test_de_duplicating_an_entitlement_list_reads_each_value_a_bounded_number_of_times(
    reads: Any,
) -> None:
    numbers = [CountedNumber(number) for number in range(MAX_FILTER_NODES)]
    granted = access({"plan": numbers})
    assert len(granted.clauses[0].allowed) == MAX_FILTER_NODES
    # Linear: a few reads per value (pairwise comparison would read about a million times).
    assert reads() <= 4 * MAX_FILTER_NODES


def test_checking_a_result_costs_a_look_up_per_value_it_holds(reads: Any) -> None:
    granted = access({"plan": list(range(MAX_FILTER_NODES))})
    held = [CountedNumber(-number) for number in range(1, MAX_FILTER_NODES + 1)]
    assert not granted.admits({"plan": held})
    assert reads() <= 2 * len(held)
    assert granted.admits({"plan": [*held, CountedNumber(7)]})


def test_every_stage_reads_one_access_directive_per_search() -> None:
    granted = access({"plan": [f"plan-{number}" for number in range(MAX_FILTER_NODES)]})
    plan = SearchPlan("q", "q", SearchFilter(access=granted))
    assert granted.directive is granted.directive
    assert plan.filters.scope is granted.directive


# --- the audit line ---------------------------------------------------------------------------


def test_the_audit_line_shows_a_bounded_part_of_a_long_entitlement_and_its_count() -> None:
    plans = [f"plan-{number}-" + "x" * 300 for number in range(MAX_FILTER_NODES)]
    audit = SearchOutcome(
        [], SearchPlan("q", "q", SearchFilter(access=access({"plan": plans})))
    ).audit()
    assert audit["entitlement_counts"] == {"plan": MAX_FILTER_NODES}
    assert len(audit["access_filter"]) <= AUDIT_FILTER_CHARS + 3
    assert f"plan-{AUDIT_VALUES}-" not in audit["access_filter"]
    assert "x" * AUDIT_VALUE_CHARS not in audit["access_filter"]
    assert len(repr(audit)) < 3 * AUDIT_FILTER_CHARS


def test_the_audit_line_of_a_short_entitlement_is_the_whole_filter() -> None:
    audit = SearchOutcome(
        [], SearchPlan("q", "q", SearchFilter(access=access({"plan": "plus"})))
    ).audit()
    assert audit["access_filter"] == 'not(nin("plan", ["plus"]))'
    assert audit["entitlement_counts"] == {"plan": 1}
