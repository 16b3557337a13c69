"""One real Milvus standalone server for the whole test run, on loopback, in a temporary directory.

The PyPI package ``milvus`` (the optional ``milvus`` extra) ships the server binary. Starting it
takes about ten seconds, so it is started once per session and stopped after the last Milvus
test (``leave_module``). When the
package is missing or the server cannot start on this machine, every test using ``milvus_uri`` is
skipped with the reason, never silently passed.

Use: ``from tests.milvus_server import milvus_uri  # noqa: F401`` in a test module.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
from collections.abc import Iterator
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


@pytest.fixture(scope="session")
def milvus_uri() -> Iterator[str]:
    """``http://127.0.0.1:<port>`` of a fresh Milvus server, stopped after the session."""
    # Each module importing this fixture gets its own fixture definition, so the server itself
    # is shared here and stopped when the last user's teardown runs.
    if _shared.server is None:
        _shared.server = _start_server()
    _shared.users += 1
    try:
        yield _uri(_shared.server)
    finally:
        _shared.users -= 1
        if _shared.users == 0:
            stop_server()


def leave_module(*, more_milvus_tests: bool) -> None:
    """After the last test of a Milvus test module: drop the collections it left, and stop the
    server when no Milvus test comes next (``tests/conftest.py`` calls this).

    Each loaded collection keeps the server busy for as long as it lives (its channels' time
    ticks, its loaded segments): 20 of them tripled the idle server's CPU. Collections are named
    per module and no module reads another's. The session's fixtures would otherwise keep the
    server running, busy, until the last test of the whole run, long after the Milvus tests;
    a later Milvus test (another order of tests) starts a fresh one."""
    if _shared.server is None:
        return
    if not more_milvus_tests:
        stop_server()
        return
    from pymilvus import MilvusClient

    client = MilvusClient(_uri(_shared.server))
    try:
        for name in client.list_collections():
            client.drop_collection(name)
    finally:
        client.close()


def stop_server() -> None:
    """Stop the shared server and remove its data, if it runs."""
    if _shared.server is None:
        return
    _shared.server.stop()
    _shared.base_dir.cleanup()
    _shared.server = None


def _uri(server: Any) -> str:
    return f"http://127.0.0.1:{server.listen_port}"


class _Shared:
    server: Any = None
    base_dir: Any = None
    users = 0


_shared = _Shared()


def _start_server() -> Any:
    try:
        from milvus import MilvusServer  # type: ignore[import-untyped]
    except ImportError as error:
        pytest.skip(f"Milvus server package not installed (pip install '.[milvus]'): {error}")
    if not _port_is_free(_EMBEDDED_ETCD_PEER_PORT):
        pytest.skip(
            f"Port {_EMBEDDED_ETCD_PEER_PORT} is taken (another Milvus standalone or etcd runs "
            "here); the packaged server's embedded etcd needs it."
        )
    base_dir = tempfile.TemporaryDirectory(prefix="milvus-test-")
    server = MilvusServer(wait_for_started=False)
    server.set_base_dir(base_dir.name)
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
        base_dir.cleanup()
        pytest.skip(f"Milvus server could not start on this machine: {error!r}")
    _shared.base_dir = base_dir
    return server


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
