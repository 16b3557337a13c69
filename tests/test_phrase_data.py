"""The follow-up decision's English is read from phrase data, so a new phrase is a data row."""

from __future__ import annotations

import pytest

from rasa_context_retrieval import phrase_data
from rasa_context_retrieval.follow_up import Stage, announces_new_subject, follows_up


def test_a_missing_entry_names_the_phrase_file_and_its_section() -> None:
    with pytest.raises(AttributeError, match=r"follow_up\.yaml has no NO_SUCH_WORDS in follow_up"):
        _ = phrase_data.words("follow_up").NO_SUCH_WORDS


def test_each_kind_of_entry_is_read_in_the_shape_the_logic_uses() -> None:
    assert "it" in phrase_data.words("follow_up").ANAPHORA
    assert "and for android?".startswith(phrase_data.openings("follow_up").ELLIPSIS_OPENINGS)
    assert phrase_data.patterns("follow_up").NEW_SUBJECT.match("Separate question, how do I pay?")


def test_the_decision_reads_the_announcements_of_a_new_subject_from_the_data() -> None:
    announced = "different question: how do i pay by card"
    assert announces_new_subject(announced)
    assert not follows_up(announced, Stage.REWRITE)
