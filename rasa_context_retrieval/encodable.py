"""Text from outside made encodable: lone surrogates become U+FFFD, never an exception.

JSON allows ``"\\ud800"`` (half of a surrogate pair) and Python decodes it into a ``str`` that
UTF-8 cannot encode, so the tokenizer of the embedding model, an HTTP body or a log line fails on
it far from where it came in. A user's turn, a slot an action set and the channel's metadata are
all such outside text; they are cleaned once, where the conversation is read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_DEPTH = 32
"""Deeper nesting is left as it is: slots and metadata are a few levels deep; beyond this a
value is no filter input anyway and cleaning it must not recurse without end."""


def encodable(text: str) -> str:
    """``text`` with every code point UTF-8 cannot encode replaced by U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(REPLACEMENT, text)
    return text


def encodable_values(value: Any, depth: int = 0) -> Any:
    """``value`` with every string in it (keys too) made encodable; other values unchanged."""
    if isinstance(value, str):
        return encodable(value)
    if depth >= MAX_DEPTH:
        return value
    if isinstance(value, Mapping):
        return {
            encodable_values(key, depth + 1): encodable_values(item, depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return type(value)(encodable_values(item, depth + 1) for item in value)
    return value
