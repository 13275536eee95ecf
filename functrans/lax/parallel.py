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
from ..core.values import varying_casts
from ..core.tree import tree_flatten, tree_map, tree_unflatten
from .parallel_groups import check_groups, grouped_reduce

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "axis_index",
           "ppermute", "pshuffle", "all_to_all", "pswapaxes", "axis_size", "pcast"]


def _array(x):
    if type(x) in (bool, int, float, complex):
        return np.asarray(x, get_aval(x).dtype)[()]
    return x


def _names(axis_name):
    return tuple(axis_name) if isinstance(axis_name, list) else axis_name


def psum(x, axis_name, *, axis_index_groups=None):
    """Sum of ``x`` over every member of the named axis (pytrees too); with
    ``axis_index_groups`` (lists of axis indices), over the members of each one's group.

    >>> ft.vmap(lambda x: lax.psum(x, "i"), axis_name="i")(fnp.arange(3))
    Array([3, 3, 3], dtype=int64)
    """
    if axis_index_groups is not None:
        return _grouped("add", x, axis_name, axis_index_groups)
    leaves, tree = tree_flatten(x)
    if not leaves:
        return x
    names = _names(axis_name)
    # A Python number is the same in every member: its sum is it times the axis size, a
    # Python number still (weak: psum(1, ax) / psum(1, ax) keeps float32 float32, as JAX).
    sums = [None if type(v) in (int, float, complex) else v for v in leaves]
    arrays = [v for v in sums if v is not None]
    # One psum for all arrays of the pytree: on devices, one exchange between the shards.
    summed = iter(P.psum_p.bind_all(*map(_array, arrays), axis_name=names) if arrays else ())
    size = None
    out = []
    for v, s in zip(leaves, sums):
        if s is None:
            if size is None:
                size = 1
                for n in (names if isinstance(names, tuple) else (names,)):
                    size *= _axis_size(n)
            out.append(v * size)
        else:
            out.append(next(summed))
    return tree_unflatten(tree, out)


def pmean(x, axis_name, *, axis_index_groups=None):
    """Mean of ``x`` over the named axis (over each member's group, with
    ``axis_index_groups``)."""
    n = _axis_size(_names(axis_name))
    if axis_index_groups is not None:
        n = len(check_groups("pmean", axis_index_groups, n)[0])

    def mean(s):
        if dtypes.kind(get_aval(s).dtype) != "f":
            s = P.convert_element_type_p.bind1(s, new_dtype=dtypes.default_float_dtype(),
                                               weak_type=False)
        return P.div_p.bind1(s, np.asarray(n, get_aval(s).dtype)[()])
    return tree_map(mean, psum(x, axis_name, axis_index_groups=axis_index_groups))


def pmax(x, axis_name, *, axis_index_groups=None):
    """Maximum of ``x`` over the named axis (over each member's group, with
    ``axis_index_groups``)."""
    if axis_index_groups is not None:
        return _grouped("max", x, axis_name, axis_index_groups)
    name = _names(axis_name)
    return tree_map(lambda v: P.pmax_p.bind1(_array(v), axis_name=name), x)


def pmin(x, axis_name, *, axis_index_groups=None):
    """Minimum of ``x`` over the named axis (over each member's group, with
    ``axis_index_groups``)."""
    if axis_index_groups is not None:
        return _grouped("min", x, axis_name, axis_index_groups)
    name = _names(axis_name)
    return tree_map(lambda v: P.pmin_p.bind1(_array(v), axis_name=name), x)


def _grouped(kind, x, axis_name, groups):
    return tree_map(lambda v: grouped_reduce(kind, _array(v), _names(axis_name), groups), x)


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


_PCAST_TO = ("varying", "unreduced", "reduced")


