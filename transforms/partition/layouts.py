"""How a value of a partitioned program is laid out over the mesh, and the collectives that
change a layout (bound through ``transforms.ops``, which the primitives install: the
partitioner sits below the user API, ``lax``).

A :class:`Layout` is a spec (per dimension, the tuple of mesh axes splitting it, as
``shard_map``'s canonical specs) and ``partial``: mesh axes over which the shards hold
*partial sums* still to be added (what a dot with a split contracting dimension leaves, so
that a consumer wanting the result split can reduce-scatter instead of all-reducing)::

    >>> Layout.replicated(2).spec
    ((), ())
    >>> local_shape((8, 6), (("x",), ()), {"x": 2})
    (4, 6)
"""
from __future__ import annotations

import math
from typing import NamedTuple

from .. import ops


class Layout(NamedTuple):
    spec: tuple  # per dimension: mesh axis names (major to minor)
    partial: tuple = ()  # mesh axes whose shards' values still have to be summed

    @staticmethod
    def replicated(ndim: int) -> "Layout":
        return Layout(((),) * ndim)

    def axes(self) -> set:
        return {n for names in self.spec for n in names} | set(self.partial)


def factor(names, sizes) -> int:
    return math.prod(sizes[n] for n in names)


def local_shape(shape, spec, sizes) -> tuple:
    """A shard's block shape of a global ``shape`` laid out as ``spec``."""
    return tuple(d // factor(names, sizes) for d, names in zip(shape, spec))


def divides(shape, spec, sizes) -> bool:
    return all(d % factor(names, sizes) == 0 for d, names in zip(shape, spec))


def used(spec) -> set:
    return {n for names in spec for n in names}


def block_number(names, sizes):
    """This shard's block number along a dimension split over ``names`` (traced int32)."""
    index = None
    for n in names:
        i = ops.axis_index(n)
        index = i if index is None else index * sizes[n] + i
    return index


def scatter_dimension(have: Layout, want: tuple, shape, sizes):
    """The dimension a value's partial sums are reduce-scattered along on the way to
    ``want`` (split over exactly their axes there and whole now), or None: all-reduced."""
    return next((d for d, names in enumerate(want)
                 if names == have.partial and not have.spec[d]
                 and shape[d] % factor(names, sizes) == 0), None)


def reshard(x, have: Layout, want: tuple, sizes):
    """``x`` (a shard's block laid out as ``have``) laid out as ``want`` (a spec, no partial
    sums): partial sums are reduce-scattered where ``want`` splits a dimension over exactly
    their axes and all-reduced otherwise; dimensions that lose axes are all-gathered, then
    those that gain axes are sliced (no communication)."""
    spec = list(have.spec)
    if have.partial:
        axes = have.partial
        target = scatter_dimension(have, want, x.shape, sizes)
        if target is not None:
            x = ops.psum_scatter(x, axes, target)
            spec[target] = axes
        else:
            x = ops.psum([x], axes)[0]
    for d, (h, w) in enumerate(zip(spec, want)):
        if h and h != w:
            x = ops.all_gather(x, h if len(h) > 1 else h[0], d)
            spec[d] = ()
    for d, (h, w) in enumerate(zip(spec, want)):
        if w and h != w:
            size = x.shape[d] // factor(w, sizes)
            start = block_number(w, sizes) * size
            x = ops.dynamic_slice_in_dim(x, start, size, d)
    return x
