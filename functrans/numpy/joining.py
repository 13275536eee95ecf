"""Joining and splitting arrays with NumPy's names: concatenate, stack and the
v/h/d/column stacks, the split family, append, unstack and atleast_1d/2d/3d.

    >>> stack([fnp.zeros(2), fnp.ones(2)], axis=1).shape
    (2, 2)
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import lax
from ..core import dtypes
from ..core.shape_poly import as_dim
from ..core.trace import get_aval
from ._core import (asarray, check_arraylike, check_sequence_arraylike, convert, normalize_axis,
                    promote)
from .shape_ops import expand_dims, ndim, ravel, reshape

__all__ = ["concatenate", "concat", "stack", "unstack", "vstack", "hstack", "dstack",
           "column_stack", "row_stack", "split", "array_split", "hsplit", "vsplit", "dsplit",
           "append", "atleast_1d", "atleast_2d", "atleast_3d"]


def concatenate(arrays, axis=0, dtype=None):
    """Join arrays along an existing axis (``axis=None`` flattens first).

    >>> concatenate([fnp.zeros(2), fnp.ones(1)])
    Array([0., 0., 1.], dtype=float64)
    """
    for key in arrays:
        if getattr(key, "_is_key_array", False):  # typed PRNG keys (random._keys: above numpy)
            return key._concatenate(list(arrays), axis)
    check_sequence_arraylike("concatenate", arrays)
    arrays = [asarray(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    nd = get_aval(arrays[0]).ndim
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    if any(get_aval(a).ndim != nd for a in arrays):
        raise ValueError("all the input arrays must have the same number of dimensions, got "
                         + ", ".join(get_aval(a).str_short() for a in arrays))
    axis = normalize_axis(axis, nd)
    s0 = get_aval(arrays[0]).shape
    for i, a in enumerate(arrays[1:], 1):
        s = get_aval(a).shape
        for d in range(nd):
            if d != axis and s[d] != s0[d]:
                raise ValueError(
                    "fnp.concatenate: all the input array dimensions except for the "
                    f"concatenation axis {axis} must match exactly, but along dimension {d}, the "
                    f"array at index 0 has size {s0[d]} and the array at index {i} has size "
                    f"{s[d]} (shapes {s0} and {s})")
    arrays = promote(*arrays)
    if dtype is not None:
        arrays = [convert(a, dtypes.canonicalize_dtype(dtype)) for a in arrays]
    return lax.concatenate(arrays, axis)


concat = concatenate


def stack(arrays, axis=0, out=None, dtype=None):
    """Join arrays along a new axis.

    >>> stack([fnp.zeros(3), fnp.ones(3)]).shape
    (2, 3)
    """
    for key in arrays:
        if getattr(key, "_is_key_array", False):  # typed PRNG keys (random._keys: above numpy)
            return key._stack(list(arrays), axis)
    check_sequence_arraylike("stack", arrays)
    arrays = [asarray(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    shapes = {get_aval(a).shape for a in arrays}
    if len(shapes) > 1:
        raise ValueError(f"all input arrays must have the same shape, got {sorted(shapes)}")
    axis = normalize_axis(axis, get_aval(arrays[0]).ndim + 1)
    return concatenate([expand_dims(a, axis) for a in arrays], axis, dtype)


def unstack(x, /, *, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple.

    >>> [a.tolist() for a in unstack(fnp.array([[1, 2], [3, 4]]))]
    [[1, 2], [3, 4]]
    """
    check_arraylike("unstack", x)
    x = asarray(x)
    axis = normalize_axis(axis, get_aval(x).ndim)
    return tuple(lax.index_in_dim(x, i, axis, keepdims=False)
                 for i in range(get_aval(x).shape[axis]))


def atleast_1d(*arys):
    """The inputs as arrays of at least one dimension.

    >>> atleast_1d(3.0)
    Array([3.], dtype=float64, weak_type=True)
    """
    check_arraylike("atleast_1d", *arys)
    out = [asarray(a) if get_aval(asarray(a)).ndim >= 1 else reshape(a, (1,)) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    """The inputs as arrays of at least two dimensions (1-d ones become rows).

    >>> atleast_2d(fnp.array([1, 2])).shape
    (1, 2)
    """
    check_arraylike("atleast_2d", *arys)
    out = []
    for a in arys:
        a = asarray(a)
        nd = get_aval(a).ndim
        out.append(a if nd >= 2 else reshape(a, (1,) * (2 - nd) + get_aval(a).shape))
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys):
    """The inputs as arrays of at least three dimensions.

    >>> atleast_3d(fnp.array([1, 2])).shape
    (1, 2, 1)
    """
    check_arraylike("atleast_3d", *arys)
    out = []
    for a in arys:
        a = asarray(a)
        s = get_aval(a).shape
        if len(s) == 0:
            a = reshape(a, (1, 1, 1))
        elif len(s) == 1:
            a = reshape(a, (1, s[0], 1))
        elif len(s) == 2:
            a = reshape(a, s + (1,))
        out.append(a)
    return out[0] if len(out) == 1 else out


