"""Tasks the worker-process tests send to worker processes, in a module of their own.

A worker imports the module of the function it runs; a fresh worker (after one died) importing a
test module would import everything that module imports first (a second or more of a core per
process). This one imports only the parser.
"""

from __future__ import annotations

import multiprocessing
import os
import time

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
