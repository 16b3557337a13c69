"""When an index is current: the one rule that start-up, refresh and the Milvus writer ask.

An index records the fingerprint of the documents and settings it was made from
(``ingestion.settings``); it is current while the settings give that fingerprint now, so an
unchanged knowledge base is loaded, never rebuilt. But the fingerprint covers what the documents
say, not what became of them: an index that is not a settled outcome of its documents must not
count as current, or nothing would ever build it again until somebody edits a file. Two kinds are
not settled:

- knowledge cut down after a failed rebuild (``engine.withdrawal``): new text is still missing;
- a build in which a file's parse was lost to a dying worker process (the out-of-memory killer on
  a busy machine): that file is missing through no fault of its own
  (``knowledge.loader``, ``KnowledgeBase.retry``).

Such knowledge records a *provisional* fingerprint, one no settings give, so the next refresh or
start builds again (a rebuild re-parses only those files and re-embeds nothing it has).
"""

from __future__ import annotations

from rasa_context_retrieval.knowledge.loader import KnowledgeBase

PROVISIONAL_SUFFIX = "+provisional"
"""Ends a fingerprint no settings give. A suffix, so the published folder's name (made from the
fingerprint's first characters) stays the same shape."""


def is_current(recorded: str | None, fingerprint: str, *, built_meanwhile: bool = False) -> bool:
    """Whether an index that recorded ``recorded`` (None: there is none) serves the documents and
    settings whose fingerprint is ``fingerprint`` now, so that nothing needs to be built.

    ``built_meanwhile``: another process built that index while this one waited to build it
    (several start at once). A provisional one then counts as current too: otherwise each would
    parse the lost files again at once, on the machine that just lost them, using up their
    tries within seconds; the next refresh retries them instead.
    """
    if recorded is None:
        return False
    if built_meanwhile:
        recorded = recorded.removesuffix(PROVISIONAL_SUFFIX)
    return recorded == fingerprint


def provisional(fingerprint: str) -> str:
    """``fingerprint`` marked as not a settled outcome: never current, so built again."""
    return fingerprint.removesuffix(PROVISIONAL_SUFFIX) + PROVISIONAL_SUFFIX


def recorded_fingerprint(fingerprint: str, knowledge: KnowledgeBase) -> str:
    """The fingerprint an index made from ``knowledge`` records: provisional while some file's
    parse was lost to a dying worker process and is due another try."""
    return provisional(fingerprint) if knowledge.retry else fingerprint
