"""Which declared attributes a collection version holds in typed scalar fields, and how.

Milvus 2.3 evaluates a filter on a JSON field row by row, parsing each row's document; on typed
scalar fields it compares columns (and uses scalar indexes on sealed segments). So every
attribute declared in ``metadata_fields`` gets typed fields holding its normal form
(``milvus.normal_form``) facet by facet, chosen by its declared type::

    string        <p>_s VARCHAR
    list[string]  <p>_l ARRAY<VARCHAR>, <p>_s VARCHAR   (a single string is common too)
    integer       <p>_n INT64,           <p>_s VARCHAR   (numbers written as text keep their text)
    float         <p>_n DOUBLE,          <p>_s VARCHAR
    boolean       <p>_b BOOL,            <p>_s VARCHAR
    date          <p>_d INT64 (days), <p>_t INT64 (seconds), <p>_s VARCHAR
    every type    <p>_p INT8 presence: 0 absent, 1 in the typed fields, 2 in the overflow JSON
    list[string]  <p>_f<i> INT8 member flags, one per declared value (``values:``), see below

Milvus 2.3 scalar fields cannot be null, so absence needs the presence field: ``having`` is
``<p>_p != 0``, and facets that every typed value has (the number of a numeric attribute, the
day of a date, ...) are compared only where ``<p>_p == 1``; the text and list facets need no
guard, because their filler (``""``, ``[]``) matches no filter text.

Milvus 2.3 has no scalar index for ARRAY fields, so ``array_contains_any`` reads every row's list.
A ``list[string]`` attribute declared with a small vocabulary (``values:``, at most
``MAX_MEMBER_FLAGS`` values) also gets one INT8 field per declared value, 1 where the typed
members include it, with a sort index: "some member is one of these" is then an indexed
``flag == 1`` test for the declared values, and ``array_contains_any`` only for values outside
the vocabulary (documents may hold such values; the ARRAY keeps every member). At 100k rows this
halves the filter's own cost (bench/results/milvus.md). Flags are added only after every declared
attribute has its typed fields, while the 64 fields last.

A value the typed fields cannot hold exactly (``"n/a"`` in an integer field, a date string in a
string field, an over-long text, 2.5 in an integer field) is stored as its full normal form in the
``overflow`` JSON field, with presence 2, and filters on that attribute test the overflow too.
Which attributes may have overflow rows is part of the layout, so it is fixed per collection
version: a sync that brings a first such value for another attribute builds a new version
(``milvus.sync``). Attributes without typed fields (undeclared ones, and declared ones past the
64-field limit) stay in the ``filterable`` JSON field, as in the previous release.

The layout is written into the collection's description, so a reader learns how a version is
laid out from the version itself, never from its own configuration.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import structlog
from pymilvus import DataType

from rasa_context_retrieval.filters.schema import AttributeType, MetadataField
from rasa_context_retrieval.filters.values import normalise_text
from rasa_context_retrieval.milvus.normal_form import (
    BOOLEAN,
    DAYS,
    INSTANT,
    MEMBERS,
    NUMBER,
    TEXT,
    attribute_facets,
)

logger = structlog.get_logger(__name__)

LAYOUT_FORMAT = 2
"""Format 1 is the previous release's JSON-only collection (no description)."""
MAX_FIELDS = 64
"""Milvus 2.3's limit of fields per collection."""
BASE_FIELDS = 8
"""chunk_id, source, content_hash, text, metadata, filterable, overflow, embedding."""
PRESENCE = "p"
FLAG = "f"
"""Member flag fields are named ``<prefix>_f<position in the flagged values>``."""
MAX_MEMBER_FLAGS = 16
"""Most declared values of a ``list[string]`` attribute that get a member flag field each; a
larger vocabulary stays on the ARRAY field alone (fields are few, and the test grows per value)."""
ABSENT, TYPED, OVERFLOW = 0, 1, 2
"""Values of the presence field."""
MAX_TEXT_BYTES = 1_024
"""Longest normalised text a typed text field holds; longer ones go to the overflow."""
MAX_MEMBERS = 128
MAX_MEMBER_BYTES = 256
MAX_EXACT_INTEGER = 2**53
"""The largest integer an integer field holds; a larger one is kept in the overflow JSON as its
float and exact remainder (``milvus.normal_form``), so ids up to 2**64 still compare exactly."""

