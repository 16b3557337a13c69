"""What is alive once the knowledge search is open is moved out of the garbage collector's sight.

A Rasa process with this plugin holds a few million objects that live as long as the process:
the modules of Rasa, litellm, langchain and torch, the index and the models. CPython's full
(generation 2) collection visits every one of them while holding the interpreter lock, so no
thread runs meanwhile. A burst of 200 searches on the LLM path creates enough new objects to
start one, and it held the event loop for 0.5-1.5 s (bench/results/hardening.md).

``gc.freeze()`` moves every object alive at that moment to a permanent generation that
collections skip. Objects created later are collected as before; frozen objects are still freed
by reference counting when their last reference goes (a frozen reference cycle outlives its
use, which is why this happens once per process, after the first open, not at each refresh).
"""

from __future__ import annotations

import gc
import threading

import structlog

logger = structlog.get_logger()

_lock = threading.Lock()
_frozen = False


def freeze_long_lived_objects() -> bool:
    """Freeze what is alive now, the first time it is called in the process; True if it did."""
    global _frozen
    with _lock:
        if _frozen:
            return False
        gc.freeze()
        _frozen = True
    logger.debug("long_lived.freeze.done", frozen_objects=gc.get_freeze_count())
    return True
