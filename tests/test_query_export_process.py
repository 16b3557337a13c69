"""The ONNX export runs where it cannot hold the assistant's interpreter lock: a child process.

Tracing the model in torch on a background thread starved the event loop on two cores; in a
child process pinned to one thread it cannot. The query session itself never spins a waiting
thread on a core.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rasa_context_retrieval.query_embedding import export_process
from rasa_context_retrieval.query_embedding.onnx import (
    SPINNING_ENTRY,
    LocalModel,
    OnnxQueryEncoder,
    cached_export,
)


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
