"""Collectives over named axes (``vmap(axis_name=...)`` / ``pmap``), with JAX's signatures.

    >>> ft.vmap(lambda x: x / lax.psum(x, "batch"), axis_name="batch")(fnp.array([1.0, 3.0]))
    Array([0.25, 0.75], dtype=float64)
"""
from __future__ import annotations

import operator

import numpy as np

from .. import primitives as P
from ..core import dtypes
from ..core.axis_env import axis_size as _axis_size
from ..core.trace import get_aval
from ..tree_util import tree_flatten, tree_map, tree_unflatten

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "axis_index",
           "ppermute", "pshuffle", "all_to_all", "axis_size"]


def _array(x):
    if type(x) in (bool, int, float, complex):
        return np.asarray(x, get_aval(x).dtype)[()]
    return x


def _names(axis_name):
    return tuple(axis_name) if isinstance(axis_name, list) else axis_name


def psum(x, axis_name):
    """Sum of ``x`` over every member of the named axis (pytrees too).

    >>> ft.vmap(lambda x: lax.psum(x, "i"), axis_name="i")(fnp.arange(3))
    Array([3, 3, 3], dtype=int64)
    """
    leaves, tree = tree_flatten(x)
    if not leaves:
        return x
    # One psum for the whole pytree: on devices, one exchange between the shards.
    sums = P.psum_p.bind(*map(_array, leaves), axis_name=_names(axis_name))
    return tree_unflatten(tree, sums)


def pmean(x, axis_name):
    """Mean of ``x`` over the named axis."""
    n = _axis_size(_names(axis_name))

    def mean(s):
        if get_aval(s).dtype.kind != "f":
            s = P.convert_element_type_p.bind1(s, new_dtype=dtypes.default_float_dtype(),
                                               weak_type=False)
        return P.div_p.bind1(s, np.asarray(n, get_aval(s).dtype)[()])
    return tree_map(mean, psum(x, axis_name))


def pmax(x, axis_name):
    """Maximum of ``x`` over the named axis."""
    name = _names(axis_name)
    return tree_map(lambda v: P.pmax_p.bind1(_array(v), axis_name=name), x)


def pmin(x, axis_name):
    """Minimum of ``x`` over the named axis."""
    name = _names(axis_name)
    return tree_map(lambda v: P.pmin_p.bind1(_array(v), axis_name=name), x)


def all_gather(x, axis_name, *, axis=0, tiled=False):
    """Every member's ``x`` stacked along ``axis`` (concatenated if ``tiled``).

    >>> ft.vmap(lambda x: lax.all_gather(x, "i"), axis_name="i")(fnp.arange(2))
    Array([[0, 1],
           [0, 1]], dtype=int64)
    """
    def gather(v):
        v = _array(v)
        nd = get_aval(v).ndim + (0 if tiled else 1)
        ax = operator.index(axis)
        if not -nd <= ax < nd:
            raise ValueError(f"all_gather: axis {axis} out of range for rank {nd}")
        return P.all_gather_p.bind1(v, axis_name=axis_name, axis=ax % nd, tiled=bool(tiled))
    return tree_map(gather, x)


def psum_scatter(x, axis_name, *, scatter_dimension=0, tiled=False):
    """Sum over the axis, each member keeping its slice ``scatter_dimension`` (reduce-scatter)."""
    def scatter(v):
        v = _array(v)
        nd = get_aval(v).ndim
        return P.psum_scatter_p.bind1(v, axis_name=axis_name,
                                      scatter_dimension=operator.index(scatter_dimension) % nd,
                                      tiled=bool(tiled))
    return tree_map(scatter, x)


def axis_index(axis_name):
    """This member's position along the named axis (int32).

    >>> ft.vmap(lambda x: lax.axis_index("i"), axis_name="i")(fnp.zeros(3))
    Array([0, 1, 2], dtype=int32)
    """
    return P.axis_index_p.bind1(axis_name=axis_name)


def axis_size(axis_name):
    """The size of the named axis (a Python int)."""
    return _axis_size(axis_name)


def ppermute(x, axis_name, perm):
    """Send ``x`` from member ``src`` to member ``dst`` for each ``(src, dst)`` in ``perm``;
    members nobody sends to receive zeros."""
    perm = tuple((int(s), int(d)) for s, d in perm)
    n = _axis_size(axis_name)
    srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ValueError(f"ppermute: perm {perm} repeats a source or destination")
    if any(not 0 <= i < n for i in srcs + dsts):
        raise ValueError(f"ppermute: perm {perm} refers to members outside axis size {n}")
    return tree_map(lambda v: P.ppermute_p.bind1(_array(v), axis_name=axis_name, perm=perm), x)


def pshuffle(x, axis_name, perm):
    """Member ``i`` receives ``x`` from member ``perm[i]``."""
    return ppermute(x, axis_name, [(s, d) for d, s in enumerate(perm)])


def all_to_all(x, axis_name, split_axis, concat_axis, *, tiled=False):
    """Split ``split_axis`` into one chunk per member, exchange chunks, and concatenate (tiled)
    or stack (untiled) what each member receives along ``concat_axis``."""
    def a2a(v):
        v = _array(v)
        nd = get_aval(v).ndim
        return P.all_to_all_p.bind1(v, axis_name=axis_name, split_axis=split_axis % nd,
                                    concat_axis=concat_axis % nd, tiled=bool(tiled))
    return tree_map(a2a, x)
