"""An ONNX export of a local sentence-transformers model, for embedding queries.

A query is one short text, so what it pays is per-call overhead, not arithmetic; onnxruntime on
one thread carries much less of it than torch for the same weights (bench/results/
query_embedding.md). The export is made from the model's own files, with no network, once, in a
child process (``export_process``): it is cached under ``index_path`` with a fingerprint of the
model files and the onnxruntime version, published atomically and built under a file lock, so many
workers starting together export it once and a restart reuses it.

The graph reproduces the model's sentence-transformers pipeline (Transformer, mean pooling; the
caller normalises), and the tokenizer is the model folder's own fast tokenizer with the same
maximum length and truncation. Whether the result really equals Rasa's client is not assumed
here: :mod:`rasa_context_retrieval.query_embedding.embedder` checks it before use.

torch, transformers and onnxruntime are imported inside the functions that need them, so nothing
here slows the start of a process that never takes this path.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import threading
import uuid
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from filelock import FileLock

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.knowledge.fingerprints import settings_fingerprint
from rasa_context_retrieval.knowledge.model_integrity import file_sha256
from rasa_context_retrieval.query_embedding.length_groups import length_groups
from rasa_context_retrieval.workers import side_by_side

EXPORT_FOLDER = "query-model"
"""Under ``index_path``: the cached ONNX export of the embedding model (queries and chunks)."""
EXPORT_FORMAT = 2
"""Bump when the exported graph changes (wrapper, inputs, opset, attention): old exports are then
made again once; an index keeps its vectors (the export is not part of its fingerprint)."""
ATTENTION = "eager"
"""transformers' plain attention, traced op by op: its graph costs 15-19 % less CPU per chunk-sized
call than the SDPA one, and the same for a query (bench/results/embedding_graphs.md)."""
OPSET = 17
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "token_mean"
INTRA_OP_THREADS = 1
"""Concurrency comes from many searches at once (and batching), like FAISS's one thread."""
INTER_OP_THREADS = 1
SPINNING_ENTRY = "session.intra_op.allow_spinning"
LOCK_FILE = ".export.lock"
PIPELINE_PACKAGE = "sentence_transformers."
"""Module types are read by class name within this package: sentence-transformers 6 saves
``sentence_transformers.base.modules.transformer.Transformer`` where earlier releases saved
``sentence_transformers.models.Transformer``; both are the same pipeline step."""

_EXPORTING = threading.Lock()
"""One torch export at a time in this process (the file lock covers other processes)."""


class ExportUnavailable(ContextRetrievalError, RuntimeError):
    """This model cannot be run through the ONNX path; the message says why."""


@dataclass(frozen=True)
class LocalModel:
    """A local sentence-transformers folder whose pipeline this module can reproduce."""

    directory: Path
    max_seq_length: int
    do_lower_case: bool

    @classmethod
    def describe(cls, directory: Path) -> LocalModel:
        """Read the pipeline from the folder; ExportUnavailable unless Transformer + mean pool."""
        modules = _read_json(directory / "modules.json", "modules.json")
        kinds = [str(module.get("type")) for module in modules]
        steps = [_step(kind) for kind in kinds]
        if steps[:2] != ["Transformer", "Pooling"] or any(s != "Normalize" for s in steps[2:]):
            raise ExportUnavailable(f"pipeline {kinds} is not Transformer + Pooling (+ Normalize)")
        pooling = _read_json(directory / modules[1]["path"] / "config.json", "pooling config")
        modes = sorted(key for key, on in pooling.items() if key.startswith("pooling_mode_") and on)
        if modes != ["pooling_mode_mean_tokens"] and pooling.get("pooling_mode") != "mean":
            raise ExportUnavailable(f"pooling {modes or pooling.get('pooling_mode')} is not mean")
        if not (directory / "tokenizer.json").is_file():
            raise ExportUnavailable("the folder has no fast tokenizer (tokenizer.json)")
        settings = _read_json(directory / "sentence_bert_config.json", "sentence_bert_config")
        length = settings.get("max_seq_length")
        if not length:  # sentence-transformers 6 keeps it in the tokenizer's config instead
            tokenizer = _read_json(directory / "tokenizer_config.json", "tokenizer_config")
            length = tokenizer.get("model_max_length") or 512
        return cls(
            directory=directory,
            max_seq_length=int(length),
            do_lower_case=bool(settings.get("do_lower_case", False)),
        )

    def fingerprint(self) -> str:
        """Model files' digests + onnxruntime version + export format: what decides the export."""
        import onnxruntime

        files = sorted(p for p in self.directory.rglob("*") if p.is_file())
        payload = {
            "format": EXPORT_FORMAT,
            "opset": OPSET,
            "onnxruntime": onnxruntime.__version__,
            "files": {str(p.relative_to(self.directory)): file_sha256(p) for p in files},
        }
        return settings_fingerprint(payload, length=24)


