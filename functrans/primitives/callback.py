"""``debug_callback``: call a Python function on values of a running program, for its effect.

It has no outputs and is never removed, merged or folded (``effectful``); jit runs it on the
host between compiled kernels; under vmap the callback sees each batch element in turn; under
differentiation it sees the primal values; in the shards of pmap/shard_map it is called for
every shard, in shard order::

    >>> ft.jit(lambda x: ft.debug.print("x = {}", x) or x + 1)(1.0)
    x = 1.0
    Array(2., dtype=float64, weak_type=True)
"""
from __future__ import annotations

import numpy as np

from ..core.array import Array
from ..core.errors import ShardError
from ..core.shard_env import current_shard
from ..core.trace import Primitive, get_aval
from ..transforms.autodiff.jvp import jvp_rules
from ..transforms.batching import batching_rules
from ..core.tree import tree_unflatten
from . import structural as S


class Callback:
    """The user's function and how to rebuild its arguments from the flat operands."""

    __slots__ = ("fn", "in_tree")

    def __init__(self, fn, in_tree):
        self.fn, self.in_tree = fn, in_tree

    def __call__(self, flat):
        args, kwargs = tree_unflatten(self.in_tree, flat)
        self.fn(*args, **kwargs)

    def __repr__(self):
        return getattr(self.fn, "__name__", type(self.fn).__name__)


def _impl(*args, callback):
    vals = [Array._wrap(np.array(a), get_aval(a).weak_type) for a in args]
    shard = current_shard()
    if shard is None:
        callback(vals)
        return []
    # Every shard reaches the callback; one per process calls it for its shards, in order.
    everyone = shard.exchange(vals)
    if shard.local_index == 0:
        for g in range(len(everyone)):
            if _is_local(shard, g):
                try:
                    callback(everyone[g])
                except Exception as e:
                    raise ShardError(f"shard {g} raised {type(e).__name__}: {e}") from e
    return []


def _is_local(shard, g) -> bool:
    n_local = shard.rendezvous.n_local
    first = shard.global_index - shard.local_index
    return first <= g < first + n_local


debug_callback_p = Primitive("debug_callback", impl=_impl, abstract_eval=lambda *a, **p: [])
debug_callback_p.multiple_results = True
debug_callback_p.effectful = True
debug_callback_p.host_only = True


def _jvp(primals, tangents, *, callback):
    debug_callback_p.bind_all(*primals, callback=callback)
    return [], []


def _batch(axis, vals, dims, *, callback):
    for i in range(axis.size):
        row = []
        for v, d in zip(vals, dims):
            if d is None:
                row.append(v)
                continue
            shape = get_aval(v).shape
            start = [0] * len(shape)
            start[d] = i
            limit = list(shape)
            limit[d] = i + 1
            piece = S.slice_p.bind1(v, start_indices=tuple(start), limit_indices=tuple(limit),
                                    strides=None)
            row.append(S.squeeze_p.bind1(piece, dimensions=(d,)))
        debug_callback_p.bind_all(*row, callback=callback)
    return [], []


jvp_rules[debug_callback_p] = _jvp
batching_rules[debug_callback_p] = _batch
