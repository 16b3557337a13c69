"""SQL ``LIKE`` matching of one pattern against a vocabulary of normalised strings.

Milvus 2.3 evaluates ``like`` only as a prefix, so patterns are matched here against an
attribute's distinct values and the result sent as an exact ``in`` list. The rules are those of
the FAISS translator: ``%`` any run, ``_`` one character, the whole string must match, and a
pattern without wildcards is a substring test. Hand-written because the standard library has no
LIKE matcher (``fnmatch`` uses ``*``/``?`` and treats ``[`` specially).
"""

from __future__ import annotations

import re
from collections.abc import Iterable


def like_matches(pattern: str, texts: Iterable[str]) -> set[str]:
    """The texts that ``pattern`` (already trimmed and casefolded) matches."""
    if "%" not in pattern and "_" not in pattern:
        return {text for text in texts if pattern in text}
    regex = re.compile(
        "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern),
        re.DOTALL,
    )
    return {text for text in texts if regex.fullmatch(text) is not None}
