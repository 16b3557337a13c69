"""The filterable metadata attributes (``metadata_fields``): one schema for every constructor.

Slot filters, the rule-based and the LLM query constructors and every translator speak about the
same attributes, so they are declared once, validated once at ``connect()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

AttributeType = Literal["string", "integer", "float", "boolean", "date", "list[string]"]
STRING_TYPES = ("string", "list[string]")
ALIASES_SHAPE = (
    "`aliases` maps each value to the other words users say for it, e.g. {eu: [Europe, Germany]}"
)


class MetadataField(BaseModel):
    """One filterable attribute of the knowledge base's documents."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    type: AttributeType
    description: str = ""
    values: tuple[str, ...] | None = None
    """Allowed values (strings and lists of strings); ``None`` means: learn them from the index."""
    aliases: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Other words users say for a value, written in YAML as ``{eu: [Europe, Germany]}``; the
    rules read them as the value itself. Kept as pairs so that the field stays hashable."""

    @field_validator("aliases", mode="before")
    @classmethod
    def _aliases_from_mapping(cls, aliases: Any) -> Any:
        if isinstance(aliases, tuple):
            return aliases  # already pairs (a copy of a validated field)
        if not isinstance(aliases, Mapping):
            raise ValueError(ALIASES_SHAPE)
        pairs = []
        for value, words in aliases.items():
            listed = [words] if isinstance(words, str) else words
            if not isinstance(listed, list | tuple) or not all(isinstance(w, str) for w in listed):
                raise ValueError(ALIASES_SHAPE)
            pairs.append((str(value), tuple(listed)))
        return tuple(pairs)

    @model_validator(mode="after")
    def _aliases_name_known_values(self) -> MetadataField:
        if not self.aliases:
            return self
        if self.type not in STRING_TYPES:
            raise ValueError(f"`aliases` of '{self.name}': only string fields have aliases")
        unknown = [value for value, _ in self.aliases if self.values and value not in self.values]
        if unknown:
            raise ValueError(
                f"`aliases` of '{self.name}' name value(s) {unknown} that are not in its "
                f"`values` {list(self.values or ())}; alias a declared value"
            )
        said: dict[str, str] = {}
        for value, words in self.aliases:
            for word in words:
                if not word.strip():
                    raise ValueError(f"`aliases` of '{self.name}.{value}': an alias is empty")
                other = said.setdefault(word.casefold(), value)
                if other != value:
                    raise ValueError(
                        f"`aliases` of '{self.name}': '{word}' is an alias of both "
                        f"'{other}' and '{value}'; give it to one value"
                    )
        return self

    @property
    def alias_map(self) -> dict[str, tuple[str, ...]]:
        """Value -> the other words for it."""
        return dict(self.aliases)

    absent_means_all: bool = False
    """A document without this attribute applies to every value of it (a general page among
    platform-specific ones), so filters read from the user's words never exclude it on this
    attribute; ``filters.absence`` defines exactly how. Slot filters stay strict."""
