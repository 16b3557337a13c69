"""One property, two sizes: a few examples in the fast subset, the full run with the slow tests.

A property test costs what its examples cost. The fast subset (``pytest -m "not milvus and not
slow"``) checks the same property, with the same code, on a few examples; the whole suite
(``pytest``) also runs the full number. Use::

    @given(...)
    def no_search_leaks(config, knowledge_base): ...  # not collected: no ``test_`` prefix

    @property_sizes(full=110)
    def test_no_search_leaks(config, examples):
        sized(no_search_leaks, examples, deadline=None)(config=config)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import settings

FEW_EXAMPLES = 10


def property_sizes(full: int, few: int = FEW_EXAMPLES) -> pytest.MarkDecorator:
    """Parametrize ``examples``: ``few`` in the fast subset, ``full`` marked slow."""
    return pytest.mark.parametrize(
        "examples",
        [pytest.param(few, id="few"), pytest.param(full, id="full", marks=pytest.mark.slow)],
    )


def sized(prop: Callable[..., None], examples: int, **options: Any) -> Callable[..., None]:
    """The ``@given`` property ``prop`` run on ``examples`` examples, with ``options`` (the
    hypothesis settings the property needs: deadline, suppressed health checks).

    Both sizes run in one session with the whole suite, and hypothesis refuses a second
    ``settings`` on the same function; each size's settings replace the other's, because the
    property reads them when it runs."""
    with contextlib.suppress(AttributeError):
        del prop._hypothesis_internal_settings_applied  # type: ignore[attr-defined]
    return settings(max_examples=examples, **options)(prop)  # type: ignore[no-any-return]
