"""A constructor remembers the messages it has read: carried filters read a conversation's
earlier turns again on every follow-up. What it remembers must never change an answer."""

from __future__ import annotations

import datetime as dt

from rasa_context_retrieval.schema import MetadataField
from rasa_context_retrieval.self_query.rules import RuleQueryConstructor

EVENTS = (
    MetadataField(name="city", type="string", description="City the event takes place in"),
    MetadataField(name="starts", type="date", description="Day the event takes place"),
    MetadataField(name="price", type="float", description="Ticket price in euros"),
)
CITIES = {"city": frozenset(["Porto", "Lyon", "Ghent"])}


def test_a_message_read_again_gets_the_same_filter() -> None:
    rules = RuleQueryConstructor(EVENTS, CITIES, today=lambda: dt.date(2025, 6, 15))
    first = rules.construct("events in Porto under 30 euros")
    again = rules.construct("events in Porto under 30 euros")
    assert first.filter is not None
    assert again == first


def test_a_new_day_reads_relative_dates_again() -> None:
    day = [dt.date(2025, 6, 15)]
    rules = RuleQueryConstructor(EVENTS, CITIES, today=lambda: day[0])
    june = rules.construct("what is on this month in Lyon?")
    day[0] = dt.date(2025, 7, 2)
    july = rules.construct("what is on this month in Lyon?")
    assert "2025-06-01" in str(june.filter)
    assert "2025-07-01" in str(july.filter)
    assert "2025-06" not in str(july.filter)


def test_changing_what_was_returned_does_not_change_what_is_remembered() -> None:
    rules = RuleQueryConstructor(EVENTS, CITIES, today=lambda: dt.date(2025, 6, 15))
    found = rules.constraints("events in Ghent")
    assert found
    found.clear()
    assert rules.constraints("events in Ghent")
    assert rules.construct("events in Ghent").filter is not None
