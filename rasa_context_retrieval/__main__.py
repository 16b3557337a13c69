"""``python -m rasa_context_retrieval``: the licence-free console (see :mod:`.console`)."""

import sys

from rasa_context_retrieval.console import main

sys.exit(main(prog="python -m rasa_context_retrieval"))
