"""A pytest plugin that records where a test run's CPU goes, per process of a parallel run.

Load it by name with the directory for its records in ``SUITE_PROBE_DIR``::

    SUITE_PROBE_DIR=probe PYTHONPATH=.:bench python -m pytest -n auto -p suite_probe

Each pytest process (the controller and every xdist worker) writes ``<worker>.jsonl``: the CPU
it had used when pytest configured it (interpreter start and imports), at the end of collection,
around each test (its setup, call and teardown: module fixtures count on a module's first test),
and at the end. ``bench/suite_cpu.py`` sums the records into tables. CPU is ``os.times()``:
user + system of the process itself, and apart from it the children it waited for.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_records: list[dict[str, Any]] = []


def _cpu() -> tuple[float, float]:
    times = os.times()
    return times.user + times.system, times.children_user + times.children_system


def _record(event: str, **fields: Any) -> None:
    own, children = _cpu()
    _records.append(
        {"event": event, "cpu": own, "children": children, "wall": time.time(), **fields}
    )


def pytest_configure(config: pytest.Config) -> None:
    _record("configured", worker=os.environ.get("PYTEST_XDIST_WORKER", "controller"))


def pytest_collection_finish(session: pytest.Session) -> None:
    _record("collected", items=len(session.items))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    before_own, before_children = _cpu()
    start = time.time()
    yield
    own, children = _cpu()
    _records.append(
        {
            "event": "test",
            "nodeid": item.nodeid,
            "cpu": own - before_own,
            "children": children - before_children,
            "wall": time.time() - start,
        }
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    _record("finished")
    directory = Path(os.environ.get("SUITE_PROBE_DIR", "suite-probe"))
    directory.mkdir(parents=True, exist_ok=True)
    name = os.environ.get("PYTEST_XDIST_WORKER", "controller")
    with open(directory / f"{name}.jsonl", "w", encoding="utf-8") as out:
        for record in _records:
            out.write(json.dumps(record) + "\n")
