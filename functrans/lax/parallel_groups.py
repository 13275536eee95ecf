"""``axis_index_groups`` of ``psum`` / ``pmean`` / ``pmax`` / ``pmin``: the reduction over
each member's group instead of the whole named axis. Every member gathers the axis
(``all_gather``) and reduces the rows of its own group (a row of a constant membership
matrix picked by ``axis_index``), so derivatives and batching are those of the collectives
and array operations it is made of.

    >>> ft.vmap(lambda x: grouped_reduce("add", x, "i", [[0, 1], [2, 3]]),
    ...         axis_name="i")(fnp.array([1.0, 2.0, 3.0, 4.0]))
    Array([3., 3., 7., 7.], dtype=float64)
"""
from __future__ import annotations

import operator

import numpy as np

from .. import primitives as P
from ..core import dtypes
from ..core.axis_env import axis_size
from ..core.trace import get_aval
from . import ops

__all__ = ["check_groups", "grouped_reduce"]


def check_groups(name: str, groups, size: int) -> list:
    """``groups`` as lists of ints, checked as JAX does: together they hold each index of the
    axis exactly once, and all have the same size.

        >>> check_groups("psum", [[1, 0], [3, 2]], 4)
        [[1, 0], [3, 2]]
    """
    try:
        groups = [[operator.index(i) for i in g] for g in groups]
    except TypeError:
        raise TypeError(f"{name}: axis_index_groups must be a list of lists of ints, got "
                        f"{groups!r}") from None
    if sorted(i for g in groups for i in g) != list(range(size)):
        raise ValueError(f"{name}: axis_index_groups must hold every index of the axis "
                         f"(0..{size - 1}) exactly once, got {groups}")
    if len({len(g) for g in groups}) > 1:
        raise ValueError(f"{name}: axis_index_groups must all have the same size, got {groups}")
    return groups


def _identity(kind, dtype):
    if kind == "add":
        return np.zeros((), dtype)
    if dtypes.kind(dtype) in "fc":
        return np.asarray(-np.inf if kind == "max" else np.inf, dtype)
    if dtypes.kind(dtype) == "b":
        return np.asarray(kind == "min", dtype)
    info = np.iinfo(dtype)
    return np.asarray(info.min if kind == "max" else info.max, dtype)


def grouped_reduce(kind: str, x, axis_name, groups):
    """``x`` reduced (``kind``: "add", "max" or "min") over the members of this member's
    group of ``axis_name``."""
    if isinstance(axis_name, (tuple, list)):
        raise NotImplementedError("axis_index_groups with several axis names is not "
                                  "supported: name one axis")
    size = axis_size(axis_name)
    groups = check_groups({"add": "psum", "max": "pmax", "min": "pmin"}[kind], groups, size)
    member = np.zeros((size, size), bool)
    for g in groups:
        member[np.ix_(g, g)] = True
    gathered = P.all_gather_p.bind1(x, axis_name=axis_name, axis=0, tiled=False)
    shape, dtype = get_aval(gathered).shape, get_aval(gathered).dtype
    row = ops.dynamic_index_in_dim(member, P.axis_index_p.bind1(axis_name=axis_name), 0,
                                   keepdims=False)
    keep = ops.broadcast_in_dim(row, shape, (0,))
    masked = ops.select(keep, gathered, ops.full_like(gathered, _identity(kind, dtype)))
    reduce = {"add": P.reduce_sum_p, "max": P.reduce_max_p, "min": P.reduce_min_p}[kind]
    return reduce.bind1(masked, axes=(0,))
