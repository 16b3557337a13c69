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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

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
