"""One real Milvus standalone server for the whole test run, on loopback, in a temporary directory.

The PyPI package ``milvus`` (the optional ``milvus`` extra) ships the server binary. Starting it
takes about ten seconds, and only one can run on a machine (its embedded etcd has a fixed port),
so every process of a run shares one: the first Milvus test of any worker of a parallel run starts
it, the others use it, and the run's controller stops it after the last Milvus test
(``tests/conftest.py``); in a run without workers, ``leave_module`` does. The processes find
it through a small state file, under a lock, in the folder ``tests/conftest.py`` names in
``MILVUS_TEST_STATE_DIR`` for the run. When the package is missing or the server cannot start on
this machine, every test using ``milvus_uri`` is skipped with the reason, never silently passed.

Use: ``from tests.milvus_server import milvus_uri  # noqa: F401`` in a test module.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

_COMPONENTS = (
    "proxy",
    "rootCoord",
    "queryCoord",
    "queryNode",
    "indexCoord",
    "indexNode",
    "dataCoord",
    "dataNode",
)
_START_TIMEOUT_S = 90.0
_HEALTH_POLL_MS = 2_000
_EMBEDDED_ETCD_PEER_PORT = 2380
"""Fixed in the packaged server: only one such server can run on a machine at a time."""
_QUICK_SERVER_SETTINGS = {
    # Two of the server's own timers, shortened for a test server on loopback (an environment
    # variable COMPONENT_KEY overrides `component.key` of its milvus.yaml). The client waits for
    # them: every Strong read for the next time tick (200 ms), every flush until the segments'
    # row assignments expire (2 s; a new version is flushed before it is published). The sync,
    # version and lease tests make hundreds of such reads and dozens of flushes; what they check
    # does not depend on either timer. (Loading a collection, about a second, is bound by a
    # fixed one-second check in the server.)
    "PROXY_TIMETICKINTERVAL": "50",
    "DATACOORD_SEGMENT_ASSIGNMENTEXPIRATION": "200",
}


STATE_DIR_VARIABLE = "MILVUS_TEST_STATE_DIR"
"""The environment variable naming the folder of the run's server state (``tests/conftest.py``
sets it before the workers of a parallel run start, so they all inherit it)."""
_STOP_TIMEOUT_S = 10.0


@pytest.fixture(scope="session")
def milvus_uri() -> Iterator[str]:
    """``http://127.0.0.1:<port>`` of the run's Milvus server, started if none runs."""
    # Each module importing this fixture gets its own fixture definition, so the server itself
    # is held per process here and left when the last user's teardown runs.
    uri = _acquire()
    _shared.users += 1
    try:
        yield uri
    finally:
        _shared.users -= 1
        if _shared.users == 0:
            _release()


def leave_module(*, more_milvus_tests: bool) -> None:
    """After the last test of a Milvus test module: drop the collections this process made, and,
    in a run without workers, stop the server when no Milvus test comes next (``tests/conftest.py``
    calls this).

    Each loaded collection keeps the server busy for as long as it lives (its channels' time
    ticks, its loaded segments): 20 of them tripled the idle server's CPU. Collections are named
    per module and no module reads another's; another process's collections are in use by its
    module, so only this process's are dropped. The session's fixtures would otherwise keep the
    server running, busy, until the last test of the whole run, long after the Milvus tests; a
    later Milvus test (another order of tests) starts a fresh one."""
    if _shared.uri is None:
        return
    _drop_collections_made_here(_shared.uri)
    if not more_milvus_tests and "PYTEST_XDIST_WORKER" not in os.environ:
        # A worker of a parallel run keeps it: it cannot know whether it gets another Milvus
        # file, and the controller stops the server after the last one (``tests/conftest.py``).
        _release()


def stop_server() -> None:
    """Stop the run's server, whoever uses it, and forget it (the end of a run)."""
    with _state_lock() as state_file:
        state = _read(state_file)
        if state is not None:
            _stop(state)
            state_file.unlink()
    _shared.uri = None
    _shared.server = None


class _Shared:
    uri: str | None = None
    """The server's address while this process uses it."""
    server: Any = None
    """The server process's handle, in the process that started it."""
    users = 0
    made: set[str] = set()
    """Collections this process created on the server (``_record_created_collections``)."""


_shared = _Shared()


def _me() -> str:
    return f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}:{os.getpid()}"


def _acquire() -> str:
    if _shared.uri is not None:
        return _shared.uri
    with _state_lock() as state_file:
        state = _read(state_file)
        if state is None or not _alive(state["pid"]):
            if state is not None:  # a server that died: its port and data are free to reuse
                _stop(state)
            _shared.server, base_dir = _start_server()
            state = {
                "uri": _uri(_shared.server),
                "pid": _shared.server.server_proc.pid,
                "base_dir": base_dir,
                "users": [],
            }
        state["users"].append(_me())
        state_file.write_text(json.dumps(state))
    _record_created_collections()
    _shared.uri = state["uri"]
    return _shared.uri


