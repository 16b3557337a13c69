"""Access filters: entitlements from trusted channel metadata, denied by default.

``access_filters: {plan: plan}`` in the ``vector_store:`` block maps a channel metadata key to a
document attribute. For each mapping the user's entitlement is read from the latest message's
metadata, or, when that message does not carry the key at all, from the session's metadata (see
:mod:`rasa_context_retrieval.access.channel`). The rules, defined here once:

* A string matches exactly after trimming whitespace; it is never case-folded or normalised
  further. Numbers and bools keep their type (``1`` is not ``"1"``, ``True`` is not ``1``), and
  numbers compare exactly, never through a float (two 64-bit ids never match each other).
* A scalar entitles to that value; a list to any of its usable items.
* A document without the attribute (missing, ``None``, blank text or an empty list) is
  *unattributed*: public by default (every access filter admits it), or, with
  ``unattributed_documents: private``, admitted by none. Any other value (a dict, say) is never
  public.
* A key that is missing, empty or unusable entitles to nothing: only public documents remain.
  A key present in the latest message but unusable does not fall back to the session.
* A list longer than ``MAX_FILTER_NODES`` (the bound every filter and slot list obeys) is
  unusable too, before any item is read: only public documents remain, and one warning names
  the key and the count (never the values).

The rules above reduce to one comparison key per value (``_key``), so de-duplicating an
entitlement list and checking a document's values are set look-ups, linear in the values; a
search never compares every allowed value with every held one.

:meth:`AccessFilter.admits` is the decision. :attr:`AccessFilter.directive` is the same filter in
the shared filter IR, ``not(nin(attribute, allowed))`` ("no allowed value is missing" reads as
"an allowed value, or no value at all"), or ``in(attribute, allowed)`` when unattributed
documents are private, so that every backend can search within it; backends compare strings
case-insensitively and the directive also names how a number or a bool is written as a list
member (:attr:`AccessClause.searched`), so it admits a superset, never less than the rule, and
every result is then checked with :meth:`AccessFilter.admits` before it leaves the plugin.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import structlog
from langchain_core.structured_query import (
    Comparator,
    Comparison,
    FilterDirective,
    Operation,
    Operator,
)

from rasa_context_retrieval.access.channel import ChannelMetadata
from rasa_context_retrieval.filters.bounds import MAX_FILTER_NODES
from rasa_context_retrieval.filters.syntax import conjoin
from rasa_context_retrieval.filters.values import list_members
from rasa_context_retrieval.knowledge.access_attributes import is_unattributed

logger = structlog.get_logger()

EntitlementSource = Literal["message", "session", "none"]
AccessValue = str | bool | int | float
Unattributed = Literal["public", "private"]
ValueKey = tuple[str, Hashable]
"""A value as the rules compare it: equal keys are exactly the values the rules call the same."""


@dataclass(frozen=True)
class AccessClause:
    """One attribute's restriction: the values the user is entitled to, and where they came from."""

    attribute: str
    allowed: tuple[AccessValue, ...]
    source: EntitlementSource
    unattributed: Unattributed = "public"
    """Whether a document without the attribute is public or private."""
    _keys: frozenset[ValueKey] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        keys = frozenset(key for key in map(_key, self.allowed) if key is not None)
        object.__setattr__(self, "_keys", keys)

    def admits(self, metadata: Mapping[str, Any]) -> bool:
        """One set look-up per value the document holds, whatever the number of entitlements."""
        value = metadata.get(self.attribute)
        if is_unattributed(value):
            return self.unattributed == "public"
        held = value if isinstance(value, list | tuple) else [value]
        return any(_key(item) in self._keys for item in held)

    @property
    def key(self) -> tuple[str, Unattributed, frozenset[ValueKey]]:
        """What decides which documents the clause admits (two equal keys admit the same)."""
        return self.attribute, self.unattributed, self._keys

    def audited(self, max_values: int, max_chars: int) -> AccessClause:
        """The clause cut for a log line: its first ``max_values`` values, texts cut to
        ``max_chars`` characters."""
        shown = tuple(
            value[:max_chars] if isinstance(value, str) else value
            for value in self.allowed[:max_values]
        )
        return AccessClause(self.attribute, shown, self.source, self.unattributed)

    @cached_property
    def directive(self) -> FilterDirective:
        """Built once: every stage of a search reads it, and the list may be long. ``in`` and
        ``nin`` match no chunk lacking the attribute (``filters.semantics``), so ``in`` alone
        leaves unattributed documents out."""
        searched = self.searched
        if self.unattributed == "private":
            return Comparison(comparator=Comparator.IN, attribute=self.attribute, value=searched)
        return Operation(
            operator=Operator.NOT,
            arguments=[
                Comparison(comparator=Comparator.NIN, attribute=self.attribute, value=searched)
            ],
        )

    @property
    def searched(self) -> tuple[AccessValue, ...]:
        """The allowed values, and each number's and bool's spellings as a list member.

        Backends keep a list's members as text (``filters.values.list_members``: ``[1, 2.5]``
        holds ``"1"`` and ``"2.5"``), and a number or a bool only compares with a scalar. The
        rule admits ``org: [1, 2]`` for the entitlement ``1``, so the backends search for the
        member spellings too; the exact check still decides."""
        spellings = (spelling for value in self.allowed for spelling in _member_spellings(value))
        return tuple(dict.fromkeys((*self.allowed, *spellings)))


