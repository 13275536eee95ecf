"""Work running in the background, and waiting for it (what ``block_until_ready`` does).

functrans computes synchronously, but ``jit`` compiles a new program's kernel on a background
thread while its first call runs on the interpreter (``transforms/jit/tiered.py``). Those
threads are tracked here, so that ``block_until_ready`` can wait until calls made after it run
compiled code (the JAX idiom before timing), whatever computed the arrays it was given: a jit
program, a ``pmap``, a gradient of a jit program.

    >>> wait_all()   # nothing in flight: returns at once
"""
from __future__ import annotations

import threading

_lock = threading.Lock()
_running: set = set()  # threads still working


def start(thread: threading.Thread) -> None:
    """Start ``thread`` and track it until it ends (it calls :func:`done` last)."""
    with _lock:
        _running.add(thread)
    thread.start()


def done(thread: threading.Thread) -> None:
    with _lock:
        _running.discard(thread)


def wait_all(timeout: float | None = None) -> None:
    """Block until every background thread running now has ended (it may start others)."""
    if not _running:  # the common case: one attribute check
        return
    with _lock:
        threads = list(_running)
    current = threading.current_thread()
    for thread in threads:
        if thread is not current:
            thread.join(timeout)