_COLUMNS: dict[str, tuple[str, ...]] = {
    "string": (TEXT,),
    "list[string]": (MEMBERS, TEXT),
    "integer": (NUMBER, TEXT),
    "float": (NUMBER, TEXT),
    "boolean": (BOOLEAN, TEXT),
    "date": (DAYS, INSTANT, TEXT),
}
"""The facets each declared type keeps in typed fields."""
_GUARDED: dict[str, frozenset[str]] = {
    "string": frozenset(),
    "list[string]": frozenset(),
    "integer": frozenset({NUMBER}),
    "float": frozenset({NUMBER}),
    "boolean": frozenset({BOOLEAN}),
    "date": frozenset({DAYS, INSTANT}),
}
"""Facets every typed value of the type has: their filler is a real value, so they are compared
only where presence says the typed fields hold the value."""
_FILLER: dict[str, Any] = {TEXT: "", MEMBERS: [], NUMBER: 0, DAYS: 0, INSTANT: 0, BOOLEAN: False}
_SLUG = re.compile(r"[^0-9A-Za-z]+")


@dataclass(frozen=True)
class TypedAttribute:
    """One declared attribute held in typed fields named ``<prefix>_<facet>``."""

    attribute: str
    type: AttributeType
    prefix: str
    flags: tuple[str, ...] = ()
    """Normalised declared values with a member flag field each (module docstring)."""

    @classmethod
    def of(cls, declared: MetadataField) -> TypedAttribute:
        digest = hashlib.sha256(declared.name.encode("utf-8")).hexdigest()[:8]
        slug = _SLUG.sub("_", declared.name).strip("_")[:40]
        return cls(declared.name, declared.type, f"m{digest}_{slug}" if slug else f"m{digest}")

    @classmethod
    def recorded(cls, recorded: Mapping[str, Any]) -> TypedAttribute:
        """The attribute as ``description()`` records it (flags only where there are any)."""
        return cls(**{**recorded, "flags": tuple(recorded.get("flags", ()))})

    def record(self) -> dict[str, Any]:
        recorded = dict(self.__dict__)
        if not self.flags:  # layouts without flags keep the description (and name) they had
            del recorded["flags"]
        return recorded

    def with_flags(self, declared: MetadataField) -> TypedAttribute:
        """With a member flag per declared value, when the attribute is a list with a small
        declared vocabulary; else unchanged."""
        if self.type != "list[string]" or declared.values is None:
            return self
        values = sorted({normalise_text(value) for value in declared.values} - {""})
        if not values or len(values) > MAX_MEMBER_FLAGS:
            return self
        return replace(self, flags=tuple(values))

    def flag_field(self, text: str) -> str | None:
        """The member flag field of ``text``; ``None`` when it has none."""
        return self._flag_fields.get(text)

    @property
    def _flag_fields(self) -> dict[str, str]:
        return {text: f"{self.prefix}_{FLAG}{i}" for i, text in enumerate(self.flags)}

    @property
    def facets(self) -> tuple[str, ...]:
        return _COLUMNS[self.type]

    @property
    def guarded(self) -> frozenset[str]:
        return _GUARDED[self.type]

    @property
    def presence(self) -> str:
        return f"{self.prefix}_{PRESENCE}"

    def field(self, facet: str) -> str:
        return f"{self.prefix}_{facet}"

    @property
    def field_count(self) -> int:
        return len(self.facets) + 1 + len(self.flags)

    def fits(self, facets: Mapping[str, Any]) -> bool:
        """Whether the typed fields hold these facets exactly."""
        if not set(facets) <= set(self.facets) or not self.guarded <= set(facets):
            return False
        text = facets.get(TEXT, "")
        if len(text.encode("utf-8")) > MAX_TEXT_BYTES:
            return False
        members = facets.get(MEMBERS, [])
        if len(members) > MAX_MEMBERS or any(
            len(member.encode("utf-8")) > MAX_MEMBER_BYTES for member in members
        ):
            return False
        if self.type == "integer":
            number = facets[NUMBER]
            return float(number).is_integer() and abs(number) <= MAX_EXACT_INTEGER
        return True

    def schema_fields(self) -> list[tuple[str, DataType, dict[str, Any]]]:
        """(name, type, parameters) of the fields, presence first."""
        fields: list[tuple[str, DataType, dict[str, Any]]] = [(self.presence, DataType.INT8, {})]
        for facet in self.facets:
            fields.append((self.field(facet), *_milvus_type(facet, self.type)))
        fields.extend((name, DataType.INT8, {}) for name in self._flag_fields.values())
        return fields

    def flag_values(self, members: Sequence[str]) -> dict[str, int]:
        """The member flag fields of a row whose typed members are ``members``."""
        held = set(members)
        return {name: int(text in held) for text, name in self._flag_fields.items()}


