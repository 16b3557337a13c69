"""Embedding a large build's chunks in bfloat16, on CPUs that compute in it natively.

A build's time is the model's matrix products. CPUs with AMX or AVX-512 BF16 do them in
bfloat16 at about three times the rate of float32 (bench/results/embedding_graphs.md: 32 chunks
of 128 tokens, 298 against 879 CPU ms), while the vectors stay within cosine 0.9999 of Rasa's,
the same promise the ONNX export keeps. The model runs in torch under bfloat16 autocast (the
weights stay float32; onnxruntime has no bfloat16 kernels for CPUs), one thread per call and
the calls side by side, like the export's groups.

Whether the vectors keep that promise is not assumed: before a build uses this path, it embeds
a sample of that build's own chunks, shortest to longest, both ways and compares
(``checked_bf16_encoder``); below ``MIN_COSINE`` the build stays on float32. Small builds stay
there too: loading the model and the check cost more than they save.

No library picks a precision by a measured check on the caller's own texts, hence this module.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import structlog

from rasa_context_retrieval.knowledge.embedding import normalise
from rasa_context_retrieval.query_embedding.onnx import (
    OnnxQueryEncoder,
    encode_in_groups,
    mean_pooled_transformer,
    model_feed,
)

logger = structlog.get_logger()

FROM_CHUNKS = 1000
"""Builds with fewer new chunks stay on float32: at the example's 133 chunks the float32 export
is already faster than Rasa's build (bench/results/build_speed.md), and the model load and the
check would be a large share of the time."""
MIN_COSINE = 0.99995
"""The smallest cosine to float32 the sample may show: above the 0.9999 promise by a margin, so
that chunks outside the sample keep it too (measured: 0.99997 on the example's chunks)."""
SAMPLE = 32
"""Chunks of the build embedded both ways for the check, spread from shortest to longest."""
TEXTS_PER_CALL = 32
"""Chunks per model call: a call's fixed cost is small next to its arithmetic at this size, and
its attention stays a few MB."""
ATTENTION = "sdpa"
"""torch's fused attention: in bfloat16 it cost about a third less CPU than the plain one
(eager) on 1,000 chunks; the ONNX export uses eager, whose traced graph is the faster there."""
WIDTH_STEP = 32
"""Calls are padded to a multiple of this many tokens: torch's CPU kernels are prepared once
per input shape, and a build of thousands of chunks would otherwise see hundreds of widths."""


def native_bf16() -> bool:
    """Whether this CPU computes in bfloat16 natively (AMX or AVX-512 BF16); on other CPUs,
    torch emulates it, slower than float32."""
    import torch

    probes = ("_is_amx_tile_supported", "_is_avx512_bf16_supported")
    return any(bool(getattr(torch.cpu, probe, lambda: False)()) for probe in probes)


def checked_bf16_encoder(fp32: OnnxQueryEncoder, texts: Sequence[str]) -> Bf16Encoder | None:
    """A bfloat16 encoder for ``texts`` when the build is large, the CPU native and the check on
    a sample of ``texts`` holds; None (float32) otherwise, with the reason logged."""
    if len(texts) < FROM_CHUNKS or not native_bf16():
        return None
    try:
        encoder = Bf16Encoder(fp32)
        worst = _worst_cosine(encoder, fp32, _sample(texts))
    except Exception as error:  # any failure of this optional path: float32 as before
        logger.warning("knowledge.embedding.bf16_unused", reason=str(error))
        return None
    if worst < MIN_COSINE:
        logger.warning(
            "knowledge.embedding.bf16_unused",
            reason=f"bfloat16 vectors differ from float32 (cosine {worst:.6f} < {MIN_COSINE})",
        )
        return None
    logger.info("knowledge.embedding.bf16", chunks=len(texts), cosine=round(worst, 7))
    return encoder


class Bf16Encoder:
    """The export's tokens and pipeline (transformer, mean pooling) in torch under bfloat16
    autocast: texts in, unnormalised float32 vectors out, like ``OnnxQueryEncoder``."""

    def __init__(self, fp32: OnnxQueryEncoder) -> None:
        import torch
        from transformers import AutoModel

        transformer = AutoModel.from_pretrained(
            str(fp32.model.directory), attn_implementation=ATTENTION
        )
        self.pipeline = mean_pooled_transformer(transformer).eval()
        self.fp32 = fp32
        self._torch = torch

    def encode(self, texts: Sequence[str], cores: int = 1) -> np.ndarray:
        with _one_thread_per_call(self._torch):
            return encode_in_groups(self.fp32, texts, calls_of_equal_size, cores, self._run)

    def _run(self, encodings: Sequence[Any]) -> np.ndarray:
        torch = self._torch
        feed = model_feed(encodings, WIDTH_STEP)
        tensors = {name: torch.from_numpy(values) for name, values in feed.items()}
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            return self.pipeline(**tensors).float().numpy()


def calls_of_equal_size(lengths: Sequence[int], cores: int = 1) -> list[list[int]]:
    """Indices, shortest first, in calls of ``TEXTS_PER_CALL`` (the last may be smaller); at
    least ``cores`` calls when there are that many texts."""
    order = sorted(range(len(lengths)), key=lambda index: lengths[index])
    size = max(1, min(TEXTS_PER_CALL, -(-len(order) // max(1, cores))))
    return [order[start : start + size] for start in range(0, len(order), size)]


@contextlib.contextmanager
def _one_thread_per_call(torch: Any) -> Iterator[None]:
    """torch's thread count, process-wide, at 1 while a build's calls run side by side (one
    call per core beats one call spread over the cores: bench/results/build_speed.md), then
    back to what it was."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _sample(texts: Sequence[str]) -> list[str]:
    """``SAMPLE`` texts spread evenly over ``texts`` ordered by length, both ends included."""
    order = sorted(texts, key=len)
    if len(order) <= SAMPLE:
        return order
    step = (len(order) - 1) / (SAMPLE - 1)
    return [order[round(n * step)] for n in range(SAMPLE)]


def _worst_cosine(encoder: Bf16Encoder, fp32: OnnxQueryEncoder, sample: list[str]) -> float:
    reduced = normalise(encoder.encode(sample))
    full = normalise(fp32.encode(sample))
    return float(np.min(np.sum(reduced * full, axis=1)))
