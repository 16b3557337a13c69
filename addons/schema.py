"""The filterable metadata attributes (``metadata_fields``): one schema for every constructor.

Slot filters, the rule-based and the LLM query constructors and every translator speak about the
same attributes, so they are declared once, validated once at ``connect()``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

AttributeType = Literal["string", "integer", "float", "boolean", "date", "list[string]"]


class MetadataField(BaseModel):
    """One filterable attribute of the knowledge base's documents."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    type: AttributeType
    description: str = ""
    values: tuple[str, ...] | None = None
    """Allowed values (strings and lists of strings); ``None`` means: learn them from the index."""
    absent_means_all: bool = False
    """A document without this attribute applies to every value of it (a general page among
    platform-specific ones), so filters read from the user's words never exclude it on this
    attribute; ``addons.filters.absence`` defines exactly how. Slot filters stay strict."""