def _milvus_type(facet: str, declared: str) -> tuple[DataType, dict[str, Any]]:
    if facet == TEXT:
        return DataType.VARCHAR, {"max_length": MAX_TEXT_BYTES}
    if facet == MEMBERS:
        return DataType.ARRAY, {
            "element_type": DataType.VARCHAR,
            "max_capacity": MAX_MEMBERS,
            "max_length": MAX_MEMBER_BYTES,
        }
    if facet == NUMBER:
        return (DataType.INT64 if declared == "integer" else DataType.DOUBLE), {}
    if facet == BOOLEAN:
        return DataType.BOOL, {}
    return DataType.INT64, {}  # DAYS, INSTANT


SCALAR_INDEXES = {
    DataType.VARCHAR: "Trie",
    DataType.INT8: "STL_SORT",
    DataType.INT64: "STL_SORT",
    DataType.DOUBLE: "STL_SORT",
}
"""The scalar indexes Milvus 2.3 has for our field types; it has none for BOOL and ARRAY."""


@dataclass(frozen=True)
class CollectionLayout:
    """How one collection version stores filterable metadata (module docstring)."""

    typed: tuple[TypedAttribute, ...] = ()
    overflow: frozenset[str] = frozenset()
    """Typed attributes that may have rows in the overflow JSON field."""
    format: int = LAYOUT_FORMAT
    _by_name: dict[str, TypedAttribute] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_name.update({typed.attribute: typed for typed in self.typed})

    @classmethod
    def legacy(cls) -> CollectionLayout:
        """The previous release's collection: every attribute in ``filterable``."""
        return cls(format=1)

    @classmethod
    def planned(cls, declared: Sequence[MetadataField]) -> CollectionLayout:
        """Typed fields for the declared attributes, in declaration order, as many as fit in
        Milvus' 64 fields, the others staying in the JSON field; then member flags for the
        lists with a small declared vocabulary, while fields are left (logged once, here)."""
        typed: list[TypedAttribute] = []
        declaration: dict[str, MetadataField] = {}
        left_out: list[str] = []
        used = BASE_FIELDS
        for declared_field in declared:
            attribute = TypedAttribute.of(declared_field)
            if used + attribute.field_count > MAX_FIELDS:
                left_out.append(declared_field.name)
                continue
            typed.append(attribute)
            declaration[attribute.attribute] = declared_field
            used += attribute.field_count
        unflagged: list[str] = []
        for position, attribute in enumerate(typed):
            flagged = attribute.with_flags(declaration[attribute.attribute])
            added = flagged.field_count - attribute.field_count
            if added and used + added > MAX_FIELDS:
                unflagged.append(attribute.attribute)
            elif added:
                typed[position] = flagged
                used += added
        if left_out or unflagged:
            logger.warning(
                "milvus.layout.fields_over_limit",
                attributes=left_out,
                without_member_flags=unflagged,
                event_info=f"Milvus allows {MAX_FIELDS} fields per collection; these declared "
                "attributes stay in the JSON field, or their lists without member flags "
                "(filters on them work, but are slower)",
            )
        return cls(typed=tuple(typed))

    @classmethod
    def described(cls, description: str) -> CollectionLayout:
        """The layout a collection's description records; the previous release wrote none."""
        try:
            recorded = json.loads(description) if description else None
        except json.JSONDecodeError:
            recorded = None
        if not isinstance(recorded, dict) or recorded.get("format") != LAYOUT_FORMAT:
            return cls.legacy()
        return cls(
            typed=tuple(TypedAttribute.recorded(attribute) for attribute in recorded["typed"]),
            overflow=frozenset(recorded["overflow"]),
        )

    def description(self) -> str:
        return json.dumps(
            {
                "format": self.format,
                "typed": [typed.record() for typed in self.typed],
                "overflow": sorted(self.overflow),
            },
            sort_keys=True,
            ensure_ascii=True,
        )

    def version_name(self, collection: str) -> str:
        """The collection name of this layout's version of ``collection``."""
        digest = hashlib.sha256(self.description().encode("ascii")).hexdigest()[:12]
        return f"{collection}{VERSION_INFIX}{digest}"

    def typed_attribute(self, attribute: str) -> TypedAttribute | None:
        return self._by_name.get(attribute)

    @property
    def typed_names(self) -> frozenset[str]:
        return frozenset(self._by_name)

    def with_overflow(self, attributes: frozenset[str]) -> CollectionLayout:
        return CollectionLayout(typed=self.typed, overflow=attributes)

    def serves(self, wanted: CollectionLayout) -> bool:
        """Whether a version with this layout can hold what ``wanted`` needs."""
        return (
            self.format == wanted.format
            and self.typed == wanted.typed
            and self.overflow >= wanted.overflow
        )

    def needed_overflow(self, metadatas: Sequence[Mapping[str, Any]]) -> frozenset[str]:
        """Typed attributes some of these chunks hold a value of that the typed fields cannot."""
        needed: set[str] = set()
        for typed in self.typed:
            fitting: dict[tuple[str, str], bool] = {}  # values repeat: read each distinct once
            for metadata in metadatas:
                value = metadata.get(typed.attribute)
                key = (type(value).__name__, repr(value))
                fits = fitting.get(key)
                if fits is None:
                    facets = attribute_facets(value)
                    fits = fitting[key] = not facets or typed.fits(facets)
                if not fits:
                    needed.add(typed.attribute)
                    break
        return frozenset(needed)

    def encode(self, metadata: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """A chunk's typed field values, and its overflow JSON (attribute -> facets)."""
        values: dict[str, Any] = {}
        overflow: dict[str, Any] = {}
        for typed in self.typed:
            facets = attribute_facets(metadata.get(typed.attribute))
            fits = bool(facets) and typed.fits(facets)
            if facets and not fits:
                if typed.attribute not in self.overflow:
                    raise ValueError(
                        f"attribute {typed.attribute!r} needs the overflow field in this layout"
                    )
                overflow[typed.attribute] = facets
            values[typed.presence] = TYPED if fits else (OVERFLOW if facets else ABSENT)
            for facet in typed.facets:
                value = facets.get(facet, _FILLER[facet]) if fits else _FILLER[facet]
                values[typed.field(facet)] = int(value) if _is_integral(typed, facet) else value
            if typed.flags:
                values.update(typed.flag_values(values[typed.field(MEMBERS)]))
        return values, overflow


def _is_integral(typed: TypedAttribute, facet: str) -> bool:
    return facet in (DAYS, INSTANT) or (facet == NUMBER and typed.type == "integer")


VERSION_INFIX = "__v"
"""Between the configured collection name and a version's layout digest."""