def cached_export(
    model: LocalModel, cache_dir: Path, *, int8: bool = False, source: Path | None = None
) -> Path:
    """The export for ``model`` in ``cache_dir``: reused when present, made once otherwise.

    ``source``: the same export already made elsewhere (same fingerprint), linked instead
    (``_link_or_copy``).
    """
    fingerprint = model.fingerprint()
    fp32 = export_file(cache_dir, fingerprint, int8=False)
    wanted = export_file(cache_dir, fingerprint, int8=int8)
    if wanted.is_file():
        return wanted
    cache_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache_dir / LOCK_FILE)):
        for leftover in cache_dir.glob(".query-*.tmp"):  # from a process that died mid-export
            leftover.unlink(missing_ok=True)
        if wanted.is_file():  # another worker made it while we waited
            return wanted
        if source is not None:
            _publish(wanted, lambda target: _link_or_copy(source, target))
        else:
            if not fp32.is_file():
                _publish(fp32, lambda target: export_onnx(model, target))
            if int8:
                _publish(wanted, lambda target: quantize_int8(fp32, target))
        _remove_stale(cache_dir, fingerprint)
    return wanted


def export_file(cache_dir: Path, fingerprint: str, *, int8: bool) -> Path:
    return cache_dir / f"query-{fingerprint}{'-int8' if int8 else ''}.onnx"


def export_onnx(model: LocalModel, target: Path) -> None:
    """Export the model in a child process (``export_process``): it never holds this process's
    interpreter lock, so the event loop keeps its core while the export traces the model."""
    from rasa_context_retrieval.query_embedding.export_process import run_in_child

    run_in_child("fp32", model.directory, target)


def export_onnx_here(model: LocalModel, target: Path) -> None:
    """Export the Transformer + mean pooling graph with dynamic batch and sequence axes."""
    # torch's exporter keeps process-wide state, and transformers' lazy imports race: two
    # exports at once in one process failed the second. The file lock covers other processes.
    with _EXPORTING:
        _export_onnx(model, target)


def _export_onnx(model: LocalModel, target: Path) -> None:
    import torch
    from transformers import AutoModel

    transformer = AutoModel.from_pretrained(str(model.directory), attn_implementation=ATTENTION)
    wrapper = mean_pooled_transformer(transformer)
    wrapper.eval()
    sample = torch.ones((2, 8), dtype=torch.int64)
    inputs = {"input_ids": sample, "attention_mask": sample, "token_type_ids": sample * 0}
    axes = {name: {0: "batch", 1: "sequence"} for name in INPUT_NAMES}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer warnings about shape-dependent Python branches
        torch.onnx.export(
            wrapper,
            (),
            str(target),
            kwargs=inputs,  # by keyword: the model's positional order is not these names' order
            input_names=list(INPUT_NAMES),
            output_names=[OUTPUT_NAME],
            dynamic_axes={**axes, OUTPUT_NAME: {0: "batch"}},
            opset_version=OPSET,
            dynamo=False,
        )
    wrapper.eval()  # export restores the wrapper's earlier mode; dropout must stay off


def quantize_int8(source: Path, target: Path) -> None:
    """Quantize in a child process, like the export (``export_process``)."""
    from rasa_context_retrieval.query_embedding.export_process import run_in_child

    run_in_child("int8", source, target)


