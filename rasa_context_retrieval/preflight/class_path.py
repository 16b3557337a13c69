"""Does ``vector_store.type`` name a class Rasa can load? Answered without importing Rasa.

Rasa imports the dotted path only when the policy starts, well after training data and models are
loaded; a typo then surfaces as an ``AttributeError`` traceback. Importing the module here would
pull Rasa's machinery in (seconds), so the module file is located with
:func:`importlib.util.find_spec` and read with :mod:`ast`: the class must be defined there, or
imported there from a module that defines it, and derive from a known store class.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from pathlib import Path

from rasa_context_retrieval.errors import ContextRetrievalError

KNOWN_STORES = frozenset({"InformationRetrieval", "ContextRetrieval"})
"""Base classes that are a vector store; a chain of bases ends at one of them."""
MAX_BASE_DEPTH = 8


class ClassPathError(ContextRetrievalError, ValueError):
    """The dotted path names no class Rasa could use; the message says what is missing."""


def check_class_path(dotted: str) -> None:
    """Raise :class:`ClassPathError` unless ``dotted`` names a vector-store class."""
    module, _, name = dotted.rpartition(".")
    if not module or not name:
        raise ClassPathError(f"'{dotted}' is not a dotted path such as package.module.Class")
    tree = _module_tree(module)
    if tree is None:
        raise ClassPathError(
            f"no module '{module}' (Rasa imports it relative to the folder it runs in); "
            "fix the module part of the path"
        )
    if not _derives_from_store(module, tree, name, depth=0):
        raise ClassPathError(
            f"module '{module}' defines no class '{name}' that derives from "
            "InformationRetrieval; fix the class name (e.g. "
            "rasa_context_retrieval.ContextRetrieval)"
        )


def _module_tree(module: str) -> ast.Module | None:
    here = os.getcwd()
    added = here not in sys.path
    if added:
        sys.path.insert(0, here)  # Rasa runs with the assistant's folder on the path
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    finally:
        if added:
            sys.path.remove(here)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    # the package relative imports start from: the module itself if it is a package
    tree.package = module if spec.submodule_search_locations else spec.parent  # type: ignore[attr-defined]
    return tree


def _derives_from_store(module: str, tree: ast.Module, name: str, depth: int) -> bool:
    """``name`` is a class in ``module`` (or imported into it) whose bases reach a store."""
    if depth > MAX_BASE_DEPTH:
        return True  # deep enough: the chain is real code, let Rasa judge the rest
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return any(_base_is_store(module, tree, base, depth) for base in node.bases)
    source = _imported_from(tree, name, module)
    if source is None:
        return False
    if name in KNOWN_STORES:
        return True
    source_tree = _module_tree(source)
    return source_tree is not None and _derives_from_store(source, source_tree, name, depth + 1)


def _base_is_store(module: str, tree: ast.Module, base: ast.expr, depth: int) -> bool:
    base_name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
    if base_name is None or base_name in KNOWN_STORES:
        return True  # an expression we cannot follow is given the benefit of the doubt
    if base_name == "object":
        return False
    return _derives_from_store(module, tree, base_name, depth + 1)


def _imported_from(tree: ast.Module, name: str, module: str) -> str | None:
    """The module ``name`` is imported from anywhere in ``tree`` (lazy exports included)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(
            (alias.asname or alias.name) == name for alias in node.names
        ):
            if node.level:  # relative: resolved the way Python resolves it
                package = getattr(tree, "package", module)
                return importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            return node.module
    return None
