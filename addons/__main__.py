"""``python -m addons``: the plugin's licence-free console, run in this assistant's folder."""

import sys

from rasa_context_retrieval.console import main

sys.exit(main(prog="python -m addons"))