def vstack(tup, dtype=None):
    """Stack arrays row-wise (1-d arrays become rows).

    >>> vstack([fnp.array([1, 2]), fnp.array([3, 4])])
    Array([[1, 2],
           [3, 4]], dtype=int64)
    """
    check_sequence_arraylike("vstack", tup)
    return concatenate([atleast_2d(a) for a in tup], 0, dtype)


row_stack = vstack


def hstack(tup, dtype=None):
    """Stack arrays column-wise (along axis 1, or 0 for 1-d arrays).

    >>> hstack([fnp.array([1, 2]), fnp.array([3])])
    Array([1, 2, 3], dtype=int64)
    """
    check_sequence_arraylike("hstack", tup)
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, 0 if get_aval(arrs[0]).ndim == 1 else 1, dtype)


def dstack(tup, dtype=None):
    """Stack arrays along the third axis (as at least 3-d arrays).

    >>> dstack([fnp.ones((2, 2)), fnp.zeros((2, 2))]).shape
    (2, 2, 2)
    """
    check_sequence_arraylike("dstack", tup)
    return concatenate([atleast_3d(a) for a in tup], 2, dtype)


def column_stack(tup):
    """Stack 1-d arrays as columns (2-d arrays as they are).

    >>> column_stack([fnp.array([1, 2]), fnp.array([3, 4])])
    Array([[1, 3],
           [2, 4]], dtype=int64)
    """
    check_sequence_arraylike("column_stack", tup)
    arrs = []
    for a in tup:
        a = asarray(a)
        arrs.append(reshape(a, (-1, 1)) if get_aval(a).ndim < 2 else a)
    return concatenate(arrs, 1)


def _split_points(n, indices_or_sections, strict):
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise ValueError("number sections must be larger than 0")
        if strict and n % k:
            raise ValueError("array split does not result in an equal division")
        q, r = divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
        return list(np.cumsum([0] + sizes))
    pts = [builtins.min(builtins.max(int(i) if i >= 0 else int(i) + n, 0), n)
           for i in indices_or_sections]
    return [0] + pts + [n]


def split(ary, indices_or_sections, axis=0):
    """Split into equal sections or at ``indices``.

    >>> [a.tolist() for a in split(fnp.arange(4), 2)]
    [[0, 1], [2, 3]]
    """
    check_arraylike("split", ary)
    return _split(ary, indices_or_sections, axis, strict=True)


def array_split(ary, indices_or_sections, axis=0):
    """Like :func:`split` but allows unequal sections.

    >>> [a.tolist() for a in array_split(fnp.arange(5), 2)]
    [[0, 1, 2], [3, 4]]
    """
    check_arraylike("array_split", ary)
    return _split(ary, indices_or_sections, axis, strict=False)


def _split(ary, indices_or_sections, axis, strict):
    a = asarray(ary)
    s = get_aval(a).shape
    axis = normalize_axis(axis, len(s))
    pts = _split_points(s[axis], indices_or_sections, strict)
    return [lax.slice_in_dim(a, as_dim(lo), as_dim(builtins.max(lo, hi)), 1, axis)
            for lo, hi in zip(pts[:-1], pts[1:])]


def hsplit(ary, indices_or_sections):
    """Split along axis 1 (axis 0 for 1-d arrays).

    >>> [a.shape for a in hsplit(fnp.ones((2, 4)), 2)]
    [(2, 2), (2, 2)]
    """
    check_arraylike("hsplit", ary)
    return split(ary, indices_or_sections, 0 if ndim(ary) == 1 else 1)


def vsplit(ary, indices_or_sections):
    """Split along axis 0.

    >>> [a.shape for a in vsplit(fnp.ones((4, 2)), 2)]
    [(2, 2), (2, 2)]
    """
    check_arraylike("vsplit", ary)
    return split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    """Split along axis 2.

    >>> [a.shape for a in dsplit(fnp.ones((1, 1, 4)), [1])]
    [(1, 1, 1), (1, 1, 3)]
    """
    check_arraylike("dsplit", ary)
    return split(ary, indices_or_sections, 2)


def append(arr, values, axis=None):
    """``values`` appended to ``arr`` along ``axis`` (both flattened when None).

    >>> append(fnp.array([1, 2]), fnp.array([3, 4]))
    Array([1, 2, 3, 4], dtype=int64)
    """
    # As JAX: each argument is checked on its own (both errors say position 0).
    check_arraylike("append", arr)
    check_arraylike("append", values)
    arr, values = asarray(arr), asarray(values)
    values = convert(values, get_aval(values).dtype)  # NumPy makes arrays: no weak scalars
    if axis is None:
        return concatenate([ravel(arr), ravel(values)])
    return concatenate([arr, values], axis)
