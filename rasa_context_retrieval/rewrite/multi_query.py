"""Multi-query: a few LLM paraphrases of the standalone query, searched besides it.

A question phrased differently from the article that answers it ("cancel my subscription" vs
"downgrade to free") can be missed by one embedding; paraphrases give the search more ways in.
All paraphrases come from ONE call (one line each). Lines that are empty, numbering or a
preamble ("Here are three queries:"), too long, or a repeat of the query or of each other are
dropped. Any failure gives ``[]``: the search then runs on the standalone query alone.
The rankings are fused with reciprocal rank fusion (``retrieve.fusion``), the original
query's ranking always among them.
"""

from __future__ import annotations

import re

import structlog

from rasa_context_retrieval.llm.client import LLMUnavailable, RetrievalLLM

logger = structlog.get_logger()

DEFAULT_TIMEOUT_SECONDS = 2.0
MAX_PARAPHRASES = 5
MAX_PARAPHRASE_CHARS = 300

PARAPHRASE_PROMPT = """\
Write {n} different search queries for a help-centre knowledge base that ask for the same \
information as the query below, using other words a help article might use. One query per \
line, no numbering, no explanations.

Query: {query}"""

_LIST_MARKER = re.compile(r"^\s*(?:[-*•]+|\(?\d+[.)]|\d+\s*[-:])\s*")
_WRAPPING = "\"'`“”‘’ "
_WORD = re.compile(r"[^\W_]", re.UNICODE)


async def paraphrases(
    llm: RetrievalLLM,
    standalone_query: str,
    n: int,
    *,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> list[str]:
    """Up to ``n`` (at most ``MAX_PARAPHRASES``) distinct paraphrases; ``[]`` on any failure."""
    count = min(n, MAX_PARAPHRASES)
    if count <= 0 or not standalone_query.strip():
        return []
    prompt = PARAPHRASE_PROMPT.format(n=count, query=" ".join(standalone_query.split()))
    try:
        found = await llm.complete_and_parse(
            prompt, lambda answer: parse_paraphrases(answer, standalone_query), timeout=timeout
        )
    except LLMUnavailable as error:
        logger.warning("multi_query.paraphrases.unavailable", reason=str(error))
        return []
    found = found[:count]
    logger.debug("multi_query.paraphrases.done", paraphrases=found)
    return found


def parse_paraphrases(answer: str, standalone_query: str) -> list[str]:
    """The usable lines of an answer, in order, without repeats of the query or each other."""
    seen = {_folded(standalone_query)}
    kept: list[str] = []
    for line in answer.splitlines():
        text = " ".join(_LIST_MARKER.sub("", line).strip(_WRAPPING).split())
        key = _folded(text)
        if not _looks_like_query(text) or key in seen:
            continue
        seen.add(key)
        kept.append(text)
    return kept


def _looks_like_query(text: str) -> bool:
    return (
        bool(_WORD.search(text))
        and len(text) <= MAX_PARAPHRASE_CHARS
        and not text.endswith(":")
        and not text.lower().startswith(("here are", "sure", "certainly"))
    )


def _folded(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())