def _release() -> None:
    """Stop using the server; stop it if no other process uses it."""
    if _shared.uri is None:
        return
    with _state_lock() as state_file:
        state = _read(state_file)
        if state is not None:
            state["users"] = [user for user in state["users"] if user != _me()]
            if state["users"]:
                state_file.write_text(json.dumps(state))
                if _shared.server is not None:
                    # Others still use it: this process's exit must not stop it (the package
                    # stops its server when the handle is collected).
                    _shared.server.server_proc = None
            else:
                _stop(state)
                state_file.unlink()
    _shared.uri = None
    _shared.server = None


def _stop(state: dict[str, Any]) -> None:
    """Stop the server ``state`` describes (started by any process) and remove its data."""
    if _shared.server is not None and _shared.server.server_proc is not None:
        _shared.server.stop()
    else:
        with contextlib.suppress(ProcessLookupError):
            os.kill(state["pid"], signal.SIGTERM)
        deadline = time.monotonic() + _STOP_TIMEOUT_S
        while _alive(state["pid"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _alive(state["pid"]):
            with contextlib.suppress(ProcessLookupError):
                os.kill(state["pid"], signal.SIGKILL)
    shutil.rmtree(state["base_dir"], ignore_errors=True)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a finished child its parent has not reaped yet does not run)."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@contextlib.contextmanager
def _state_lock() -> Iterator[Path]:
    """The run's state file, held under an exclusive lock shared by the run's processes."""
    folder = Path(os.environ.get(STATE_DIR_VARIABLE) or _private_state_dir())
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield folder / "server.json"
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _private_state_dir() -> str:
    """A folder for a process run without ``tests/conftest.py`` (a script): its own state."""
    os.environ[STATE_DIR_VARIABLE] = tempfile.mkdtemp(prefix="milvus-test-run-")
    return os.environ[STATE_DIR_VARIABLE]


def _read(state_file: Path) -> dict[str, Any] | None:
    return json.loads(state_file.read_text()) if state_file.exists() else None


def _record_created_collections() -> None:
    """Note each collection a client of this process creates, so ``leave_module`` drops its own
    collections only (the product and the tests create them through ``MilvusClient``)."""
    from pymilvus import MilvusClient

    if getattr(MilvusClient.create_collection, "records_names", False):
        return
    create = MilvusClient.create_collection

    def create_collection(self: Any, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        _shared.made.add(collection_name)
        return create(self, collection_name, *args, **kwargs)

    create_collection.records_names = True  # type: ignore[attr-defined]
    MilvusClient.create_collection = create_collection  # type: ignore[method-assign]


def _drop_collections_made_here(uri: str) -> None:
    from pymilvus import MilvusClient

    client = MilvusClient(uri)
    try:
        existing = set(client.list_collections())
        for name in sorted(_shared.made & existing):
            client.drop_collection(name)
    finally:
        client.close()
        _shared.made.clear()


def _uri(server: Any) -> str:
    return f"http://127.0.0.1:{server.listen_port}"


def _start_server() -> tuple[Any, str]:
    try:
        from milvus import MilvusServer  # type: ignore[import-untyped]
    except ImportError as error:
        pytest.skip(f"Milvus server package not installed (pip install '.[milvus]'): {error}")
    if not _port_is_free(_EMBEDDED_ETCD_PEER_PORT):
        pytest.skip(
            f"Port {_EMBEDDED_ETCD_PEER_PORT} is taken (another Milvus standalone or etcd runs "
            "here); the packaged server's embedded etcd needs it."
        )
    # Not a TemporaryDirectory: the data must outlive this process when another one still uses
    # the server; whoever stops the server removes it (``_stop``).
    base_dir = tempfile.mkdtemp(prefix="milvus-test-")
    server = MilvusServer(wait_for_started=False)
    server.set_base_dir(base_dir)
    for component in _COMPONENTS:
        # Components register and talk to each other on loopback only.
        server.config.set(f"{component}.ip", "127.0.0.1")
    server.listen_port = 0  # 0: the package searches a free port (from 40000 up).
    try:
        with mock.patch.dict(os.environ, _QUICK_SERVER_SETTINGS):  # the server inherits them
            server.start()
        _wait_until_healthy(server)
    except Exception as error:  # noqa: BLE001 - any failure to start means: skip
        server.stop()
        shutil.rmtree(base_dir, ignore_errors=True)
        pytest.skip(f"Milvus server could not start on this machine: {error!r}")
    return server, base_dir


def _wait_until_healthy(server: Any) -> None:
    deadline = time.monotonic() + _START_TIMEOUT_S
    while True:
        if server.server_proc.poll() is not None:
            raise RuntimeError(f"the server exited with code {server.server_proc.returncode}")
        try:
            server.wait_started(timeout=_HEALTH_POLL_MS)
            return
        except TimeoutError:
            if time.monotonic() > deadline:
                raise


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server will
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
