"""How metadata values and filter values are read: the value rules every backend shares.

Document metadata comes from front matter and is loosely typed, and so are filter values (from
slots, rules, an LLM). Both sides are read here, once, into the same readings, so the FAISS
columns (``filters.columns``), the Milvus normal form (``milvus.normal_form``) and the filter
operands agree by construction:

* strings are trimmed and casefolded (``normalise_text``);
* a string is also a number when it is decimal text (``"19.99"``), a date or instant when it is
  ISO 8601 (``"2024-03-01"``, ``"2024-03-01T10:00:00Z"``, compared in UTC), a bool when it is
  ``"true"``/``"false"``;
* a list's members are strings (bools as ``"true"``/``"false"``, numbers as written);
* numbers compare by their exact value (``exact_number``): ``1`` equals ``1.0``, but two integers
  above 2**53 that differ never meet, though they share a float;
* an integer of ``MAX_INTEGER_MAGNITUDE`` or more is read as its digits (text, no number);
* ``None``, ``""``, blank strings, empty lists, non-finite numbers and other types are missing.

A filter value is read the same way, plus: an integer is also the first day of that year when
compared with dates, ``{"date": ..., "type": "date"}`` compares by day and
``{"datetime": ..., "type": "datetime"}`` by second.
"""

from __future__ import annotations

import datetime as dt
import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

_INTEGER = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_DATE_START = re.compile(r"\d{4}-\d{2}-\d{2}")
_YEAR = re.compile(r"\d{4}")
_TEMPORAL_TYPES = ("date", "datetime")
_DATE_LENGTH = len("YYYY-MM-DD")
_EPOCH = dt.datetime(1970, 1, 1)
BOOLEAN_WORDS = {"true": True, "false": False}
"""The strings that also read as bools (after normalisation)."""


def normalise_text(text: str) -> str:
    """The form in which strings are compared: trimmed and casefolded."""
    return text.strip().casefold()


Number = int | float
"""A number as the filters compare it: an integer stays a Python ``int`` (exact), others float."""

MAX_INTEGER_MAGNITUDE = 2**64
"""Integers are compared exactly below this magnitude (every signed or unsigned 64-bit id); a
larger integer is no number at all, so it matches no numeric comparison rather than a wrong one."""

FLOAT_EXACT_LIMIT = 2**53
"""Below this magnitude every integer is a float: no two numbers share a float there."""


def exact_number(value: Any) -> Number | None:
    """The exact value of a number a filter or a document holds, else ``None``.

    A bool is not a number. An integer stays an ``int``, because above 2**53 distinct integers
    (64-bit ids from a database) share a float; Python compares ``int`` and ``float`` exactly
    against each other, so ``1 == 1.0`` still holds. Non-finite numbers and integers of
    ``MAX_INTEGER_MAGNITUDE`` or more are ``None``.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        integer = int(value)
        return integer if abs(integer) < MAX_INTEGER_MAGNITUDE else None
    if isinstance(value, numbers.Real):
        number = float(value)
        return number if np.isfinite(number) else None
    return None


def number_parts(number: Number) -> tuple[float, int]:
    """A number as two parts the backends can store and compare: the nearest float, and the
    exact integer that remains (``0`` for every float and every integer below 2**53).

    Rounding to the nearest float never reverses an order, so comparing (float, remainder)
    pairs in order is comparing the exact numbers: equal pairs are equal numbers. Below
    ``MAX_INTEGER_MAGNITUDE`` the remainder is at most 2**11 in magnitude.
    """
    rounded = float(number)
    remainder = number - int(rounded) if isinstance(number, int) else 0
    return rounded, remainder


def parse_number(text: str) -> Number | None:
    """A finite number written as decimal text, else ``None``; whole numbers written without a
    point or exponent are integers, read exactly (``exact_number``)."""
    text = text.strip()
    if _INTEGER.fullmatch(text):
        try:
            return exact_number(int(text))
        except ValueError:  # more digits than Python converts: far beyond any exact integer
            return None
    if not _NUMBER.fullmatch(text):
        return None
    return exact_number(float(text))


def parse_instant(value: Any) -> dt.datetime | None:
    """A naive UTC datetime from a date, a datetime or an ISO 8601 string, else ``None``.

    Strings are upper-cased first, so that a casefolded ``2024-03-01t10:00:00z`` still reads.
    """
    if isinstance(value, dt.datetime):
        instant = value
    elif isinstance(value, dt.date):
        instant = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str) and _DATE_START.match(value.strip()):
        try:
            instant = dt.datetime.fromisoformat(value.strip().upper())
        except ValueError:
            return None
    else:
        return None
    if instant.tzinfo is not None:
        instant = instant.astimezone(dt.UTC).replace(tzinfo=None)
    return instant


def epoch_days(instant: dt.datetime) -> int:
    """Whole days since 1970-01-01 of a naive UTC datetime (the day it falls on)."""
    return (instant - _EPOCH).days


def epoch_seconds(instant: dt.datetime) -> int:
    """Whole seconds since 1970-01-01T00:00:00 of a naive UTC datetime."""
    delta = instant - _EPOCH
    return delta.days * 86_400 + delta.seconds


# ------------------------------------------------------------------------- stored values


@dataclass(frozen=True)
class StringReading:
    """Everything one stored string means (computed once per distinct string)."""

    text: str
    number: Number | None
    instant: dt.datetime | None
    boolean: bool | None


def read_string(raw: str) -> StringReading:
    text = normalise_text(raw)
    return StringReading(
        text=text,
        number=parse_number(text),
        instant=parse_instant(raw),
        boolean=BOOLEAN_WORDS.get(text),
    )


@dataclass(frozen=True)
class StoredValue:
    """One metadata value sorted by kind; exactly one field is set. Missing values have none."""

    string: str | None = None
    """A non-blank string as written (read further with ``read_string``)."""
    members: tuple[str, ...] = ()
    """A list's non-blank members as written."""
    number: Number | None = None
    instant: dt.datetime | None = None
    boolean: bool | None = None


