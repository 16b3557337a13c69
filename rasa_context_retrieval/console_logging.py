"""Where the console's log events go: stderr, and only warnings unless ``--verbose``.

The console is an application, so it (and only it) configures logging; the library modules just
emit structlog events, and inside Rasa it is Rasa's ``--debug``/``LOG_LEVEL`` that decides what
shows. Stdout stays for what the user asked for (the answer, or the JSON object of ``ask
--json``), so it can be piped.

Quiet means: no debug events, no Hugging Face progress bars, and none of LiteLLM's start-up
chatter (its "This model isn't mapped yet" lookup is a debug event of Rasa's LLM helpers, and
LiteLLM's own stdlib logger is held at warnings).
"""

from __future__ import annotations

import logging
import os
import sys

import structlog

QUIET_LEVEL = logging.WARNING
VERBOSE_LEVEL = logging.DEBUG
STDLIB_LEVEL = logging.WARNING
LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
"""LiteLLM's handler writes records below WARNING to *stdout*, which would break ``--json``; its
loggers stay at warnings even with ``--verbose`` (LiteLLM's own ``LITELLM_LOG`` is for more)."""
SELF_DEBUGGING_LOGGERS = ("bm25s",)
"""Libraries that set their own logger to DEBUG when imported ("Building index..." on every
build); held at warnings like every other third-party logger."""


def configure_console_logging(*, verbose: bool) -> None:
    """Send log lines to stderr: structlog events at debug level when ``verbose``, else warnings.

    Third-party stdlib loggers (FAISS's loader, LiteLLM, httpx) stay at warnings either way: the
    events worth reading on a search are the plugin's and Rasa's structlog events.
    """
    level = VERBOSE_LEVEL if verbose else QUIET_LEVEL
    if not verbose:
        # Read by huggingface_hub and transformers when they are imported (later, lazily).
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    logging.getLogger().setLevel(STDLIB_LEVEL)
    import bm25s  # noqa: F401  (imported first, so that its own DEBUG level is overridden)

    for name in LITELLM_LOGGERS + SELF_DEBUGGING_LOGGERS:
        logging.getLogger(name).setLevel(STDLIB_LEVEL)
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="%H:%M:%S"),
            structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty()),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=False,
    )
