"""``debug.callback`` and ``debug.print``: the program's values passed to a host function
(bound as the ``debug_callback`` primitive, which every interpreter keeps: eagerly, under jit,
vmap (once per batch element), grad (on primal values), control flow and in the shards of
pmap/shard_map).

    >>> ft.jit(lambda x: ft.debug.print("x+1={}", x + 1))(fnp.arange(2))
    x+1=[1 2]
"""
from __future__ import annotations

import sys

import numpy as np

from ..core.tree import tree_flatten
from ..primitives.callback import Callback, debug_callback_p

__all__ = ["callback", "print"]


def callback(fn, *args, ordered=False, **kwargs) -> None:
    """Call ``fn(*args, **kwargs)`` with the concrete values of the array arguments, for its
    side effect (its return value is ignored).

    >>> seen = []
    >>> _ = ft.jit(lambda x: ft.debug.callback(seen.append, x) or x)(fnp.ones(2))
    >>> seen
    [Array([1., 1.], dtype=float64)]
    """
    if not callable(fn):
        raise TypeError(f"debug.callback: expected a callable, got {type(fn).__name__}")
    flat, in_tree = tree_flatten((args, kwargs))
    debug_callback_p.bind_all(*flat, callback=Callback(fn, in_tree))


def print(fmt: str, *args, ordered=False, **kwargs) -> None:  # noqa: A001 - JAX's name
    """Print ``fmt.format(*args, **kwargs)`` with the values the program computes.

    >>> ft.jit(lambda x: ft.debug.print("sum: {}", x.sum()))(fnp.arange(4))
    sum: 6
    """
    def show(*a, **k):
        a = [np.asarray(v) for v in a]
        k = {n: np.asarray(v) for n, v in k.items()}
        # One write per line: lines of several processes sharing a pipe stay whole.
        sys.stdout.write(fmt.format(*a, **k) + "\n")
        sys.stdout.flush()
    callback(show, *args, **kwargs)
