"""Tasks the worker-process tests send to worker processes, in a module of their own.

A worker imports the module of the function it runs; a fresh worker (after one died) importing a
test module would import everything that module imports first (a second or more of a core per
process). This one imports only the parser.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

from rasa_context_retrieval.knowledge import loader
from rasa_context_retrieval.knowledge.loader import FileToParse

CRASHING_FILE = "crashes-the-parser.md"


def pid_of_worker(task: int) -> tuple[int, int]:
    return task, os.getpid()


def dies_on_three(task: int) -> int:
    if task == 3:
        os._exit(1)  # as a segfault in a parser would end the process
    return task * 10


def pid_unless_three(task: int) -> int:
    """The worker's process id, a moment later (so that the next tasks are still in flight when
    task 3 kills its worker)."""
    if task == 3:
        os._exit(1)
    time.sleep(0.2)
    return os.getpid()


def crashes_in_a_worker(task: FileToParse) -> list:
    """The real parser, except that it kills its worker process on one file (and only in a
    worker process: run in the test's own process it parses that file normally)."""
    if task.name == CRASHING_FILE and multiprocessing.parent_process() is not None:
        os._exit(1)
    return loader.parse_file(task)


def _named_path(task: FileToParse, key: str) -> Path | None:
    """The path a test file names on its first line as ``<key>: <path>``, if it does."""
    first = task.raw.decode("utf-8", "replace").split("\n", 1)[0]
    prefix = f"{key}: "
    return Path(first.removeprefix(prefix)) if first.startswith(prefix) else None


def dies_while_overloaded(task: FileToParse) -> list:
    """The real parser, except that it kills its worker process on a file whose first line is
    ``overloaded: <path>`` for as long as that path exists (as the out-of-memory killer takes
    whichever worker holds a file on an overloaded machine); afterwards it parses it."""
    flag = _named_path(task, "overloaded")
    if flag is not None and flag.exists() and multiprocessing.parent_process() is not None:
        os._exit(1)
    return loader.parse_file(task)


def dies_every_time(task: FileToParse) -> list:
    """The real parser, except that it kills its worker process on every parse of a file whose
    first line is ``deaths: <path>`` (as a zip bomb does), adding a line to that path each time."""
    tally = _named_path(task, "deaths")
    if tally is not None and multiprocessing.parent_process() is not None:
        with tally.open("a", encoding="utf-8") as handle:
            handle.write("died\n")
        os._exit(1)
    return loader.parse_file(task)
