"""Which texts of one query mix to embed together, by their token counts.

A batch is padded to its longest text, so a follow-up's mix (a few words of message, an earlier
question, and the bot's last reply of a hundred tokens) embedded in one call pays for every text
at the length of the reply: two to three times the work of embedding the reply alone. A separate
call costs a fixed overhead instead, so texts are grouped, shortest first, and a new group starts
where the padding a longer text would add to the group outweighs that overhead. No library
groups inference batches by a per-call cost model, hence this function.

Groups run side by side (``workers.side_by_side``), so when cores are idle a mix is also split
into at least one group per idle core: a short call's cost is mostly reading the model's weights
from memory, which each core then does at the same time instead of one after the other
(bench/results/query_embedding.md).
"""

from __future__ import annotations

from collections.abc import Sequence

CALL_OVERHEAD_TOKENS = 16
"""One model call's fixed cost, in tokens of work (all-MiniLM-L6-v2 on onnxruntime, one thread:
about 3 ms of overhead against 0.2 ms per token; bench/results/query_embedding.md)."""


def length_groups(
    lengths: Sequence[int], call_overhead: int = CALL_OVERHEAD_TOKENS, cores: int = 1
) -> list[list[int]]:
    """Indices of ``lengths`` in groups to embed together, each group's texts of similar length.

    Every index is in exactly one group; groups come shortest first. ``cores``: the cores free
    for this call; there are at least that many groups when there are that many texts.
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
    while len(groups) < cores and any(len(group) > 1 for group in groups):
        groups = _split_costliest(groups, lengths, call_overhead)
    return groups


def _split_costliest(
    groups: list[list[int]], lengths: Sequence[int], call_overhead: int
) -> list[list[int]]:
    """The groups with the costliest splittable one cut in two, the halves' costs balanced."""

    def cost(group: Sequence[int]) -> int:
        return call_overhead + len(group) * max(lengths[i] for i in group)

    splittable = [n for n, group in enumerate(groups) if len(group) > 1]
    costliest = max(splittable, key=lambda n: cost(groups[n]))
    group = groups[costliest]
    cut = min(range(1, len(group)), key=lambda at: max(cost(group[:at]), cost(group[at:])))
    return [*groups[:costliest], group[:cut], group[cut:], *groups[costliest + 1 :]]
