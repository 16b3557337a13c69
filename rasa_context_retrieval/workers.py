"""The worker threads that take a search's CPU work off the event loop, and the worker processes
that parse a knowledge base on every core.

Planning (heuristic rewrite, rule self-query) and retrieval are CPU work that would stall every
conversation if run on the event loop. They run here instead, on a small pool of their own:
pure-Python work holds the GIL, so more threads than cores add no throughput, and every extra
thread is one more competitor the event loop has to win the GIL from before it can wake up
(bench/results/hardening.md measures the event-loop lag under a burst of searches).

Parsing documents (PDF, Word, YAML front matter) is pure-Python work too, but a build has
thousands of independent files: threads would take turns on one core, so files are parsed in
worker processes instead (``in_worker_processes``), one per core.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import multiprocessing
import multiprocessing.util
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar

SEARCH_WORKERS = max(2, min(4, os.cpu_count() or 2))

Params = ParamSpec("Params")
Result = TypeVar("Result")
Task = TypeVar("Task")

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


PROCESSES_IN_FLIGHT_PER_WORKER = 4
"""Tasks handed to the worker processes ahead of the one awaited: enough to keep every worker
busy, few enough that a large knowledge base is never all in memory at once."""


@dataclass(frozen=True)
class Ready(Generic[Result]):
    """A task whose result is known already (a file parsed before): passed through in order,
    never sent to a worker."""

    result: Result


@dataclass(frozen=True)
class WorkerCrashed:
    """The worker process died on this task (a segfault in a parser, the out-of-memory killer):
    the task is lost, every other task still gets its result."""

    exit_reason: str = "the worker process running it died"


def worker_processes() -> int:
    """Worker processes for CPU work that holds the interpreter lock (parsing): one per core."""
    return max(1, os.cpu_count() or 1)


def in_worker_processes(
    function: Callable[[Task], Result],
    tasks: Iterable[Task | Ready[Result]],
    workers: int,
    batch: int = 1,
) -> Iterator[Result | WorkerCrashed]:
    """``function(task)`` for every task, in worker processes, yielded in the tasks' order.

    ``function`` must be a module-level function (it is sent to the workers by name). An
    exception it raises is raised here, as if it ran in this process. When a worker dies, the
    tasks it may have been running are run again one at a time, each alone in a process, so only
    the task that kills its process is reported (as ``WorkerCrashed``); later tasks go to a fresh
    pool. With
    ``workers`` below 2, or where no process can be started, everything runs in this process.
    ``batch``: consecutive tasks sent to a worker together, for tasks cheaper than the trip.
    """
    if workers < 2:
        yield from _in_this_process(function, tasks)
        return
    try:
        pool = _process_pool(workers, function.__module__)
    except OSError:  # no processes here (a sandbox, a limit): the same results, serially
        yield from _in_this_process(function, tasks)
        return
    pending: deque[tuple[list[Task] | Ready[Result], Future[list[Result]] | None]] = deque()
    window = workers * PROCESSES_IN_FLIGHT_PER_WORKER
    groups: Iterator[list[Task] | Ready[Result]] = _batches(tasks, batch)
    alone = _OneAtATime(function)
    try:
        for group in groups:
            if isinstance(group, Ready):
                pending.append((group, None))
            else:
                try:
                    pending.append((group, pool.submit(_each, function, group)))
                except BrokenProcessPool:
                    pool = _process_pool(workers, function.__module__, broken=pool)
                    pending.append((group, pool.submit(_each, function, group)))
            while len(pending) >= window:
                yield from _outcomes(alone, pending.popleft())
        while pending:
            yield from _outcomes(alone, pending.popleft())
    finally:
        for _, future in pending:  # the caller stopped early: leave the pool idle
            if future is not None:
                future.cancel()
        alone.close()


def _batches(
    tasks: Iterable[Task | Ready[Result]], size: int
) -> Iterator[list[Task] | Ready[Result]]:
    """Runs of up to ``size`` consecutive tasks; a known result on its own, in its place."""
    run: list[Task] = []
    for task in tasks:
        if isinstance(task, Ready):
            if run:
                yield run
                run = []
            yield task
            continue
        run.append(task)
        if len(run) >= size:
            yield run
            run = []
    if run:
        yield run


def _each(function: Callable[[Task], Result], group: list[Task]) -> list[Result]:
    """What a worker runs: the tasks of one batch, in order."""
    return [function(task) for task in group]


def _in_this_process(
    function: Callable[[Task], Result], tasks: Iterable[Task | Ready[Result]]
) -> Iterator[Result]:
    for task in tasks:
        yield task.result if isinstance(task, Ready) else function(task)


def _outcomes(
    alone: _OneAtATime[Task, Result],
    submitted: tuple[list[Task] | Ready[Result], Future[list[Result]] | None],
) -> list[Result | WorkerCrashed]:
    group, future = submitted
    if isinstance(group, Ready):
        return [group.result]
    assert future is not None
    try:
        return list(future.result())
    except BrokenProcessPool:  # a task of this batch, or of another one in flight, killed a worker
        return [alone.run(task) for task in group]


class _OneAtATime(Generic[Task, Result]):
    """Runs tasks one at a time in a process that runs nothing else meanwhile: if it dies, the
    task it was running is the one that killed it. The process is kept for the next task until
    one kills it: a worker crash puts every task in flight (dozens) through here, and a fresh
    process for each would import the task's module again each time (seconds of a core)."""

    def __init__(self, function: Callable[[Task], Result]) -> None:
        self._function = function
        self._pool: ProcessPoolExecutor | None = None

    def run(self, task: Task) -> Result | WorkerCrashed:
        if self._pool is None:
            self._pool = _new_process_pool(1, self._function.__module__)
        try:
            return self._pool.submit(self._function, task).result()
        except BrokenProcessPool:
            self.close()
            return WorkerCrashed()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


