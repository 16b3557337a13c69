"""Embedding a large build's chunks in bfloat16, on CPUs that compute in it natively.

A build's time is the model's matrix products. CPUs with AMX or AVX-512 BF16 do them in
bfloat16 at two to three times the rate of float32 (bench/results/embedding_graphs.md), while
the vectors stay within cosine 0.9999 of Rasa's, the promise the ONNX export keeps. The model
runs in torch under bfloat16 autocast (the weights stay float32; onnxruntime has no bfloat16
kernels for CPUs), one thread per process: the building process and one worker process per
other core share the calls. Processes, not threads: torch's Python layers hold the interpreter
lock between kernels, so two threads of one process did 1.1-1.2 times the work of one, where two
processes did 1.8 times. The workers live for the build only, since each holds torch and the
model.

Whether the vectors keep that promise is not assumed: before a build uses this path, it embeds
a sample of that build's own chunks, shortest to longest, both ways and compares
(``bf16_encoder``); below ``MIN_COSINE`` the build stays on float32. Small builds stay there
too: loading the model and the check cost more than they save.

No library picks a precision by a measured check on the caller's own texts, hence this module.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future
from typing import Any

import numpy as np
import structlog

from rasa_context_retrieval.knowledge.embedding import normalise
from rasa_context_retrieval.query_embedding.onnx import (
    LocalModel,
    ModelTokens,
    OnnxQueryEncoder,
    mean_pooled_transformer,
    model_feed,
)
from rasa_context_retrieval.workers import processes_for_one_job

logger = structlog.get_logger()

FROM_CHUNKS = 1000
"""Builds with fewer new chunks stay on float32: at the example's 133 chunks the float32 export
is already 1.9 times Rasa's build (bench/results/build_speed_quiet.md), and loading the model and
the check would be a large share of the time."""
MIN_COSINE = 0.99995
"""The smallest cosine to float32 the sample may show: above the 0.9999 promise by a margin, so
that chunks outside the sample keep it too (measured: 0.99997 on the example's chunks)."""
SAMPLE = 32
"""Chunks of the build embedded both ways for the check, spread from shortest to longest."""
TEXTS_PER_CALL = 32
"""Chunks per model call, and per trip to a worker process: a call's fixed cost is small next
to its arithmetic at this size, and its attention stays a few MB."""
WIDTH_STEP = 32
"""Calls are padded to a multiple of this many tokens: torch's CPU kernels are prepared once
per input shape, and a build of thousands of chunks would otherwise see hundreds of widths."""
ATTENTION = "sdpa"
"""torch's fused attention: in bfloat16 it cost about a third less CPU than the plain one
(eager) on 1,000 chunks; the ONNX export uses eager, whose traced graph is the faster there."""


def native_bf16() -> bool:
    """Whether this CPU computes in bfloat16 natively (AMX or AVX-512 BF16); on other CPUs,
    torch emulates it, slower than float32."""
    import torch

    probes = ("_is_amx_tile_supported", "_is_avx512_bf16_supported")
    return any(bool(getattr(torch.cpu, probe, lambda: False)()) for probe in probes)


@contextlib.contextmanager
def bf16_encoder(fp32: OnnxQueryEncoder, texts: Sequence[str]) -> Iterator[Bf16Encoder | None]:
    """A bfloat16 encoder for ``texts`` when the build is large, the CPU native and the check on
    a sample of ``texts`` holds; None (float32) otherwise, with the reason logged. Its worker
    processes stop when the ``with`` block ends."""
    if len(texts) < FROM_CHUNKS or not native_bf16():
        yield None
        return
    with contextlib.ExitStack() as stack:
        try:
            helpers = max(1, os.cpu_count() or 1) - 1
            pool = (
                stack.enter_context(processes_for_one_job(helpers, __name__)) if helpers else None
            )
            checked = Bf16Encoder(fp32.model, pool, helpers)
            worst = _worst_cosine(checked, fp32, _sample(texts))
            encoder: Bf16Encoder | None = checked
        except Exception as error:  # any failure of this optional path: float32 as before
            logger.warning("knowledge.embedding.bf16_unused", reason=str(error))
            encoder = None
        else:
            if worst < MIN_COSINE:
                logger.warning(
                    "knowledge.embedding.bf16_unused",
                    reason=f"bfloat16 vectors differ from float32 (cosine {worst:.6f} < "
                    f"{MIN_COSINE})",
                )
                encoder = None
            else:
                logger.info("knowledge.embedding.bf16", chunks=len(texts), cosine=round(worst, 7))
        yield encoder


class Bf16Encoder:
    """Texts in, unnormalised float32 vectors out (like ``OnnxQueryEncoder``), in calls of
    ``TEXTS_PER_CALL`` texts of similar length: this process takes the calls from the shortest
    end, the worker processes of ``pool`` from the longest, so this process starts at once while
    the workers start (seconds: each imports torch and loads the model) and all meet in the
    middle."""

    def __init__(self, model: LocalModel, pool: Executor | None, workers: int) -> None:
        import torch

        self.model = model
        self.pool = pool
        self.in_flight = IN_FLIGHT_PER_WORKER * workers
        self.tokens, self.pipeline = _load_pipeline(model)
        self._torch = torch
        if pool is not None:
            for _ in range(workers):  # start loading the model there now
                pool.submit(_pipeline, model)

    def encode(
        self, texts: Sequence[str], cores: int = 1, done: Callable[[int], object] | None = None
    ) -> np.ndarray:
        """``cores`` is ignored: this process and the pool's are the cores. ``done(n)`` is told
        of each call's ``n`` texts as it ends (a progress bar)."""
        order = sorted(range(len(texts)), key=lambda row: len(texts[row]))
        calls = [order[at : at + TEXTS_PER_CALL] for at in range(0, len(order), TEXTS_PER_CALL)]
        found: dict[int, np.ndarray] = {}
        ahead: dict[int, Future[np.ndarray]] = {}
        front, back = 0, len(calls) - 1
        with _one_thread(self._torch):
            while front <= back:
                for number in [n for n, future in ahead.items() if future.done()]:
                    found[number] = ahead.pop(number).result()
                    _tell(done, len(calls[number]))
                if self.pool is not None and len(ahead) < self.in_flight:
                    task = (self.model, [texts[row] for row in calls[back]])
                    ahead[back] = self.pool.submit(embed_call, task)
                    back -= 1
                else:
                    found[front] = self._here([texts[row] for row in calls[front]])
                    _tell(done, len(calls[front]))
                    front += 1
        for number, future in ahead.items():
            found[number] = future.result()
            _tell(done, len(calls[number]))
        vectors = np.empty((len(texts), 0), dtype=np.float32)
        for number, call in enumerate(calls):
            if vectors.shape[1] == 0:
                vectors = np.empty((len(texts), found[number].shape[1]), dtype=np.float32)
            vectors[call] = found[number]
        return vectors

    def _here(self, texts: list[str]) -> np.ndarray:
        return _run(self._torch, self.tokens, self.pipeline, texts)


IN_FLIGHT_PER_WORKER = 4
"""Calls handed to each worker process ahead, so that it never waits between two: this process
hands out more only between two calls of its own."""


def _tell(done: Callable[[int], object] | None, count: int) -> None:
    if done is not None:
        done(count)


def embed_call(task: tuple[LocalModel, list[str]]) -> np.ndarray:
    """What a worker process runs: one model call on texts of similar length."""
    import torch

    model, texts = task
    tokens, pipeline = _pipeline(model)
    return _run(torch, tokens, pipeline, texts)


def _run(torch: Any, tokens: ModelTokens, pipeline: Any, texts: list[str]) -> np.ndarray:
    feed = model_feed(tokens(texts), WIDTH_STEP)
    tensors = {name: torch.from_numpy(values) for name, values in feed.items()}
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        return np.asarray(pipeline(**tensors).float().numpy(), dtype=np.float32)


@functools.lru_cache(maxsize=1)
def _pipeline(model: LocalModel) -> tuple[ModelTokens, Any]:
    """The model in a worker process, loaded once; one thread, as the other cores run the other
    workers and the building process."""
    import torch

    torch.set_num_threads(1)
    return _load_pipeline(model)


def _load_pipeline(model: LocalModel) -> tuple[ModelTokens, Any]:
    from transformers import AutoModel

    transformer = AutoModel.from_pretrained(str(model.directory), attn_implementation=ATTENTION)
    return ModelTokens(model), mean_pooled_transformer(transformer).eval()


@contextlib.contextmanager
def _one_thread(torch: Any) -> Iterator[None]:
    """torch's thread count, process-wide, at 1 while this process takes its share of the calls
    (the workers run on the other cores), then back to what it was."""
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
    """This process's bfloat16 vectors of ``sample`` against float32 (workers run the same code
    on the same model; the check does not wait for them to start)."""
    with _one_thread(encoder._torch):
        reduced = normalise(encoder._here(sample))
    full = normalise(fp32.encode(sample))
    return float(np.min(np.sum(reduced * full, axis=1)))