@dataclass(frozen=True)
class AccessFilter:
    """The AND of one clause per configured mapping; nothing else may widen it."""

    clauses: tuple[AccessClause, ...]

    @classmethod
    def from_channel(
        cls,
        channel: ChannelMetadata,
        access_filters: Mapping[str, str],
        unattributed: Unattributed = "public",
    ) -> AccessFilter | None:
        """The user's access filter, or ``None`` when no ``access_filters`` are configured."""
        if not access_filters:
            return None
        return cls(
            tuple(
                _clause(channel, key, attribute, unattributed)
                for key, attribute in access_filters.items()
            )
        )

    def admits(self, metadata: Mapping[str, Any]) -> bool:
        return all(clause.admits(metadata) for clause in self.clauses)

    @cached_property
    def directive(self) -> FilterDirective | None:
        return conjoin(*(clause.directive for clause in self.clauses))

    @property
    def key(self) -> tuple[tuple[str, Unattributed, frozenset[ValueKey]], ...]:
        """Which documents the filter admits, as a hashable value (for caches per filter)."""
        return tuple(clause.key for clause in self.clauses)

    @property
    def sources(self) -> dict[str, EntitlementSource]:
        """Where each attribute's entitlement came from (for the audit trail)."""
        return {clause.attribute: clause.source for clause in self.clauses}

    @property
    def counts(self) -> dict[str, int]:
        """How many values each attribute's entitlement holds (for the audit trail)."""
        return {clause.attribute: len(clause.allowed) for clause in self.clauses}

    def audited(self, max_values: int, max_chars: int) -> FilterDirective | None:
        """The directive with each clause cut as ``AccessClause.audited`` says (for logs)."""
        cut = (clause.audited(max_values, max_chars) for clause in self.clauses)
        return conjoin(*(clause.directive for clause in cut))


def _clause(
    channel: ChannelMetadata, key: str, attribute: str, unattributed: Unattributed
) -> AccessClause:
    if channel.message is not None and key in channel.message:
        return AccessClause(attribute, _usable(key, channel.message[key]), "message", unattributed)
    if channel.session is not None and key in channel.session:
        return AccessClause(attribute, _usable(key, channel.session[key]), "session", unattributed)
    return AccessClause(attribute, (), "none", unattributed)


def _usable(key: str, value: Any) -> tuple[AccessValue, ...]:
    """The values an entitlement grants, first spelling of each kept; an unusable value (or a
    list over the bound) grants nothing."""
    items = value if isinstance(value, list | tuple) else [value]
    if len(items) > MAX_FILTER_NODES:
        logger.warning(
            "access.entitlement.too_many",
            key=key,
            count=len(items),
            limit=MAX_FILTER_NODES,
            event_info=f"the entitlement '{key}' lists {len(items)} values, over the limit of "
            f"{MAX_FILTER_NODES}; only public documents are searched",
        )
        return ()
    usable: dict[ValueKey, AccessValue] = {}
    for item in items:
        scalar = _scalar(item)
        value_key = _key(scalar)
        if scalar is not None and value_key is not None:
            usable.setdefault(value_key, scalar)
    return tuple(usable.values())


def _scalar(value: Any) -> AccessValue | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, numbers.Real) and _finite(value) is not None:
        return int(value) if isinstance(value, numbers.Integral) else float(value)
    return None


def _finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite one (an int too large for a float is not)."""
    try:
        number = float(value)
    except (OverflowError, TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _member_spellings(value: AccessValue) -> list[str]:
    """How a list member the rules call equal to ``value`` is written as text: ``1`` may be
    held as ``1`` or ``1.0``; a text is its own spelling."""
    if isinstance(value, str):
        return []
    if isinstance(value, bool):
        return list_members([value])
    number = float(value)
    equal: list[int | float] = [value, number]
    if number.is_integer():
        equal.append(int(number))
    return list_members(equal)


def is_public(metadata: Mapping[str, Any], attributes: Iterable[str]) -> bool:
    """Whether a document has none of the access ``attributes``: every user may read it (with
    ``unattributed_documents: public``, the default)."""
    return all(is_unattributed(metadata.get(attribute)) for attribute in attributes)


def _key(value: Any) -> ValueKey | None:
    """The comparison key of an allowed or a held value; ``None`` matches nothing.

    Bools only equal bools (a bool is not a number), strings compare after trimming, and numbers
    by their exact value (``1`` equals ``1.0``); the tag keeps the three kinds apart. An integer
    stays an integer: ids above 2**53 (64-bit ids from a database) that differ share a float
    value, and Python compares and hashes ``int`` and ``float`` exactly against each other, so
    no two distinct ids ever meet in the set.
    """
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, str):
        return ("text", value.strip())
    if isinstance(value, numbers.Integral):
        return ("number", int(value))
    if isinstance(value, numbers.Real):
        number = _finite(value)
        return ("number", number) if number is not None else None
    return None
