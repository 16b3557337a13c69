"""Access filters: entitlements from trusted channel metadata, denied by default.

``access_filters: {plan: plan}`` in the ``vector_store:`` block maps a channel metadata key to a
document attribute. For each mapping the user's entitlement is read from the latest message's
metadata, or, when that message does not carry the key at all, from the session's metadata (see
:mod:`rasa_context_retrieval.access.channel`). The rules, defined here once:

* A string matches exactly after trimming whitespace; it is never case-folded or normalised
  further. Numbers and bools keep their type (``1`` is not ``"1"``, ``True`` is not ``1``).
* A scalar entitles to that value; a list to any of its usable items.
* A document without the attribute (missing, ``None``, blank text or an empty list) is
  *unattributed*: public by default (every access filter admits it), or, with
  ``unattributed_documents: private``, admitted by none. Any other value (a dict, say) is never
  public.
* A key that is missing, empty or unusable entitles to nothing: only public documents remain.
  A key present in the latest message but unusable does not fall back to the session.

:meth:`AccessFilter.admits` is the decision. :attr:`AccessFilter.directive` is the same filter in
the shared filter IR, ``not(nin(attribute, allowed))`` ("no allowed value is missing" reads as
"an allowed value, or no value at all"), or ``in(attribute, allowed)`` when unattributed documents
are private, so that every backend can search within it; backends
compare strings case-insensitively, so the directive admits a superset and every result is then
checked with :meth:`AccessFilter.admits` before it leaves the plugin.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.structured_query import (
    Comparator,
    Comparison,
    FilterDirective,
    Operation,
    Operator,
)

from rasa_context_retrieval.access.channel import ChannelMetadata
from rasa_context_retrieval.filters.syntax import conjoin

EntitlementSource = Literal["message", "session", "none"]
AccessValue = str | bool | int | float
Unattributed = Literal["public", "private"]


@dataclass(frozen=True)
class AccessClause:
    """One attribute's restriction: the values the user is entitled to, and where they came from."""

    attribute: str
    allowed: tuple[AccessValue, ...]
    source: EntitlementSource
    unattributed: Unattributed = "public"
    """Whether a document without the attribute is public or private."""

    def admits(self, metadata: Mapping[str, Any]) -> bool:
        value = metadata.get(self.attribute)
        if _is_unattributed(value):
            return self.unattributed == "public"
        held = value if isinstance(value, list | tuple) else [value]
        return any(_same(wanted, item) for wanted in self.allowed for item in held)

    @property
    def directive(self) -> FilterDirective:
        """The clause in the filter IR; ``in`` and ``nin`` match no chunk lacking the attribute
        (``filters.semantics``), so ``in`` alone leaves unattributed documents out."""
        if self.unattributed == "private":
            return Comparison(
                comparator=Comparator.IN, attribute=self.attribute, value=self.allowed
            )
        return Operation(
            operator=Operator.NOT,
            arguments=[
                Comparison(comparator=Comparator.NIN, attribute=self.attribute, value=self.allowed)
            ],
        )


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

    @property
    def directive(self) -> FilterDirective | None:
        return conjoin(*(clause.directive for clause in self.clauses))

    @property
    def sources(self) -> dict[str, EntitlementSource]:
        """Where each attribute's entitlement came from (for the audit trail)."""
        return {clause.attribute: clause.source for clause in self.clauses}


def _clause(
    channel: ChannelMetadata, key: str, attribute: str, unattributed: Unattributed
) -> AccessClause:
    if channel.message is not None and key in channel.message:
        return AccessClause(attribute, _usable(channel.message[key]), "message", unattributed)
    if channel.session is not None and key in channel.session:
        return AccessClause(attribute, _usable(channel.session[key]), "session", unattributed)
    return AccessClause(attribute, (), "none", unattributed)


def _usable(value: Any) -> tuple[AccessValue, ...]:
    """The values an entitlement grants; an unusable value grants nothing."""
    items = value if isinstance(value, list | tuple) else [value]
    usable: list[AccessValue] = []
    for item in items:
        scalar = _scalar(item)
        # Compared with the type, as a bool and a number must not be folded together.
        if scalar is not None and not any(_same(scalar, kept) for kept in usable):
            usable.append(scalar)
    return tuple(usable)


def _scalar(value: Any) -> AccessValue | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, numbers.Real) and math.isfinite(float(value)):
        return value if isinstance(value, int) else float(value)
    return None


def _is_unattributed(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    return isinstance(value, list | tuple) and len(value) == 0


def _same(wanted: AccessValue, held: Any) -> bool:
    if isinstance(wanted, bool) or isinstance(held, bool):
        return isinstance(wanted, bool) and isinstance(held, bool) and wanted == held
    if isinstance(wanted, str):
        return isinstance(held, str) and held.strip() == wanted
    return (
        isinstance(held, numbers.Real)
        and not isinstance(held, str)
        and math.isfinite(float(held))
        and float(held) == float(wanted)
    )
