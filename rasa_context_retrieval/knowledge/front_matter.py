"""Reading a text document's front matter exactly, or refusing the document.

Front matter decides who may read a document (``plan: premium`` under ``access_filters``), so
a document whose front matter is read differently from what its author meant is a leak: a parser
that falls back to "no front matter, all of it is text" makes a restricted document public, and
indexes ``plan: [premium]`` as part of its text. This module accepts one shape only, YAML
between two lines that are exactly ``---`` at the very top of the file, and raises
:class:`FrontMatterRefused` for every shape that looks like front matter but is not that one:

* an opening ``---`` without a closing one, or closed with the YAML end marker ``...``;
* an opener with something after it (``--- # comment``, ``---yaml``);
* TOML (``+++``) or JSON (``{``) front matter, which are not read at all;
* the same key twice at any level (YAML would keep the last one: ``plan: premium`` then
  ``plan: free`` would serve a premium document to free users), or a merge key (``<<``), whose
  keys the mapping's own silently override;
* an opener after an HTML comment: the author meant front matter, it would be read as text.

Blank lines and byte order marks before the opener are skipped, and the front matter is read.
These shapes are refused with or without ``access_filters``: the same attributes feed slot
filters and the static ``filter`` (``ne("status", "draft")``), and a document must not change
meaning when access filters are switched on later.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from rasa_context_retrieval.errors import ContextRetrievalError

OPENER = "---"
"""The one front-matter delimiter read, alone on its line (trailing spaces allowed)."""
_LEADING_BLANKS = re.compile(r"\A[\s\ufeff]*")
_DELIMITER_LIKE = re.compile(r"^(-{3,}|\+{3,}|\.{3,})(\s*)(.*)$")
_HTML_COMMENTS = re.compile(r"\A(?:<!--.*?-->[\s\ufeff]*)+", re.DOTALL)
_MERGE_TAG = "tag:yaml.org,2002:merge"


class FrontMatterRefused(ContextRetrievalError, ValueError):
    """The front matter cannot be read exactly; the message says what to change."""

    def __init__(self, reason: str, line: int = 1) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader, refusing a mapping that names the same key twice (YAML 1.2 says
    keys are unique; PyYAML silently keeps the last one)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:  # "<<: *base" then "plan: free" overrides silently
                raise FrontMatterRefused(
                    "front matter uses a YAML merge key ('<<'); write the keys out; not indexed",
                    key_node.start_mark.line + 2,
                )
            key = self.construct_object(key_node, deep=True)  # type: ignore[no-untyped-call]
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: SafeLoader reports it below
                continue
            if duplicate:
                raise FrontMatterRefused(
                    f"front matter names {key!r} twice; keep one (YAML would silently use the "
                    "last); not indexed",
                    key_node.start_mark.line + 2,  # +1 for 1-based, +1 for the opener line
                )
        return super().construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _UniqueKeyLoader.construct_mapping
)


def split_front_matter(text: str) -> tuple[Any, str]:
    """``(front matter as loaded, body)``; ``({}, text)`` when the file has no front matter.

    The loaded front matter is returned as it is (a list or a string, say), for the caller to
    refuse when it is not a mapping.

    Raises:
        FrontMatterRefused: for a shape that looks like front matter but is not read exactly.
        yaml.YAMLError: for front matter that is not valid YAML.
    """
    text = _LEADING_BLANKS.sub("", text)
    lines = text.splitlines()
    first = lines[0] if lines else ""
    if first.rstrip() != OPENER:
        _refuse_other_openers(text, first)
        return {}, text.strip()
    for number, line in enumerate(lines[1:], start=2):
        if line.rstrip() == OPENER:
            loaded = yaml.load("\n".join(lines[1 : number - 1]), Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
            return ({} if loaded is None else loaded), "\n".join(lines[number:]).strip()
        if line.rstrip() == "...":
            raise FrontMatterRefused(
                "front matter ends with '...'; end it with a line '---'; not indexed", number
            )
    raise FrontMatterRefused(
        "front matter opened with '---' is never closed; add a line '---' after it; not indexed"
    )


def _refuse_other_openers(text: str, first: str) -> None:
    delimiter = _DELIMITER_LIKE.match(first)
    if delimiter is not None:
        marks, _, rest = delimiter.groups()
        if marks.startswith("+"):
            raise FrontMatterRefused(
                "TOML front matter ('+++') is not read; write it as YAML between '---' lines; "
                "not indexed"
            )
        if marks.startswith("-") and (rest or marks != OPENER):
            raise FrontMatterRefused(
                f"front matter opener {first.strip()!r} is not '---' alone on its line; write "
                "exactly '---' on the first line; not indexed"
            )
    if first.strip() == "{":
        raise FrontMatterRefused(
            "JSON front matter is not read; write it as YAML between '---' lines; not indexed"
        )
    after_comment = _HTML_COMMENTS.sub("", text, count=1)
    if after_comment != text and after_comment.startswith(("---", "+++")):
        raise FrontMatterRefused(
            "front matter comes after an HTML comment; move the comment below the front matter "
            "(the '---' must be the first line); not indexed"
        )


def load_attribute_yaml(text: str) -> Any:
    """A whole YAML file of attributes (a sidecar or a folder file), read as strictly as front
    matter: duplicate keys and merge keys are refused; ``{}`` for an empty file.

    Raises:
        FrontMatterRefused: a key named twice, or a merge key.
        yaml.YAMLError: the file is not valid YAML.
    """
    loaded = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    return {} if loaded is None else loaded
