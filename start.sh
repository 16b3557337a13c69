#!/usr/bin/env bash
# Sets everything up and starts the assistant: `rasa train` + `rasa shell` with a Rasa Pro licence,
# otherwise the licence-free console chat on the same knowledge base and the same plugin.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True
# shellcheck disable=SC1091
. .venv/bin/activate
if [ -n "${RASA_LICENSE:-}" ]; then
  rasa train
  exec rasa shell
fi
cat <<'MSG'
RASA_LICENSE is not set: `rasa train` and `rasa shell` need a Rasa Pro licence (the free developer
edition is enough, see README.md). Starting the console chat instead: it runs the same
MyVectorStore on the same knowledge base and endpoints.yml.
MSG
python -m addons index
exec python -m addons chat
