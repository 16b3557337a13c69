"""Which texts of one query mix to embed together, by their token counts.

A batch is padded to its longest text, so a follow-up's mix (a few words of message, an earlier
question, and the bot's last reply of a hundred tokens) embedded in one call pays for every text
at the length of the reply: two to three times the work of embedding the reply alone. A separate
call costs a fixed overhead instead, so texts are grouped, shortest first, and a new group starts
where the padding a longer text would add to the group outweighs that overhead. No library
groups inference batches by a per-call cost model, hence this function.
"""

from __future__ import annotations

from collections.abc import Sequence

CALL_OVERHEAD_TOKENS = 16
"""One model call's fixed cost, in tokens of work (all-MiniLM-L6-v2 on onnxruntime, one thread:
about 3 ms of overhead against 0.2 ms per token; bench/results/query_embedding.md)."""


def length_groups(
    lengths: Sequence[int], call_overhead: int = CALL_OVERHEAD_TOKENS
) -> list[list[int]]:
    """Indices of ``lengths`` in groups to embed together, each group's texts of similar length.

    Every index is in exactly one group; groups come shortest first.
    """
    groups: list[list[int]] = []
    widest = 0
    for index in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        length = lengths[index]
        if groups and len(groups[-1]) * (length - widest) <= call_overhead:
            groups[-1].append(index)
        else:
            groups.append([index])
        widest = length
    return groups