def pcast(x, axis_name, *, to: str):
    """``x`` (a pytree) cast over the named axes, JAX's ``lax.pcast``: ``to='varying'``
    (``pvary``) marks a value equal in every member as one that may differ (as a loop carry
    swapped with a varying one must be); ``to='unreduced'`` marks each member's value as its
    partial sum of the result (returned by a shard_map whose ``out_specs`` say
    ``unreduced``); ``to='reduced'`` marks a replicated value whose cotangent is unreduced.
    Values never change.

    functrans does not type values by how they vary inside ``shard_map`` (every value may
    differ between shards; cotangents of replicated inputs are summed where they enter, and
    unreduced results are summed where they are read), so the cast is the identity, and its
    derivative and batching are too.

        >>> ft.vmap(lambda v: lax.pcast(v, "i", to="varying"), axis_name="i")(fnp.arange(2.0))
        Array([0., 1.], dtype=float64)
    """
    if isinstance(axis_name, (set, frozenset)):
        raise TypeError(f"axis_name={axis_name} must be a tuple or a str. Got {axis_name}")
    axes = axis_name if isinstance(axis_name, tuple) else (axis_name,)
    if not axis_name:
        return x
    if to not in _PCAST_TO:
        raise ValueError(f"Got unexpected `to` value. Allowed `to` values are: {set(_PCAST_TO)}")
    for n in axes:
        _axis_size(n)  # a NameError listing the bound names for an unbound one
    if to != "varying":
        return tree_map(lambda v: v, x)

    def cast(v):
        for mark in varying_casts:  # (inside shard_map, typeof shows the axes)
            v = mark(v, axes)
        return v
    return tree_map(cast, x)


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


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
    """Split ``split_axis`` into one chunk per member, exchange chunks, and concatenate (tiled)
    or stack (untiled) what each member receives along ``concat_axis``. With
    ``axis_index_groups`` (equal-size lists of members covering the axis once) chunks are
    exchanged within each group only.

    >>> ft.vmap(lambda x: lax.all_to_all(x, "i", 0, 0), axis_name="i")(fnp.arange(4).reshape(2, 2))
    Array([[0, 2],
           [1, 3]], dtype=int64)
    """
    def a2a(v):
        v = _array(v)
        nd = get_aval(v).ndim
        split, concat = _axis_in(split_axis, nd, "split_axis"), _axis_in(concat_axis, nd,
                                                                        "concat_axis")
        size = get_aval(v).shape[split]
        group = (_axis_size(_names(axis_name)) if axis_index_groups is None
                 else len(axis_index_groups[0]) if axis_index_groups else 0)
        if tiled and size % max(group, 1):
            raise ValueError(f"The size of all_to_all split_axis ({size}) has to be divisible "
                             f"by the size of the named axis {axis_name} ({group})")
        if not tiled and size != group:
            raise ValueError("all_to_all requires the size of the mapped axis axis_name to "
                             "equal x.shape[split_axis], but they are "
                             f"{group} and {size} respectively.")
        if axis_index_groups is not None:
            return _grouped_all_to_all(v, axis_name, split, concat, axis_index_groups, tiled)
        return P.all_to_all_p.bind1(v, axis_name=axis_name, split_axis=split,
                                    concat_axis=concat, tiled=bool(tiled))
    return tree_map(a2a, x)


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
    """Swap the named (mapped) axis with the array axis ``axis``, whose size must equal the
    named axis' (or group's) size: member ``i`` gets ``x_j[..., i, ...]`` at index ``j``.

    >>> ft.vmap(lambda x: lax.pswapaxes(x, "i", 0), axis_name="i")(fnp.arange(4).reshape(2, 2))
    Array([[0, 2],
           [1, 3]], dtype=int64)
    """
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


def _axis_in(axis, ndim, what):
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"all_to_all: {what} {axis} is out of range for an array of rank "
                         f"{ndim}")
    return axis % ndim


def _group_tables(groups, n):
    """Each member's group (as a row of member indices) and its rank in it, checked as JAX
    checks ``axis_index_groups``."""
    groups = [[operator.index(i) for i in g] for g in groups]
    if not groups or any(len(g) != len(groups[0]) for g in groups):
        raise ValueError(f"axis_index_groups must all be the same size, got {groups}")
    if sorted(i for g in groups for i in g) != list(range(n)):
        raise ValueError(f"axis_index_groups must cover all indices exactly once, got "
                         f"{groups} for an axis of size {n}")
    members = np.zeros((n, len(groups[0])), np.int32)
    rank = np.zeros(n, np.int32)
    for g in groups:
        for r, i in enumerate(g):
            members[i], rank[i] = g, r
    return members, rank


def _grouped_all_to_all(v, axis_name, split, concat, groups, tiled):
    # all_to_all_p exchanges over the whole axis; within groups, each member gathers every
    # member's value and keeps its own chunk of its group's values (all_gather and
    # axis_index have every rule, so this transforms like the primitive would). The group's
    # rows are read with gather_p itself (lax is below functrans.numpy's take); the member
    # indices are in range, so no wrapping of negative indices is needed.
    from ..core.array import Array
    from . import ops
    members, rank = _group_tables(groups, _axis_size(_names(axis_name)))
    g = members.shape[1]
    me = axis_index(axis_name)
    row = ops.dynamic_index_in_dim(Array(members), me, 0, keepdims=False)
    my_rank = ops.dynamic_index_in_dim(Array(rank), me, 0, keepdims=False)
    mine = P.gather_p.bind1(all_gather(v, axis_name), row, axes=(0,), mode="fill",
                            fill_value=None)  # (g,) + v's shape: my group's values
    if tiled:
        chunk = get_aval(v).shape[split] // g
        pieces = ops.dynamic_slice_in_dim(mine, ops.mul(my_rank, np.int32(chunk)), chunk,
                                          split + 1)
    else:
        pieces = ops.dynamic_index_in_dim(mine, my_rank, split + 1, keepdims=False)
    nd = get_aval(pieces).ndim
    perm = list(range(1, nd))
    perm.insert(concat, 0)
    out = ops.transpose(pieces, tuple(perm))
    if tiled:
        s = get_aval(out).shape
        out = ops.reshape(out, s[:concat] + (s[concat] * s[concat + 1],) + s[concat + 2:])
    return out