def stored_value(value: Any) -> StoredValue | None:
    """What a metadata value is for filtering, or ``None`` when it counts as missing."""
    if isinstance(value, str):
        return StoredValue(string=value) if value.strip() else None
    if type(value) is list:  # the usual front-matter list, before the slower abstract checks
        members = tuple(list_members(value))
        return StoredValue(members=members) if members else None
    if isinstance(value, bool):
        return StoredValue(boolean=value)
    if isinstance(value, numbers.Integral) and exact_number(value) is None:
        return StoredValue(string=str(int(value)))  # too large to compare as a number
    if isinstance(value, numbers.Real):
        number = exact_number(value)
        return StoredValue(number=number) if number is not None else None
    if isinstance(value, dt.date):
        return StoredValue(instant=parse_instant(value))
    if isinstance(value, list | tuple | set | frozenset):
        members = tuple(list_members(value))
        return StoredValue(members=members) if members else None
    return None


def list_members(values: Any) -> list[str]:
    """A list's members as strings as written, blanks and other types left out."""
    members = []
    for member in values:
        if type(member) is str:  # the usual member: what the checks below would keep
            if member.strip():
                members.append(member)
            continue
        if isinstance(member, bool):
            member = "true" if member else "false"
        if isinstance(member, str | numbers.Real) and str(member).strip():
            members.append(str(member))
    return members


# -------------------------------------------------------------------------- filter values


@dataclass(frozen=True)
class Operand:
    """One filter value, read every way a chunk's value could be compared with it."""

    text: str | None = None
    number: Number | None = None
    instant: dt.datetime | None = None
    has_time: bool = False
    """Compare by second (a datetime) rather than by day (a date)."""
    boolean: bool | None = None

    @property
    def comparable(self) -> bool:
        return any(
            reading is not None for reading in (self.text, self.number, self.instant, self.boolean)
        )


def comparison_operands(in_or_nin: bool, value: Any) -> list[Operand]:
    """The operands of a comparison: each item for in/nin, else the one value."""
    if in_or_nin:
        return [read_operand(item) for item in _as_list(value)]
    return [read_operand(value)]


def read_operand(value: Any) -> Operand:
    """Every reading of a filter value (see module docstring); unknown types read as nothing."""
    if isinstance(value, bool):
        return Operand(boolean=value)
    if isinstance(value, numbers.Integral) and exact_number(value) is None:
        return _read_string_operand(str(int(value)))  # too large to compare as a number
    if isinstance(value, numbers.Integral):
        return Operand(number=exact_number(value), instant=_year_start(int(value)))
    if isinstance(value, numbers.Real):
        return Operand(number=exact_number(value))
    if isinstance(value, Mapping) and value.get("type") in _TEMPORAL_TYPES:
        text = value.get(str(value["type"]))
        return _temporal(text, has_time=value["type"] == "datetime")
    if isinstance(value, dt.date):
        return _temporal(value, has_time=isinstance(value, dt.datetime))
    if isinstance(value, str):
        return _read_string_operand(value)
    return Operand()


def _read_string_operand(value: str) -> Operand:
    text = normalise_text(value)
    number = parse_number(text)
    instant = parse_instant(text)
    if instant is None and number is not None and _YEAR.fullmatch(text):
        instant = _year_start(int(text))
    return Operand(
        text=text,
        number=number,
        instant=instant,
        has_time=instant is not None and len(text) > _DATE_LENGTH,
        boolean=BOOLEAN_WORDS.get(text),
    )


def _temporal(value: Any, *, has_time: bool) -> Operand:
    instant = parse_instant(value)
    return Operand(instant=instant, has_time=has_time) if instant is not None else Operand()


def _year_start(year: int) -> dt.datetime | None:
    return dt.datetime(year, 1, 1) if 1 <= year <= 9999 else None


def _as_list(value: Any) -> Sequence[Any]:
    return list(value) if isinstance(value, list | tuple | set | frozenset) else [value]
