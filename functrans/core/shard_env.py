"""The shard the calling thread runs, and the entry points of the SPMD runtime that runs them.

pmap and shard_map run one thread per shard (``transforms/parallel/runtime.py``). The
primitives that meet the runtime (shard_map's impl, the collectives, debug_callback) know no
backend, so what they need of it is here, below both: the calling thread's shard context (its
coordinates and the rendezvous where shards meet; None outside SPMD execution) and the
runtime's functions, which ``transforms/parallel/runtime.py`` installs at its import (as the
primitives install ``transforms.ops`` for the interpreters)::

    >>> current_shard() is None   # not inside a running pmap/shard_map
    True
"""
from __future__ import annotations

import threading
from typing import Callable


class _Current(threading.local):
    shard = None  # a transforms.parallel.runtime.ShardContext while a shard runs


_current = _Current()


def current_shard():
    """The shard the calling thread is running (None outside pmap/shard_map execution)."""
    return _current.shard


def enter_shard(ctx):
    """Make ``ctx`` the calling thread's shard (None: none); returns the one it replaces."""
    prev = _current.shard
    _current.shard = ctx
    return prev


def _not_installed(*args, **kwargs):
    raise RuntimeError("no SPMD runtime is installed: functrans.transforms.parallel.runtime "
                       "installs it when it is imported (import functrans does)")


# shard_contexts(mesh) -> (contexts of this process's shards of ``mesh``, their global indices)
shard_contexts: Callable = _not_installed
# run_shards(n, fn, contexts) -> [fn(i) for i < n], each shard on its own thread, in order
run_shards: Callable = _not_installed
# collective(name, args, params) -> outputs of collective ``name`` for the calling thread's shard
collective: Callable = _not_installed

_NAMES = ("shard_contexts", "run_shards", "collective")


def install(**fns: Callable) -> None:
    """Called once by transforms/parallel/runtime.py with the functions above."""
    unknown = set(fns) - set(_NAMES)
    if unknown:
        raise TypeError(f"unknown SPMD runtime functions: {sorted(unknown)}")
    globals().update(fns)
