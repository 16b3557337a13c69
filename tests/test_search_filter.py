"""One assembled filter per search: what the backend runs, what the results are checked against
after it, and what the user is shown all come from the same ``SearchFilter``."""

from __future__ import annotations

from typing import Any

from rasa_context_retrieval.access.channel import ChannelMetadata
from rasa_context_retrieval.access.entitlements import AccessFilter
from rasa_context_retrieval.filters.syntax import parse_filter, to_filter_syntax
from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.planning.search_filter import SearchFilter

FREE_USER = AccessFilter.from_channel(ChannelMetadata({"plan": "free"}), {"plan": "plan"})
ANDROID = parse_filter('eq("platform", "android")')
EU = parse_filter('eq("region", "eu")')


def chunk(name: str, **metadata: Any) -> Chunk:
    return Chunk(chunk_id=name, text=name, metadata={"source": name, **metadata})


def test_the_filter_shown_is_scope_and_words_and_the_backend_gets_the_words_widened() -> None:
    filters = SearchFilter(
        access=FREE_USER, extracted=ANDROID, carried=EU, absent_means_all=("platform",)
    )
    assert to_filter_syntax(filters.as_written) == (
        'and(not(nin("plan", ["free"])), eq("platform", "android"), eq("region", "eu"))'
    )
    assert filters.widened
    general = chunk("general", plan=["free"], region="eu")
    assert filters.check([general]) == ([True], 0)  # lacks platform: applies to every app
    strict = SearchFilter(access=FREE_USER, extracted=ANDROID, carried=EU)
    assert not strict.widened and strict.for_backend == strict.as_written
    assert strict.check([general]) == ([False], 0)


def test_the_result_check_keeps_the_exact_access_rule_and_counts_what_it_rejected() -> None:
    filters = SearchFilter(access=FREE_USER, extracted=ANDROID, absent_means_all=("platform",))
    chunks = [chunk("paid", plan=["plus"], platform=["android"]), chunk("free", plan=["free"])]
    assert filters.check(chunks) == ([False, True], 1)


def test_relaxing_drops_only_the_words_never_the_scope() -> None:
    slots = parse_filter('eq("region", "us")')
    filters = SearchFilter(access=FREE_USER, slots=slots, extracted=ANDROID, carried=EU)
    relaxed = filters.without_words()
    assert not relaxed.has_words and filters.has_words
    assert relaxed.as_written == relaxed.for_backend == filters.scope
    assert to_filter_syntax(relaxed.as_written) == (
        'and(not(nin("plan", ["free"])), eq("region", "us"))'
    )


def test_the_notes_name_each_widened_attribute_the_words_test() -> None:
    filters = SearchFilter(extracted=ANDROID, carried=EU, absent_means_all=("region", "plan"))
    assert filters.notes == ("documents without 'region' also match (absent_means_all)",)
