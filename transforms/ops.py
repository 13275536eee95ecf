"""The few array operations the interpreters themselves need (zeros for symbolic-zero
tangents, accumulation of cotangents, moving/broadcasting batch axes, select), and the
collectives the SPMD partitioner (``transforms/partition``) writes into per-shard programs.

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
# The partitioner's collectives (mesh axes: tuples of names, as its layouts hold them):
psum: Callable  # psum(xs, axes) -> [each x summed over axes] (one exchange for the list)
pmax: Callable  # pmax(x, axes)
pmin: Callable  # pmin(x, axes)
psum_scatter: Callable  # psum_scatter(x, axes, dimension): reduce-scatter, tiled
all_gather: Callable  # all_gather(x, axis_name, dimension): tiled
axis_index: Callable  # axis_index(name) -> this shard's int32 position along the axis
dynamic_slice_in_dim: Callable  # dynamic_slice_in_dim(x, start, size, dimension)
# basis_block(total, start, aval): columns start..start+size of the identity of size total,
# shaped (total,) + aval.shape (jacobians' bases where a size is symbolic)
basis_block: Callable

_NAMES = ("zeros", "add_any", "convert", "broadcast", "moveaxis", "select", "reduce_sum",
          "psum", "pmax", "pmin", "psum_scatter", "all_gather", "axis_index",
          "dynamic_slice_in_dim", "basis_block")


def install(**fns: Callable) -> None:
    """Called once by functrans.primitives with the implementations above."""
    unknown = set(fns) - set(_NAMES)
    if unknown:
        raise TypeError(f"unknown interpreter ops: {sorted(unknown)}")
    globals().update(fns)
