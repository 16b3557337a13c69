"""The ONNX export and int8 quantization, run in a child process of their own.

Exporting traces the model in torch and quantizing rewrites its weights: seconds of CPU work that
holds the interpreter lock in long stretches. Run in the assistant's process (even on a
background thread), it starved the event loop on a 2-core machine (bench/results/hardening.md).
In a child process it cannot hold this interpreter's lock, and the child is pinned to one thread
for torch, OpenMP and MKL and runs at a lower priority, so it leaves the cores to the searches.

``python -m rasa_context_retrieval.query_embedding.export_process fp32 MODEL_DIR TARGET`` exports;
``... int8 SOURCE TARGET`` quantizes. The parent only starts it and waits (``run_in_child``).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

from rasa_context_retrieval.errors import ContextRetrievalError

CHILD_THREADS = 1
CHILD_NICENESS = 10
"""Added to the child's priority: the export waits for a core rather than take one from a search."""
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
ERROR_TAIL_CHARS = 2000


class ChildExportFailed(ContextRetrievalError, RuntimeError):
    """The export process failed; the message carries the end of its error output."""


def child_environment() -> dict[str, str]:
    """This process's environment with every math library pinned to ``CHILD_THREADS``."""
    pinned = dict.fromkeys(THREAD_VARIABLES, str(CHILD_THREADS))
    return {**os.environ, **pinned, "TOKENIZERS_PARALLELISM": "false"}


def run_in_child(step: str, source: Path, target: Path) -> None:
    """Run ``step`` (``fp32`` or ``int8``) in a child process and wait for it."""
    command = [sys.executable, "-m", __name__, step, str(source), str(target)]
    finished = subprocess.run(
        command, env=child_environment(), capture_output=True, text=True, check=False
    )
    if finished.returncode != 0:
        raise ChildExportFailed(
            f"the {step} export process exited with {finished.returncode}: "
            f"{finished.stderr[-ERROR_TAIL_CHARS:].strip()}"
        )


def main(arguments: list[str]) -> int:
    step, source, target = arguments
    with contextlib.suppress(OSError):  # not allowed here: run at the parent's priority
        os.nice(CHILD_NICENESS)
    from rasa_context_retrieval.query_embedding import onnx

    if step == "fp32":
        import torch

        torch.set_num_threads(CHILD_THREADS)
        torch.set_num_interop_threads(CHILD_THREADS)
        onnx.export_onnx_here(onnx.LocalModel.describe(Path(source)), Path(target))
    elif step == "int8":
        onnx.quantize_int8_here(Path(source), Path(target))
    else:
        raise SystemExit(f"unknown step {step!r}; use fp32 or int8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