def quantize_int8_here(source: Path, target: Path) -> None:
    """Dynamic int8 weights (onnxruntime's quantizer): faster, with slightly different vectors."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8)


class ModelTokens:
    """The model folder's own fast tokenizer, with the model's maximum length and truncation,
    preparing each text as sentence-transformers does (stripped, lower case where the model
    says so)."""

    def __init__(self, model: LocalModel) -> None:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(model.directory / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=model.max_seq_length)
        tokenizer.no_padding()  # each call's texts are padded to its longest (``model_feed``)
        self.tokenizer = tokenizer
        self.lower_case = model.do_lower_case

    def __call__(self, texts: Sequence[str]) -> list[Any]:
        prepared = [text.strip() for text in texts]  # sentence-transformers strips each text
        if self.lower_case:
            prepared = [text.lower() for text in prepared]
        # One text at a time: ``encode_batch`` hands even two texts to the tokenizer's own thread
        # pool, and under load its threads wait for a core behind the model calls.
        return [self.tokenizer.encode(text) for text in prepared]


class OnnxQueryEncoder:
    """Tokenizer + onnxruntime session: texts in, unnormalised mean-pooled vectors out."""

    def __init__(self, model: LocalModel, onnx_path: Path) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = INTRA_OP_THREADS
        options.inter_op_num_threads = INTER_OP_THREADS
        # A waiting pool thread must not spin on a core the event loop needs.
        options.add_session_config_entry(SPINNING_ENTRY, "0")
        self.session = onnxruntime.InferenceSession(
            str(onnx_path), options, providers=["CPUExecutionProvider"]
        )
        self.tokens = ModelTokens(model)
        self.model = model
        self.path = onnx_path

    def encode(self, texts: Sequence[str], cores: int = 1) -> np.ndarray:
        """Unnormalised vectors of ``texts``; ``cores``: the cores free for this call."""
        encodings = self.tokens(texts)
        groups = length_groups([len(e.ids) for e in encodings], cores=cores)
        if not groups:
            return np.empty((0, 0), dtype=np.float32)
        # The groups are independent model calls, and onnxruntime releases the GIL.
        results = side_by_side(
            [functools.partial(self._run, [encodings[i] for i in group]) for group in groups]
        )
        vectors: list[np.ndarray] = [np.empty(0, dtype=np.float32)] * len(encodings)
        for group, found in zip(groups, results, strict=True):
            for index, vector in zip(group, found, strict=True):
                vectors[index] = vector
        return np.stack(vectors)

    def _run(self, encodings: Sequence[Any]) -> np.ndarray:
        """One model call; padding (id 0, masked out) to the group's longest text."""
        (vectors,) = self.session.run([OUTPUT_NAME], model_feed(encodings))
        return np.asarray(vectors, dtype=np.float32)


def model_feed(encodings: Sequence[Any], width_step: int = 1) -> dict[str, np.ndarray]:
    """The model's inputs for one call: every text padded (id 0, masked out) to the longest,
    rounded up to a multiple of ``width_step``."""
    width = -(-max(len(e.ids) for e in encodings) // width_step) * width_step
    feed = {name: np.zeros((len(encodings), width), dtype=np.int64) for name in INPUT_NAMES}
    for row, encoding in enumerate(encodings):
        used = len(encoding.ids)
        feed["input_ids"][row, :used] = encoding.ids
        feed["attention_mask"][row, :used] = encoding.attention_mask
        feed["token_type_ids"][row, :used] = encoding.type_ids
    return feed


def mean_pooled_transformer(transformer: Any) -> Any:
    """The transformer followed by sentence-transformers' mean pooling over real tokens.

    Defined on call so that importing this module does not import torch.
    """
    import torch

    class MeanPooledTransformer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.transformer(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    return MeanPooledTransformer()


def _publish(target: Path, write: Any) -> None:
    """Write to a unique temporary name beside ``target``, then rename: readers never see half."""
    staging = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        write(staging)
        os.replace(staging, target)
    finally:
        staging.unlink(missing_ok=True)


def _link_or_copy(source: Path, target: Path) -> None:
    """A hard link to ``source`` (no bytes written: the export is ~90 MB and every index folder of
    a process on the same model holds one), or a copy where linking fails (another device, a
    file system without links). Sharing the inode is safe: an export is only ever replaced
    whole (``_publish``), never written in place."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _remove_stale(cache_dir: Path, fingerprint: str) -> None:
    for path in cache_dir.glob("query-*.onnx"):
        if fingerprint not in path.name:
            path.unlink(missing_ok=True)


def _step(kind: str) -> str:
    """The pipeline step a module type names ("" for a type outside sentence-transformers)."""
    return kind.rsplit(".", 1)[-1] if kind.startswith(PIPELINE_PACKAGE) else ""


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ExportUnavailable(f"cannot read the model's {what} ({path}): {error}") from None
