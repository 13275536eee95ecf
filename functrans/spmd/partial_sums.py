"""``shard_map`` arguments and results ``unreduced`` over mesh axes (JAX 0.10.2's
``P(..., unreduced={'x'})`` in ``in_specs``/``out_specs``): each device's block is a partial
sum, the value their sum.

They cross the shard_map boundary as a stack of the partial values along a new leading
dimension split over the unreduced axes, so each shard gets (or gives) its own partial block
and every rule of the ``shard_map`` primitive (derivatives, batching, jit) applies
unchanged. A concrete unreduced array gives its devices' blocks; any other value is placed as
JAX places a value unreduced (whole on the first device along those axes, zeros on the
others). A concrete result becomes an ``UnreducedArray``; a traced one is the sum.

    >>> stack_names(P(None, unreduced={"y", "x"}), ("x", "y"))
    ('x', 'y')
"""
from __future__ import annotations

import math

import numpy as np

from functrans.core.array import Array
from functrans.core.mesh import NamedSharding, PartitionSpec, canonical_spec, shard_slices
from functrans.core.unreduced import UnreducedArray, from_blocks


def stack_names(spec, axis_names) -> tuple:
    """The unreduced axes of ``spec`` in mesh order (none: an ordinary spec)."""
    unreduced = getattr(spec, "unreduced", frozenset())
    return tuple(n for n in axis_names if n in unreduced)


def stacked_spec(spec, names) -> PartitionSpec:
    """The spec of the stack: its leading dimension split over ``names``."""
    return PartitionSpec(names, *spec)


def _coords(names, sizes):
    return list(np.ndindex(*(sizes[n] for n in names)))


def stack_argument(x, spec, names, mesh):
    """The partial values of ``x`` stacked along a new leading dimension."""
    sizes = mesh.shape
    count = math.prod(sizes[n] for n in names)
    if type(x) is UnreducedArray and set(names) == set(x.sharding.spec.unreduced):
        s = x.sharding
        part = canonical_spec(s.spec, x.ndim, "shard_map argument")
        stack = np.zeros((count,) + x.shape, x.dtype)
        for d, c in zip(s.mesh.devices.flat, s.mesh.coords()):
            u = int(np.ravel_multi_index([c[n] for n in names], [sizes[n] for n in names]))
            stack[(u,) + shard_slices(x.shape, part, c, s.mesh.shape)] = x._blocks[d]
        return Array(stack, x.weak_type)
    import functrans.numpy as fnp
    x = fnp.asarray(x)
    zeros = fnp.zeros((count - 1,) + x.shape, x.dtype)
    return fnp.concatenate([x[None], zeros]) if count > 1 else x[None]


def unstack_result(out, spec, names, mesh):
    """A result given as stacked partial values: an UnreducedArray of them (concrete) or
    their sum (traced)."""
    if type(out) is not Array:
        return out.sum(0)
    sizes = mesh.shape
    value = np.asarray(out)
    part = canonical_spec(spec, value.ndim - 1, "shard_map output")
    blocks = {}
    for d, c in zip(mesh.devices.flat, mesh.coords()):
        u = int(np.ravel_multi_index([c[n] for n in names], [sizes[n] for n in names]))
        blocks[d] = np.array(value[u][shard_slices(value.shape[1:], part, c, sizes)])
    return from_blocks(blocks, value.shape[1:], value.dtype, out.weak_type,
                       NamedSharding(mesh, spec))


__all__ = ["stack_argument", "stack_names", "stacked_spec", "unstack_result"]
