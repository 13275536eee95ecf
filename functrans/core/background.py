"""Work running in the background, and waiting for it (what ``block_until_ready`` does).

functrans computes synchronously, but ``jit`` compiles a new program's kernel on a background
thread while its first call runs on the interpreter (``transforms/jit/tiered.py``). Those
threads are tracked here, so that ``block_until_ready`` can wait until calls made after it run
compiled code (the JAX idiom before timing), whatever computed the arrays it was given: a jit
program, a ``pmap``, a gradient of a jit program; and so that ``os.fork`` waits for them.

    >>> wait_all()   # nothing in flight: returns at once
"""
from __future__ import annotations

import os
import threading

_lock = threading.Lock()
_running: set = set()  # threads still working
_fork_hooked = False


def start(thread: threading.Thread) -> None:
    """Start ``thread`` and track it until it ends (it calls :func:`done` last)."""
    global _fork_hooked
    with _lock:
        if not _fork_hooked:
            _fork_hooked = True
            # Registered now, after the modules a compile uses (logging, Numba): fork runs
            # the last registered "before" hook first, so this wait comes before logging
            # takes its lock, which a compile still running would need to finish.
            os.register_at_fork(before=wait_all, after_in_child=_after_fork_in_child)
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


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()
    _running.clear()  # (none left: the parent waited for them)


# A forked child has none of its parent's threads: a compile running there at the fork would
# never finish in the child (calls waiting for it would hang), and the locks it held (Numba's,
# LLVM's) would stay taken. So os.fork (multiprocessing's default start method on Linux) waits
# for background compiles first (the hook is registered by start()).
