"""The ``llm:`` block of ``vector_store:``: open to whatever Rasa's LLM clients accept, typed where
the plugin reads a key itself.

Rasa's clients take many provider-specific keys (``api_base``, ``deployment``, ``extra_headers``,
...), and new ones appear with new providers, so unknown keys pass through untouched to
``llm_factory``. The few keys the plugin reads itself are checked with the rest of the
configuration, before anything is embedded: a ``timeout: soon`` would otherwise be noticed only
at the first question that needs the LLM. Importing this module imports neither Rasa's LLM
helpers nor LiteLLM.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class LLMBlock(BaseModel):
    """An LLM configured the way Rasa configures LLMs (provider, model, ... or model_group)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    provider: str | None = Field(None, min_length=1, strict=True)
    model_group: str | None = Field(None, min_length=1, strict=True)
    """Id of a model group in endpoints.yml; then the only key of the block."""
    timeout: float | None = Field(None, gt=0, strict=True)
    """Seconds; Rasa applies it per HTTP attempt, the plugin also to each whole LLM step."""
    api_key: str | None = Field(None, min_length=1, strict=True)
    """Best written as ``${ENV_VAR}``; a mapping or a number here would reach the provider as
    a garbled header, so it is refused at start-up."""

    def client_config(self) -> dict[str, Any]:
        """The block as written (minus nothing), for Rasa's ``llm_factory``."""
        return self.model_dump(exclude_unset=True)
