"""The few array operations the interpreters themselves need (zeros for symbolic-zero
tangents, accumulation of cotangents, moving/broadcasting batch axes, select).

Interpreters sit below the primitive families in the import order, so the primitives package
installs these functions at import time (:func:`install`); interpreters call them as
``ops.zeros(aval)``. This keeps imports flowing one way: core <- transforms <- primitives.
"""
from __future__ import annotations

from typing import Callable

zeros: Callable  # zeros(aval) -> array of that type
add_any: Callable  # add_any(x, y) -> x + y (cotangent/tangent accumulation)
convert: Callable  # convert(x, dtype, weak_type=False) -> x as dtype
broadcast: Callable  # broadcast(x, shape, broadcast_dimensions) -> broadcast_in_dim
moveaxis: Callable  # moveaxis(x, src, dst)
select: Callable  # select(pred, on_true, on_false) with pred broadcastable
reduce_sum: Callable  # reduce_sum(x, axes)

_NAMES = ("zeros", "add_any", "convert", "broadcast", "moveaxis", "select", "reduce_sum")


def install(**fns: Callable) -> None:
    """Called once by functrans.primitives with the implementations above."""
    unknown = set(fns) - set(_NAMES)
    if unknown:
        raise TypeError(f"unknown interpreter ops: {sorted(unknown)}")
    globals().update(fns)
