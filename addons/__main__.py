"""``python -m addons``: the licence-free console (see :mod:`addons.console`)."""

import sys

from addons.console import main

sys.exit(main())
