"""What each result carries into Rasa's prompt: the ``result_metadata`` choice.

EnterpriseSearchPolicy prints every result as ``{{ doc.metadata }}`` followed by ``{{ doc.text }}``
in all three of its generative prompt templates, and in extractive mode
(``use_generative_llm: false``) it answers with ``results[0].metadata["answer"]``. A chunk's
``answer`` is always part of its text (a Q/A entry's answer, or a prose chunk's whole text), so in
generative mode the full metadata sends the same words twice, followed by attributes that only
matter to filters (plan, region, price, dates). The plugin cannot see the policy's
``use_generative_llm`` (it lives in config.yml; ``connect()`` gets only the ``vector_store:``
block), so the user chooses:

* ``full`` (default): every attribute, which keeps extractive mode working;
* ``lean``: what a generative answer and its citations need, the citable ``source`` and a
  declared ``title``; ``answer`` only if the text does not already hold it;
* a list of attribute names: exactly those (plus ``source``, which citations need).

In every choice ``source`` is what the policy's citation prompt tells the LLM to cite: the
document's declared ``url``, else its ``title``, else its own ``source`` (its path in ``docs``).
Trimming happens after retrieval, so access filters always see the full metadata.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

import structlog
from pydantic import BeforeValidator

from rasa_context_retrieval.knowledge.conversion import ANCHOR, PAGE, SLIDE
from rasa_context_retrieval.knowledge.models import Chunk

logger = structlog.get_logger()

SOURCE = "source"
ANSWER = "answer"
TITLE = "title"
URL = "url"
CITATION_PREFERENCE = (URL, TITLE, SOURCE)
"""Attributes a document may declare to be cited by, most specific first."""

FULL = "full"
LEAN = "lean"


def _checked_choice(value: Any) -> Any:
    """One readable message for any wrong value (a plain union would report one per branch)."""
    if value in (FULL, LEAN):
        return value
    if not isinstance(value, list | tuple) or not value:
        raise ValueError(
            f"must be `{FULL}` (every attribute, works for extractive answers), `{LEAN}` "
            "(for use_generative_llm: true) or a non-empty list of attribute names"
        )
    if not all(isinstance(name, str) and name.strip() for name in value):
        raise ValueError("each listed attribute must be a non-empty name")
    duplicates = sorted({name for name in value if list(value).count(name) > 1})
    if duplicates:
        raise ValueError(f"attribute(s) {duplicates} listed twice; list each once")
    return tuple(value)


ResultMetadataChoice = Annotated[
    Literal["full", "lean"] | tuple[str, ...], BeforeValidator(_checked_choice)
]
"""The ``result_metadata`` key of the ``vector_store:`` block."""


def prompt_metadata(chunk: Chunk, choice: ResultMetadataChoice) -> dict[str, Any]:
    """The metadata Rasa puts into its prompt (and reads ``answer`` from) for one result."""
    metadata = chunk.metadata
    source = citable_source(metadata)
    if choice == FULL:
        return {**metadata, SOURCE: source}
    if choice == LEAN:
        return _lean(chunk, source)
    kept = {name: metadata[name] for name in choice if name in metadata}
    return {**kept, SOURCE: source}


def citable_source(metadata: Mapping[str, Any]) -> str:
    """What a citation should show: the declared ``url``, else ``title``, else ``source``.

    A chunk from a PDF page keeps its page visible whatever is shown: its ``source`` already
    reads ``manual.pdf#page=12``; a ``url`` gets the same fragment (PDF viewers open that page),
    a ``title`` gets ", page 12", so a person can check the citation. A chunk from an HTML
    section with an id keeps its anchor the same way (``url#pause``, ``Title, #pause``).
    """
    for key in CITATION_PREFERENCE:
        value = metadata.get(key)
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            text = str(value).strip()
            if text:
                return _with_place(key, text, metadata)
    return ""


def _with_place(key: str, text: str, metadata: Mapping[str, Any]) -> str:
    """``text`` with the page, slide or section anchor that ``source`` already shows."""
    page, slide, anchor = metadata.get(PAGE), metadata.get(SLIDE), metadata.get(ANCHOR)
    if key == SOURCE:
        return text
    if isinstance(page, int) and not isinstance(page, bool):
        fragment, shown = f"page={page}", f"page {page}"
    elif isinstance(page, list) and page and all(isinstance(p, int) for p in page):
        fragment, shown = f"page={page[0]}", f"pages {page[0]}-{page[-1]}"  # across a break
    elif isinstance(slide, int) and not isinstance(slide, bool):
        fragment, shown = f"slide={slide}", f"slide {slide}"
    elif isinstance(anchor, str) and anchor.strip():
        fragment, shown = anchor.strip(), f"#{anchor.strip()}"
    else:
        return text
    if key == URL:
        return text if "#" in text else f"{text}#{fragment}"
    return f"{text}, {shown}"


def drops_answer(choice: ResultMetadataChoice, chunk: Chunk) -> bool:
    """True when a chunk with an ``answer`` loses it under this choice (extractive mode fails)."""
    return ANSWER in chunk.metadata and ANSWER not in prompt_metadata(chunk, choice)


def tell_if_answers_are_dropped(
    choice: ResultMetadataChoice, docs: Path | None, top: Chunk | None
) -> None:
    """Log once per knowledge base and choice when results go to Rasa without ``answer``.

    That is right for generative answers and wrong for extractive ones, where the policy then
    logs ``answer_key_missing_in_metadata`` and replies with its internal-error pattern; this
    event names the fix. Once, so that a generative assistant stays quiet.
    """
    if top is not None and drops_answer(choice, top):
        _tell_once(choice, docs)


@cache
def _tell_once(choice: ResultMetadataChoice, docs: Path | None) -> None:
    logger.info(
        "context_retrieval.result_metadata.no_answer",
        result_metadata=choice,
        docs=str(docs),
        note=(
            "results carry no `answer`: fine with use_generative_llm: true; with "
            "use_generative_llm: false EnterpriseSearchPolicy needs `answer`, so set "
            "result_metadata: full (or list `answer`) in the vector_store: block"
        ),
    )


def _lean(chunk: Chunk, source: str) -> dict[str, Any]:
    lean: dict[str, Any] = {SOURCE: source}
    title = chunk.metadata.get(TITLE)
    if isinstance(title, str) and title.strip() and title.strip() != source:
        lean[TITLE] = title.strip()
    answer = chunk.metadata.get(ANSWER)
    if isinstance(answer, str) and answer.strip() and answer.strip() not in chunk.text:
        lean[ANSWER] = answer
    return lean
