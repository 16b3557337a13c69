"""Which files make up the knowledge base: everything under the docs folder, and nothing outside.

Whatever is indexed can be quoted to any user verbatim, so the docs folder is a boundary. A
symbolic link inside it may point anywhere (``/etc/passwd``, another team's folder); it is
followed only when its target, fully resolved, is still inside the resolved docs folder.
Links that lead out are skipped and reported like any other unreadable file, so nobody wonders
where a document went. Links back into the tree are walked once (no loops).
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

TEXT_SUFFIXES = (".md", ".txt")
JSONL_SUFFIX = ".jsonl"
KNOWLEDGE_SUFFIXES = (*TEXT_SUFFIXES, JSONL_SUFFIX)
OUTSIDE_REASON = "symbolic link to {kind} outside the docs folder; not read"
SIDECAR_SUFFIX = ".meta.yml"
"""``manual.pdf.meta.yml``: attributes of ``manual.pdf`` (``knowledge.attribute_files``)."""
FOLDER_ATTRIBUTES = "_attributes.yml"
"""Attributes of every document in its folder and below (``knowledge.attribute_files``)."""


def is_attribute_file(name: str) -> bool:
    """Whether a file name is a sidecar or a folder attributes file (never a document)."""
    return name == FOLDER_ATTRIBUTES or name.endswith(SIDECAR_SUFFIX)


@dataclass(frozen=True)
class RefusedPath:
    """A path under the docs folder that is not read, relative to the folder, and why."""

    name: str
    reason: str


@dataclass
class KnowledgeFiles:
    files: list[Path] = field(default_factory=list)
    """Knowledge files in a stable order, as paths under the docs folder (links unresolved)."""
    refused: list[RefusedPath] = field(default_factory=list)
    attribute_files: list[Path] = field(default_factory=list)
    """Sidecars and folder attributes files, never indexed themselves, in a stable order."""


def list_knowledge_files(folder: Path, extra_suffixes: Collection[str] = ()) -> KnowledgeFiles:
    """The .md/.txt/.jsonl files under ``folder``; hidden names and links out are left out.

    ``extra_suffixes`` (``.pdf``) are read only when switched on, so an upgrade never starts
    serving files that sat ignored in the folder until then.
    """
    suffixes = (*KNOWLEDGE_SUFFIXES, *extra_suffixes)
    root = folder.resolve()
    listing = KnowledgeFiles()
    walked = {root}
    for directory, subfolders, names in os.walk(folder, followlinks=True):
        current = Path(directory)
        # Real folders first, so a link to a folder inside the tree never claims its files.
        ordered = sorted(subfolders, key=lambda name: ((current / name).is_symlink(), name))
        subfolders[:] = [
            name for name in ordered if _walk_into(current / name, folder, root, walked, listing)
        ]
        for name in sorted(names):
            path = current / name
            attributes = is_attribute_file(name)
            if name.startswith(".") or (path.suffix.lower() not in suffixes and not attributes):
                continue
            if not is_inside(path, root):
                listing.refused.append(
                    RefusedPath(_relative(path, folder), OUTSIDE_REASON.format(kind="a file"))
                )
            elif path.is_file():
                (listing.attribute_files if attributes else listing.files).append(path)
    listing.files.sort()
    listing.attribute_files.sort()
    listing.refused.sort(key=lambda refused: refused.name)
    return listing


def is_inside(path: Path, root: Path) -> bool:
    """Whether ``path``, with every link resolved, is ``root`` (resolved) or below it."""
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError):  # a link loop or an unreadable component
        return False


def _walk_into(
    subfolder: Path, folder: Path, root: Path, walked: set[Path], listing: KnowledgeFiles
) -> bool:
    if subfolder.name.startswith("."):
        return False
    if not is_inside(subfolder, root):
        listing.refused.append(
            RefusedPath(_relative(subfolder, folder), OUTSIDE_REASON.format(kind="a folder"))
        )
        return False
    target = subfolder.resolve()
    if target in walked:
        return False
    walked.add(target)
    return True


def _relative(path: Path, folder: Path) -> str:
    return path.relative_to(folder).as_posix()
