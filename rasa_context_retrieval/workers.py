"""The worker threads that take a search's CPU work off the event loop.

Planning (heuristic rewrite, rule self-query) and retrieval are CPU work that would stall every
conversation if run on the event loop. They run here instead, on a small pool of their own:
pure-Python work holds the GIL, so more threads than cores add no throughput, and every extra
thread is one more competitor the event loop has to win the GIL from before it can wake up
(bench/results/hardening.md measures the event-loop lag under a burst of searches).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

SEARCH_WORKERS = max(2, min(4, os.cpu_count() or 2))

Params = ParamSpec("Params")
Result = TypeVar("Result")

_pool = ThreadPoolExecutor(max_workers=SEARCH_WORKERS, thread_name_prefix="search-worker")


async def off_loop(
    function: Callable[Params, Result], *args: Params.args, **kwargs: Params.kwargs
) -> Result:
    """``function(*args, **kwargs)`` on the search workers, with the caller's context vars."""
    context = contextvars.copy_context()
    call = functools.partial(context.run, function, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_pool, call)


_side_pool = ThreadPoolExecutor(
    max_workers=max(1, (os.cpu_count() or 2) - 1), thread_name_prefix="side-by-side"
)


def side_by_side(calls: Sequence[Callable[[], Result]]) -> list[Result]:
    """``[call() for call in calls]``, the first on the calling thread and the others at once
    beside it, for the independent parts of one search whose work releases the GIL (a model
    call per length group, a FAISS scan per query view): one search then uses the idle cores,
    as torch spreads one call over them.

    The others run on a pool of their own, so a caller that is itself a search worker never
    waits on its own pool, and nothing on this pool ever waits for it. A part the pool has not
    started by the time the first is done is run by the caller instead: when every core is busy
    with other searches, a search is never slower than running its parts in turn.
    """
    others: list[Future[Result]] = []
    for call in calls[1:]:
        try:
            others.append(_side_pool.submit(call))
        except RuntimeError:  # the interpreter is exiting: the pool takes no more work
            others.append(_not_started())
    first = calls[0]()
    # Every part the pool has not started yet is the caller's, before it waits for any other:
    # waiting in order left a part unstarted behind one that was running.
    pairs = list(zip(calls[1:], others, strict=True))
    mine = {n: call() for n, (call, future) in enumerate(pairs) if future.cancel()}
    return [first, *(mine[n] if n in mine else future.result() for n, future in enumerate(others))]


def _not_started() -> Future[Any]:
    return Future()  # pending: ``cancel()`` succeeds and the caller runs the part itself
