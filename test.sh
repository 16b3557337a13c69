#!/usr/bin/env bash
# Sets up (if needed), then lints, type-checks and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True
# Bytecode is written, next to the sources (in __pycache__ folders git ignores), even where the
# environment says PYTHONDONTWRITEBYTECODE: pytest then keeps each test module's assert-rewritten
# bytecode and every later worker and run reuses it instead of rewriting all of them again (about
# 4 s of CPU per worker). Not a PYTHONPYCACHEPREFIX: Python would then ignore the installed
# packages' compiled files and compile some 7,000 modules again on a fresh clone's first run
# (24 s of CPU in each worker, measured in bench/results/test_suite.md).
unset PYTHONDONTWRITEBYTECODE
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy rasa_context_retrieval addons
# One worker per core, plus one: a worker on a Milvus test file mostly waits for the server
# (creating and loading collections), and the extra worker keeps the cores busy meanwhile. All
# workers share one Milvus server (tests/conftest.py, tests/milvus_server.py).
exec .venv/bin/python -m pytest -n "$(($(nproc) + 1))" "$@"
