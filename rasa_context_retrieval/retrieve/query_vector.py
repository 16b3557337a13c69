"""One query vector out of several weighted ones (a follow-up mixed with its conversation).

Dense search compares unit vectors by inner product, so the weighted sum is scaled back to unit
length; the ranking is then the same as ranking by the weighted sum of the cosines to each text,
and the reported relevance stays a cosine in [-1, 1].
"""

from __future__ import annotations

from collections.abc import Sequence

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
