"""The ONNX export runs where it cannot hold the assistant's interpreter lock: a child process.

Tracing the model in torch on a background thread starved the event loop on two cores; in a
child process pinned to one thread it cannot. The query session itself never spins a waiting
thread on a core.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rasa_context_retrieval.query_embedding import export_process
from rasa_context_retrieval.query_embedding.embedder import OnnxQueryEmbedder, open_query_embedder
from rasa_context_retrieval.query_embedding.onnx import (
    SPINNING_ENTRY,
    LocalModel,
    OnnxQueryEncoder,
    cached_export,
    export_file,
)
from tests.store_support import CountingEmbedder


@pytest.mark.slow  # exports the model in a child process (the fast twin below stands in for it)
def test_the_export_is_made_by_a_pinned_child_process_and_the_session_never_spins(
    tmp_path: Path, model_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import torch.onnx

    def exporting_here(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the model was exported in the assistant's own process")

    monkeypatch.setattr(torch.onnx, "export", exporting_here)
    started: list[dict[str, Any]] = []
    real_run = subprocess.run

    def recorded_run(command: list[str], **kwargs: Any) -> Any:
        started.append({"command": command, "env": kwargs.get("env")})
        return real_run(command, **kwargs)

    monkeypatch.setattr(export_process.subprocess, "run", recorded_run)
    model = LocalModel.describe(model_path)
    exported = cached_export(model, tmp_path / "query-model")
    [child] = started
    assert child["command"][1:4] == ["-m", export_process.__name__, "fp32"]
    assert {child["env"][name] for name in export_process.THREAD_VARIABLES} == {"1"}
    encoder = OnnxQueryEncoder(model, exported)
    options = encoder.session.get_session_options()  # one thread, and it never spins
    assert options.intra_op_num_threads == 1 and options.inter_op_num_threads == 1
    assert options.get_session_config_entry(SPINNING_ENTRY) == "0"
    [vector] = encoder.encode(["How much does the premium plan cost?"])
    assert vector.shape == (384,) and np.isfinite(vector).all()


def test_the_export_is_started_as_a_pinned_child_process_and_its_session_never_spins(
    tmp_path: Path, model_path: Path, embedder: Any, query_model_cache: Path, monkeypatch: Any
):
    """The test above without the half minute of exporting: the child is recorded, and the export
    this test run already made stands in for what it writes."""
    import torch.onnx

    def exporting_here(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the model was exported in the assistant's own process")

    monkeypatch.setattr(torch.onnx, "export", exporting_here)
    model = LocalModel.describe(model_path)
    made = export_file(query_model_cache, model.fingerprint(), int8=False)
    started: list[dict[str, Any]] = []

    def recorded_run(command: list[str], **kwargs: Any) -> Any:
        started.append({"command": command, "env": kwargs.get("env")})
        shutil.copyfile(made, command[-1])
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(export_process.subprocess, "run", recorded_run)
    exported = cached_export(model, tmp_path / "query-model")
    [child] = started
    assert child["command"][1:4] == ["-m", export_process.__name__, "fp32"]
    assert {child["env"][name] for name in export_process.THREAD_VARIABLES} == {"1"}
    options = OnnxQueryEncoder(model, exported).session.get_session_options()
    assert options.intra_op_num_threads == 1 and options.inter_op_num_threads == 1
    assert options.get_session_config_entry(SPINNING_ENTRY) == "0"


def _an_export_made_elsewhere(model: LocalModel, folder: Path) -> Path:
    made = export_file(folder, model.fingerprint(), int8=False)
    folder.mkdir()
    made.write_bytes(b"the bytes of an export")
    return made


def test_another_index_folder_links_the_export_made_once_instead_of_copying_it(
    tmp_path: Path, model_path: Path
):
    model = LocalModel.describe(model_path)
    made = _an_export_made_elsewhere(model, tmp_path / "first")
    held = cached_export(model, tmp_path / "second", source=made)
    assert held.parent == tmp_path / "second"
    assert held.read_bytes() == b"the bytes of an export"
    assert os.path.samefile(held, made)  # one file on disk, however many index folders


def test_where_no_link_can_be_made_the_export_is_copied(
    tmp_path: Path, model_path: Path, monkeypatch: pytest.MonkeyPatch
):
    def across_devices(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", across_devices)
    model = LocalModel.describe(model_path)
    made = _an_export_made_elsewhere(model, tmp_path / "first")
    held = cached_export(model, tmp_path / "second", source=made)
    assert held.read_bytes() == b"the bytes of an export"
    assert not os.path.samefile(held, made)


def test_a_store_on_another_client_of_the_same_model_uses_the_export_already_made(
    tmp_path: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch
):
    """A wrapped client (here one that counts its texts) gives other index fingerprints, but the
    query export depends on the model files only: it is linked and checked, not made again."""

    def exporting_again(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the model was exported again")

    monkeypatch.setattr(export_process.subprocess, "run", exporting_again)
    opened = open_query_embedder(
        "auto", CountingEmbedder(embedder), tmp_path / "query-model", background=False
    )
    assert isinstance(opened, OnnxQueryEmbedder)
    fingerprint = LocalModel.describe(Path(embedder.config["model"])).fingerprint()
    held = export_file(tmp_path / "query-model", fingerprint, int8=False)
    assert os.path.samefile(held, opened.encoder.path)  # the store's folder holds it, linked
