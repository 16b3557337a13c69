"""How the console shows one search: a short readable block for people, or one JSON object.

The human view fits 100 columns and puts what a developer checks first on the left: the source
file of each result, then its relevance, then the start of its text. The JSON view holds
everything in one object (the plan, the filter, the results, the timings) and nothing else, so
``ask --json`` can be piped into another program.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

SCREEN_WIDTH = 100
LABEL_WIDTH = 8
UNKNOWN_SOURCE = "?"
MIN_SNIPPET_WIDTH = 20
_PLAN_KEYS = (
    "standalone_query",
    "query",
    "query_texts",
    "access_filter",
    "static_filter",
    "slot_filter",
    "extracted_filter",
    "carried_filter",
    "carried_filter_dropped",
    "previous_answer",
    "filter_relaxed",
    "filter_outcome",
    "slot_matches",
    "paraphrases",
    "notes",
)


def answer_of(result: Any) -> str:
    """What the assistant would reply in extractive mode: the top result's answer or text."""
    if not result.results:
        return ""
    top = result.results[0]
    return str(top.metadata.get("answer") or top.text).strip()


def render(result: Any, width: int = SCREEN_WIDTH) -> str:
    """The answer, the standalone query, the filter and the scored sources, in ``width`` columns."""
    meta: Mapping[str, Any] = result.metadata
    lines = [_field("query", str(meta.get("standalone_query") or ""), width)]
    searched = meta.get("query")
    if searched and searched != meta.get("standalone_query"):
        lines.append(_field("searched", str(searched), width))
    lines.extend(_field("vector", view, width) for view in _views(meta.get("query_texts")))
    lines.append(_field("filter", str(meta.get("filter") or "none"), width))
    if meta.get("access_filter"):
        lines.append(_field("access", str(meta["access_filter"]), width))
    if meta.get("carried_filter"):
        carried = f"{meta['carried_filter']} (stated in an earlier turn)"
        lines.append(_field("carried", carried, width))
    if meta.get("filter_relaxed"):
        lines.append(
            _field("", "the filter from your words matched nothing: searched without it", width)
        )
    elif meta.get("filter_outcome"):
        lines.append(_field("", str(meta["filter_outcome"]), width))
    lines.extend(_field("note", str(note), width) for note in meta.get("notes") or [])
    prior = meta.get("previous_answer")
    if isinstance(prior, Mapping):
        lines.append(
            _field(
                "prior",
                f"{prior.get('source')} raised at weight {prior.get('weight')}: the last bot "
                f"message matches it at {prior.get('match')}",
                width,
            )
        )
    if not result.results:
        why = (
            "none: the slot filter matches no document"
            if meta.get("slot_matches") == 0
            else "none above the threshold: the assistant cannot help"
        )
        lines.append(_field("sources", why, width))
        return "\n".join(lines)
    lines.append("sources")
    files = list(meta.get("source_files") or [])
    files += [None] * (len(result.results) - len(files))
    lines.extend(
        _source_line(rank, found, width, file)
        for rank, (found, file) in enumerate(zip(result.results, files, strict=False), 1)
    )
    lines.append(_field("answer", answer_of(result), width))
    return "\n".join(lines)


def as_json(question: str, result: Any) -> dict[str, Any]:
    """The whole search as one JSON-ready object: plan, filter, results and timings."""
    meta: Mapping[str, Any] = result.metadata
    return {
        "question": question,
        "plan": {key: meta.get(key) for key in _PLAN_KEYS},
        "filter": meta.get("filter"),
        "results": [
            {
                "rank": rank,
                "source": found.metadata.get("source", UNKNOWN_SOURCE),
                "score": found.score,
                "text": found.text,
                "metadata": found.metadata,
            }
            for rank, found in enumerate(result.results, 1)
        ],
        "answer": answer_of(result),
        "timings_ms": meta.get("timings_ms", {}),
    }


def _views(query_texts: Any) -> list[str]:
    """Each query vector as its weighted texts, when there is more than one text in all;
    fused views are joined by "then fused with"."""
    parts = [part for part in query_texts or [] if isinstance(part, Mapping)]
    if len(parts) < 2:
        return []
    views: dict[Any, list[str]] = {}
    for part in parts:
        views.setdefault(part.get("view", 0), []).append(f"{part['weight']:g}·{part['text']!r}")
    printed = [" + ".join(texts) for texts in views.values()]
    return [printed[0], *(f"fused with {view}" for view in printed[1:])]


def _source_line(rank: int, found: Any, width: int, file: str | None = None) -> str:
    """Rank, source, relevance, text; the file too when the document is cited by a url/title."""
    lead, score = f"  {rank}. ", f"  {found.score:.3f}  "
    source = str(found.metadata.get("source", UNKNOWN_SOURCE))
    if file and file != source:
        source = f"{file} ({source})"
    room_for_source = width - len(lead) - len(score) - MIN_SNIPPET_WIDTH
    if len(source) > room_for_source:  # keep the file name, drop leading folders
        source = "…" + source[len(source) - room_for_source + 1 :]
    head = lead + source + score
    return head + _shortened(found.text, width - len(head))


def _field(label: str, value: str, width: int) -> str:
    prefix = f"{label:<{LABEL_WIDTH}} "
    return textwrap.fill(
        " ".join(value.split()) or "-",
        width=width,
        initial_indent=prefix,
        subsequent_indent=" " * len(prefix),
        break_on_hyphens=False,
    )


def _shortened(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
