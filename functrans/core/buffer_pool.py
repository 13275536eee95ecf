"""Result buffers of large collectives across processes, reused once nothing refers to them.

A fresh NumPy buffer of tens of megabytes is new memory from the kernel: MPI writing a
gathered or reduced result into it first faults in and zeroes every page, which made a 10M
float32 ``all_gather`` take 1.7x as long as ``Allgather`` into a buffer that already exists.
So collectives take their large outputs from here: a buffer is handed out again only when
no array refers to it any more (every NumPy view of it holds a reference to it, so its
reference count says so), which a loop that drops each step's results satisfies::

    >>> a = take((1 << 20,), np.float32)
    >>> b = take((1 << 20,), np.float32)   # a is alive: another buffer
    >>> np.shares_memory(a, b)
    False
    >>> address = a.__array_interface__["data"][0]
    >>> del a
    >>> take((1 << 20,), np.float32).__array_interface__["data"][0] == address
    True

It is in core because both the SPMD runtime's collectives across processes
(``transforms/parallel/mpi_buffers.py``) and shard_map's impl, which assembles the shards'
results (``primitives/shard_map.py``), take buffers from it.
"""
from __future__ import annotations

import math
import sys
import threading

import numpy as np

MIN_BYTES = 1 << 20  # smaller buffers come from the allocator's own free lists
MAX_BYTES = 1 << 30  # buffers kept in all (in use or not); the oldest are let go beyond it
_PER_SIZE = 4  # buffers kept per size (results of a few steps alive at once)

_lock = threading.Lock()
_pooled: dict = {}  # size in bytes -> owning uint8 arrays, oldest first
_held = [0]  # bytes in _pooled


def take(shape, dtype) -> np.ndarray:
    """An uninitialized C-contiguous array of ``shape`` and ``dtype`` (like ``np.empty``),
    reusing a pooled buffer of the same size that nothing refers to any more."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < MIN_BYTES:
        return np.empty(shape, dtype)
    with _lock:
        bases = _pooled.setdefault(nbytes, [])
        for base in bases:
            # Unused: referred to only by the pool's list, `base` and getrefcount's argument.
            if sys.getrefcount(base) == 3:
                break
        else:
            base = np.empty(nbytes, np.uint8)
            bases.append(base)
            _held[0] += nbytes
            _trim(bases)
        return base.view(dtype).reshape(shape)


def _trim(newest) -> None:
    """Let go of the oldest buffers beyond the limits (those in use stay with their users)."""
    while len(newest) > _PER_SIZE:
        _held[0] -= newest.pop(0).nbytes
    while _held[0] > MAX_BYTES:
        size = next(s for s, bases in _pooled.items() if bases)
        _held[0] -= _pooled[size].pop(0).nbytes
        if not _pooled[size]:
            del _pooled[size]


def clear() -> None:
    """Let go of every pooled buffer (arrays using one keep it)."""
    with _lock:
        _pooled.clear()
        _held[0] = 0
