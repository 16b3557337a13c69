"""Grouping one query mix by token counts: each text once, similar lengths together."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rasa_context_retrieval.query_embedding.length_groups import CALL_OVERHEAD_TOKENS, length_groups


@given(st.lists(st.integers(min_value=1, max_value=256), max_size=40))
def test_every_text_is_embedded_exactly_once_shortest_groups_first(lengths):
    groups = length_groups(lengths)
    assert sorted(i for group in groups for i in group) == list(range(len(lengths)))
    widths = [max(lengths[i] for i in group) for group in groups]
    assert widths == sorted(widths)
    for group in groups:
        assert [lengths[i] for i in group] == sorted(lengths[i] for i in group)


@given(st.lists(st.integers(min_value=1, max_value=256), min_size=1, max_size=40))
def test_a_group_never_pads_more_than_a_separate_call_would_cost_per_step(lengths):
    for group in length_groups(lengths):
        ordered = [lengths[i] for i in group]
        for n in range(1, len(ordered)):
            assert n * (ordered[n] - ordered[n - 1]) <= CALL_OVERHEAD_TOKENS


def test_a_long_bot_reply_is_embedded_apart_from_the_short_questions():
    # message, earlier question, topic question, last bot reply
    assert length_groups([7, 12, 9, 98]) == [[0, 2, 1], [3]]


def test_texts_of_equal_length_share_one_call():
    assert length_groups([20, 20, 20, 20]) == [[0, 1, 2, 3]]


def test_no_texts_no_groups():
    assert length_groups([]) == []


@given(
    st.lists(st.integers(min_value=1, max_value=256), max_size=40),
    st.integers(min_value=1, max_value=8),
)
def test_idle_cores_get_a_group_each_and_every_text_is_still_embedded_once(lengths, cores):
    groups = length_groups(lengths, cores=cores)
    assert sorted(i for group in groups for i in group) == list(range(len(lengths)))
    assert len(groups) >= min(cores, len(lengths))
    assert len(groups) <= max(len(length_groups(lengths)), cores)
    for group in groups:
        assert [lengths[i] for i in group] == sorted(lengths[i] for i in group)


def test_two_short_questions_go_to_two_idle_cores_and_share_one_call_on_a_busy_machine():
    # a follow-up whose bot reply is already embedded: its message and its words rewrite
    assert length_groups([13, 16], cores=2) == [[0], [1]]
    assert length_groups([13, 16], cores=1) == [[0, 1]]


def test_the_split_balances_the_costliest_group():
    assert length_groups([10, 11, 12, 13], cores=2) == [[0, 1], [2, 3]]
    assert length_groups([7, 12, 9, 98], cores=2) == [[0, 2, 1], [3]]  # already two groups
