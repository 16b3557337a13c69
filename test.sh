#!/usr/bin/env bash
# Sets up (if needed), then lints, type-checks and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy rasa_context_retrieval addons
# -n auto: one worker per core; every Milvus test runs on one of them (tests/conftest.py).
exec .venv/bin/python -m pytest -n auto "$@"
