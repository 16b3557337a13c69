"""Every error the store raises shares one root: a caller can catch "anything the store refused"."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import rasa_context_retrieval
from rasa_context_retrieval.config import ConfigurationError, StoreConfig
from rasa_context_retrieval.errors import ContextRetrievalError


def _package_exception_classes() -> list[type[BaseException]]:
    """Every exception class defined (not merely imported) in a module of the package."""
    found = []
    for module_info in pkgutil.walk_packages(
        rasa_context_retrieval.__path__, prefix="rasa_context_retrieval."
    ):
        if module_info.name.endswith(".__main__"):  # runs the command line when imported
            continue
        module = importlib.import_module(module_info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == module.__name__:
                found.append(value)
    return found


def test_every_error_class_of_the_package_derives_from_the_one_root() -> None:
    classes = _package_exception_classes()
    assert len(classes) >= 18  # the typed errors of config, index, filters, LLM, Milvus, eval
    strays = [
        f"{c.__module__}.{c.__qualname__}"
        for c in classes
        if not issubclass(c, ContextRetrievalError)
    ]
    assert strays == []


def test_a_typed_error_is_still_caught_by_its_built_in_base() -> None:
    with pytest.raises(ValueError):
        StoreConfig.from_kwargs({"candidates": "many"})
    with pytest.raises(ContextRetrievalError) as caught:
        StoreConfig.from_kwargs({"candidates": "many"})
    assert isinstance(caught.value, ConfigurationError)
    assert "candidates" in str(caught.value)