_process_pools: dict[int, ProcessPoolExecutor] = {}
_process_pools_lock = threading.Lock()


def _process_pool(
    workers: int, module: str, broken: ProcessPoolExecutor | None = None
) -> ProcessPoolExecutor:
    """The pool of ``workers`` processes, kept for the next load once started: a worker starts
    by importing the parsers (seconds on a busy machine), which a refresh should not pay again.
    Idle workers wait on a queue and use no CPU. ``broken``: a pool a worker died in, replaced."""
    with _process_pools_lock:
        pool = _process_pools.get(workers)
        if pool is None or pool is broken:
            if broken is not None:
                broken.shutdown(wait=False, cancel_futures=True)
            if not _process_pools:
                # At exit, multiprocessing joins this process's children before the executors
                # are shut down; idle pool workers would wait forever for work, so shut the pools
                # down first (a finalizer with a priority runs before that join).
                multiprocessing.util.Finalize(None, _shut_down_pools, exitpriority=100)
            pool = _process_pools[workers] = _new_process_pool(workers, module)
        return pool


@contextlib.contextmanager
def processes_for_one_job(workers: int, module: str) -> Iterator[ProcessPoolExecutor]:
    """``workers`` processes that have imported ``module``, shut down when the job ends: for
    work whose workers hold much memory (a model), which a kept pool would hold on to while the
    assistant serves."""
    pool = _new_process_pool(workers, module)
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _shut_down_pools() -> None:
    """Let the kept pools' idle workers exit (see ``_process_pool``)."""
    with _process_pools_lock:
        pools = list(_process_pools.values())
        _process_pools.clear()
    for pool in pools:
        pool.shutdown(wait=True, cancel_futures=True)


def _new_process_pool(workers: int, module: str) -> ProcessPoolExecutor:
    """A pool started from a clean server process (``forkserver``) that has imported ``module``
    once, not forked from this one: a fork of a process with running threads (the event loop's,
    torch's) can inherit a lock held by one of them and hang."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return ProcessPoolExecutor(
            workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_exit_with,
            initargs=(os.getpid(),),
        )
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([module])  # only before the server's first start
    return ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_exit_with, initargs=(os.getpid(),)
    )


OWNER_CHECK_SECONDS = 1.0
"""How often a pool worker checks that the process that started it is alive."""


def _exit_with(owner: int) -> None:
    """Pool worker start-up: exit once the process that started the pool is gone.

    A kept pool's idle workers wait for work forever. If the assistant is killed (SIGKILL, the
    out-of-memory killer), no exit handler tells them, and they and the fork server (which lives
    while its children do) would outlive it. The pipe the pool reads never reports the death:
    the worker holds its other end itself, so the worker asks for the owner's pid instead."""

    def watch() -> None:
        while True:
            time.sleep(OWNER_CHECK_SECONDS)
            try:
                os.kill(owner, 0)
            except ProcessLookupError:
                os._exit(0)
            except PermissionError:  # the pid belongs to another user's process now
                os._exit(0)

    threading.Thread(target=watch, name="exit-with-owner", daemon=True).start()
