"""Query vectors out of weighted texts (a follow-up mixed with its conversation).

Dense search compares unit vectors by inner product, so the weighted sum is scaled back to unit
length; the ranking is then the same as ranking by the weighted sum of the cosines to each text,
and the reported relevance stays a cosine in [-1, 1].
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np


def mixed_vector(weighted: Sequence[tuple[np.ndarray, float]]) -> np.ndarray:
    """The unit-length weighted sum of ``(vector, weight)`` pairs (the first leads).

    Raises:
        ValueError: nothing to mix.
    """
    if not weighted:
        raise ValueError("mixed_vector needs at least one (vector, weight) pair")
    total = np.sum([vector * weight for vector, weight in weighted], axis=0, dtype=np.float32)
    norm = float(np.linalg.norm(total))
    # Opposite vectors can cancel out; the leading vector alone is then the honest query.
    return total / norm if norm > 0 else weighted[0][0]


class WeightedText(Protocol):
    """A text and its weight in a mix (``rewrite.context.QueryText``)."""

    @property
    def text(self) -> str: ...

    @property
    def weight(self) -> float: ...


def view_vectors(
    views: Sequence[Sequence[WeightedText]], embedded: Mapping[str, np.ndarray]
) -> list[np.ndarray]:
    """One query vector per view: its texts' vectors (from ``embedded``) mixed by weight.

    Raises:
        KeyError: a text of a view was not embedded.
        ValueError: a view is empty.
    """
    return [
        embedded[view[0].text]
        if len(view) == 1
        else mixed_vector([(embedded[part.text], part.weight) for part in view])
        for view in views
    ]
