"""Sorting and searching: sort, argsort, lexsort, searchsorted, partition, nonzero, unique,
median, quantile, percentile.

Functions whose output shape depends on values (nonzero, unique, argwhere) need concrete
inputs, or a static ``size=`` under tracing, as in JAX::

    >>> argsort(fnp.array([3, 1, 2]))
    Array([1, 2, 0], dtype=int64)
"""
from __future__ import annotations

import math
import operator
from typing import NamedTuple

import numpy as np

from .. import lax
from .. import primitives as P
from ..core import dtypes
from ..core.array import Array
from ..core.shape_poly import DimExpr
from ..core.trace import get_aval
from ._core import asarray, check_arraylike, check_sequence_arraylike, convert, normalize_axis
from .shape_ops import ravel, reshape, where

__all__ = ["sort", "argsort", "lexsort", "searchsorted", "partition", "argpartition", "nonzero",
           "flatnonzero", "argwhere", "unique", "median", "quantile", "percentile",
           "nanmedian", "nanquantile", "nanpercentile", "msort", "sort_complex", "digitize",
           "bincount", "isin", "in1d", "unique_values", "unique_counts", "unique_inverse",
           "unique_all", "union1d", "intersect1d", "setdiff1d"]


def _axis_or_flat(a, axis):
    a = asarray(a)
    if axis is None:
        return ravel(a), 0
    return a, normalize_axis(axis, get_aval(a).ndim)


def sort(a, axis=-1, kind=None, order=None, *, stable=True, descending=False):
    """Sorted copy along ``axis`` (NaNs last; stable).

    >>> sort(fnp.array([3.0, fnp.nan, 1.0]))
    Array([ 1.,  3., nan], dtype=float64)
    """
    check_arraylike("sort", a)
    if order is not None:
        raise NotImplementedError("fnp.sort: order= (structured arrays) is not supported")
    a, axis = _axis_or_flat(a, axis)
    if get_aval(a).ndim == 0:
        return a
    out = lax.sort(a, axis, True, 1)
    return lax.rev(out, (axis,)) if descending else out


def argsort(a, axis=-1, kind=None, order=None, *, stable=True, descending=False):
    """Indices that sort ``a`` along ``axis`` (stable, NaNs last). ``descending=True`` gives
    the reverse order (NaNs first, as JAX) with ties still in input order.

    >>> argsort(fnp.array([2, 1, 2]), descending=True)
    Array([0, 2, 1], dtype=int64)
    """
    check_arraylike("argsort", a)
    if order is not None:
        raise NotImplementedError("fnp.argsort: order= is not supported")
    a, axis = _axis_or_flat(a, axis)
    aval = get_aval(a)
    idx = lax.broadcasted_iota(dtypes.default_int_dtype(), aval.shape, axis)
    if descending:
        # Reverse, stable sort, reverse back: ties keep their original order.
        a_rev = lax.rev(a, (axis,))
        _, perm = lax.sort((a_rev, lax.rev(idx, (axis,))), axis, True, 1)
        return lax.rev(perm, (axis,))
    _, perm = lax.sort((a, idx), axis, True, 1)
    return perm


def msort(a):
    """``sort(a, axis=0)``.

    >>> msort(fnp.array([[2, 1], [1, 3]])).tolist()
    [[1, 1], [2, 3]]
    """
    return sort(a, axis=0)


def sort_complex(a):
    """Sort by real part, then imaginary part; the result is complex, as in NumPy.

    >>> sort_complex(fnp.array([3.0, 1.0]))
    Array([1.+0.j, 3.+0.j], dtype=complex128)
    """
    check_arraylike("sort_complex", a)
    a = asarray(a)
    d = get_aval(a).dtype
    if dtypes.kind(d) != "c":
        # NumPy's rule: 8- and 16-bit integers give complex64, everything else complex128.
        small = dtypes.kind(d) in "iu" and d.itemsize <= 2
        a = convert(a, dtypes.canonicalize_dtype(dtypes.complex64 if small else
                                                 dtypes.complex128))
    return sort(a)


def lexsort(keys, axis=-1):
    """Indices sorting by ``keys[-1]`` first, then ``keys[-2]``, ... (NumPy's lexsort).

    >>> lexsort((fnp.array([1, 0, 2]), fnp.array([1, 1, 0])))
    Array([2, 1, 0], dtype=int64)
    """
    check_sequence_arraylike("lexsort", keys)
    keys = [asarray(k) for k in keys]
    aval = get_aval(keys[0])
    axis = normalize_axis(axis, aval.ndim)
    idx = lax.broadcasted_iota(dtypes.default_int_dtype(), aval.shape, axis)
    outs = lax.sort(tuple(keys[::-1]) + (idx,), axis, True, len(keys))
    return outs[-1]


def partition(a, kth, axis=-1):
    """``a`` partitioned around its ``kth`` smallest element along ``axis``: this returns the
    sorted copy, which is a valid partition for every ``kth``.

    >>> partition(fnp.array([3, 1, 2]), 1)[1]
    Array(2, dtype=int64)
    """
    check_arraylike("partition", a)
    _no_complex_partition("partition", a)
    return sort(a, axis)


def argpartition(a, kth, axis=-1):
    """Indices partitioning ``a`` around its ``kth`` element (the sorting indices).

    >>> argpartition(fnp.array([3, 1, 2]), 0)[0]
    Array(1, dtype=int64)
    """
    check_arraylike("argpartition", a)
    _no_complex_partition("argpartition", a)
    return argsort(a, axis)


def _no_complex_partition(name, a):
    # As in JAX (NumPy partitions them in its lexicographic order; so would sort here).
    if dtypes.kind(get_aval(asarray(a)).dtype) == "c":
        raise NotImplementedError(f"fnp.{name} for complex dtype is not implemented (as in "
                                  "JAX); fnp.sort/fnp.argsort order complex numbers")


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """Insertion points of ``v`` in sorted 1-D ``a`` (binary search, log2(n) gathers). NaN
    sorts after every number, as in :func:`sort` and NumPy.

    >>> searchsorted(fnp.array([1, 3, 5]), fnp.array([0, 3, 6]))
    Array([0, 1, 3], dtype=int64)
    """
    from ._core import promote
    check_arraylike("searchsorted", a, v)
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    a = asarray(a)
    if get_aval(a).ndim != 1:
        raise ValueError("searchsorted: a must be 1-D")
    if sorter is not None:
        from .indexing import take
        a = take(a, sorter, mode="clip")
    a, v = promote(a, asarray(v))
    n = get_aval(a).shape[0]
    idt = dtypes.default_int_dtype()
    lo = lax.full(get_aval(v).shape, 0, idt)
    hi = lax.full(get_aval(v).shape, n, idt)
    if side == "left":
        def goes_before(am):  # am < v
            return _nan_last_less(am, v)
    else:
        def goes_before(am):  # am <= v, i.e. not v < am
            return P.not_p.bind1(_nan_last_less(v, am))
    for _ in range(max(1, math.ceil(math.log2(n + 1)))):
        mid = P.div_p.bind1(P.add_p.bind1(lo, hi), np.asarray(2, idt)[()])
        safe = P.min_p.bind1(mid, np.asarray(max(n - 1, 0), idt)[()])
        am = P.gather_p.bind1(a, safe, axes=(0,), mode="clip", fill_value=None) if n else v
        go_right = P.and_p.bind1(goes_before(am), P.lt_p.bind1(mid, hi))
        lo = lax.select(go_right, P.add_p.bind1(mid, np.asarray(1, idt)[()]), lo)
        hi = lax.select(go_right, hi, mid)
    return lo


def _nan_last_less(x, y):
    """``x < y`` in the order that puts NaN after every number (and NaN == NaN); complex
    numbers by real part, then imaginary part, each in that order (:func:`sort`'s)."""
    from ._core import broadcast_operands
    x, y = broadcast_operands("searchsorted", [x, y], keep_scalars=False)
    if dtypes.kind(get_aval(x).dtype) == "c":
        (xr, xi), (yr, yi) = [(P.real_p.bind1(v), P.imag_p.bind1(v)) for v in (x, y)]
        same_r = P.not_p.bind1(P.or_p.bind1(_nan_last_less(xr, yr), _nan_last_less(yr, xr)))
        return P.or_p.bind1(_nan_last_less(xr, yr),
                            P.and_p.bind1(same_r, _nan_last_less(xi, yi)))
    less = P.lt_p.bind1(x, y)
    if dtypes.kind(get_aval(x).dtype) != "f":
        return less
    x_num = P.eq_p.bind1(x, x)
    y_nan = P.ne_p.bind1(y, y)
    return P.or_p.bind1(less, P.and_p.bind1(x_num, y_nan))


def digitize(x, bins, right=False):
    """Index of the bin of each ``x`` for monotonic ``bins`` (increasing or decreasing), as
    NumPy: ``bins[i-1] <= x < bins[i]`` (``<`` and ``<=`` swap with ``right=True``).

    >>> digitize(fnp.array([0.5, 1.0, 3.0]), fnp.array([0.0, 1.0, 2.0]))
    Array([1, 2, 3], dtype=int64)
    """
    from .indexing import _concrete
    check_arraylike("digitize", x, bins)
    bins = asarray(bins)
    if get_aval(bins).ndim != 1:
        raise ValueError("digitize: bins must be 1-D")
    n = get_aval(bins).shape[0]
    side = "left" if right else "right"
    b = _concrete(bins)
    if b is not None and b.size > 1:
        d = np.diff(b)
        if not ((d >= 0).all() or (d <= 0).all()):
            raise ValueError("digitize: bins must be monotonically increasing or decreasing")
    up = searchsorted(bins, x, side=side)
    down = P.sub_p.bind1(np.asarray(n, dtypes.default_int_dtype())[()],
                         searchsorted(lax.rev(bins, (0,)), x, side=side))
    if b is not None:
        return up if b.size < 2 or b[-1] >= b[0] else down
    if n < 2:
        return up
    # traced bins: which direction is only known at run time
    increasing = P.ge_p.bind1(lax.index_in_dim(bins, n - 1, keepdims=False),
                              lax.index_in_dim(bins, 0, keepdims=False))
    return where(increasing, up, down)


def _concrete_or_size(name, x, size):
    from .indexing import _concrete
    c = _concrete(x)
    if c is None and size is None:
        raise TypeError(f"fnp.{name}: the result's shape depends on the values of a traced "
                        f"array; pass a static size= (and fill_value=) to use it under "
                        "jit/vmap")
    return c


def nonzero(a, *, size=None, fill_value=None):
    """Indices of non-zero elements, one array per axis (``size=`` pads/truncates).

    >>> nonzero(fnp.array([0, 2, 0, 3]))
    (Array([1, 3], dtype=int64),)
    """
    check_arraylike("nonzero", a)
    a = asarray(a)
    aval = get_aval(a)
    c = _concrete_or_size("nonzero", a, size)
    if c is not None and size is None:
        return tuple(Array._wrap(np.asarray(i, dtypes.default_int_dtype())) for i in np.nonzero(c))
    # Static size: stable-sort positions so non-zero ones come first.
    flat = ravel(a)
    nz = flat if aval.dtype == dtypes.bool_ else P.ne_p.bind1(flat, np.asarray(0, aval.dtype)[()])
    idt = dtypes.default_int_dtype()
    pos = lax.iota(idt, aval.size)
    key = convert(P.not_p.bind1(nz), dtypes.int8)
    _, order = lax.sort((key, pos), 0, True, 1)
    count = P.reduce_sum_p.bind1(convert(nz, idt), axes=(0,))
    if size <= aval.size:
        order = lax.slice_in_dim(order, 0, size)
    else:
        order = lax.pad(order, np.asarray(0, idt)[()], [(0, size - aval.size, 0)])
    valid = P.lt_p.bind1(lax.iota(idt, size), count)
    outs = []
    strides = [math.prod(aval.shape[k + 1:]) for k in range(aval.ndim)]
    fills = (fill_value,) * aval.ndim if not isinstance(fill_value, tuple) else fill_value
    for k, (n, st) in enumerate(zip(aval.shape, strides)):
        coord = P.rem_p.bind1(P.div_p.bind1(order, np.asarray(st, idt)[()]), np.asarray(max(n, 1), idt)[()])
        fill = 0 if fills[k] is None else fills[k]
        outs.append(lax.select(valid, coord, lax.full((size,), fill, idt)))
    return tuple(outs)


def flatnonzero(a, *, size=None, fill_value=None):
    """Indices of the non-zero elements of ``ravel(a)``.

    >>> flatnonzero(fnp.array([[0, 1], [2, 0]]))
    Array([1, 2], dtype=int64)
    """
    check_arraylike("flatnonzero", a)
    return nonzero(ravel(a), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """Indices of non-zero elements as an (N, ndim) array (``size=`` pads/truncates N).

    >>> argwhere(fnp.array([[0, 1], [2, 0]]))
    Array([[0, 1],
           [1, 0]], dtype=int64)
    """
    from .shape_ops import stack
    check_arraylike("argwhere", a)
    a = asarray(a)
    if get_aval(a).ndim == 0:  # as NumPy: one row per true scalar, no columns
        rows = flatnonzero(a, size=size, fill_value=fill_value)
        return lax.full((get_aval(rows).shape[0], 0), 0, dtypes.default_int_dtype())
    cols = nonzero(a, size=size, fill_value=fill_value)
    return stack(cols, axis=1)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None):
    """Sorted unique values, optionally with first indices, inverse and counts.

    The result's length depends on the values, so without ``size=`` the input must be
    concrete. With a static ``size=`` (``axis=None`` only) it also works on traced input, as
    in JAX: the result is padded with ``fill_value`` (default: the smallest value), indices
    with the smallest value's index and counts with 0, or truncated.

    >>> unique(fnp.array([3, 1, 3]))
    Array([1, 3], dtype=int64)
    """
    check_arraylike("unique", ar)
    ar = asarray(ar)
    if size is None:
        c = _concrete_or_size("unique", ar, size)
        res = np.unique(c, return_index=return_index, return_inverse=return_inverse,
                        return_counts=return_counts, axis=axis, equal_nan=equal_nan)
        return tuple(asarray(r) for r in res) if isinstance(res, tuple) else asarray(res)
    if axis is not None:
        raise NotImplementedError("fnp.unique: size= is only supported with axis=None")
    return _unique_sized(ar, return_index, return_inverse, return_counts, equal_nan,
                         operator.index(size), fill_value)


def _unique_sized(ar, return_index, return_inverse, return_counts, equal_nan, size, fill_value):
    from .reductions import cumsum
    aval = get_aval(ar)
    flat = ravel(ar)
    n = aval.size
    if n == 0 and size and fill_value is None:
        raise ValueError("fnp.unique: an empty input with size > 0 needs a fill_value")
    idt = dtypes.default_int_dtype()
    values, perm = lax.sort((flat, lax.iota(idt, n)), 0, True, 1)
    # mask[i]: values[i] starts a new run of equal values
    if n:
        prev, cur = lax.slice_in_dim(values, 0, n - 1), lax.slice_in_dim(values, 1, n)
        new = P.ne_p.bind1(cur, prev)
        if equal_nan and dtypes.kind(aval.dtype) == "f":
            both_nan = P.and_p.bind1(P.ne_p.bind1(cur, cur), P.ne_p.bind1(prev, prev))
            new = P.and_p.bind1(new, P.not_p.bind1(both_nan))
        mask = lax.concatenate([lax.full((1,), True, dtypes.bool_), new], 0)
    else:
        mask = lax.full((0,), True, dtypes.bool_)
    # one start too many, padded with n, so counts are differences of neighbours
    starts_ext = nonzero(mask, size=size + 1, fill_value=n)[0]
    count = P.reduce_sum_p.bind1(convert(mask, idt), axes=(0,))
    valid = P.lt_p.bind1(lax.iota(idt, size), count)
    starts = where(valid, lax.slice_in_dim(starts_ext, 0, size), 0)
    from .indexing import take
    result = take(values, starts, mode="clip") if n else lax.full((size,), 0, aval.dtype)
    if fill_value is not None:
        result = where(valid, result, convert(asarray(fill_value), aval.dtype))
    outs = [result]
    if return_index:
        outs.append(take(perm, starts, mode="clip") if n else lax.full((size,), 0, idt))
    if return_inverse:
        run = P.sub_p.bind1(cumsum(convert(mask, idt)), np.asarray(1, idt)[()])
        inv = P.scatter_p.bind1(lax.full((n,), 0, idt), run, perm, axes=(0,), mode="drop")
        outs.append(reshape(inv, aval.shape))
    if return_counts:
        ends = lax.slice_in_dim(starts_ext, 1, size + 1)
        outs.append(where(valid, P.sub_p.bind1(ends, starts), 0))
    return outs[0] if len(outs) == 1 else tuple(outs)


def unique_values(x):
    """Sorted unique values (Array API name).

    >>> unique_values(fnp.array([2, 1, 2]))
    Array([1, 2], dtype=int64)
    """
    check_arraylike("unique_values", x)
    return unique(x)


class UniqueCountsResult(NamedTuple):
    values: Array
    counts: Array


class UniqueInverseResult(NamedTuple):
    values: Array
    inverse_indices: Array


class UniqueAllResult(NamedTuple):
    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


def unique_counts(x):
    """``(values, counts)`` of the unique values, as a named tuple (NumPy's field names).

    >>> unique_counts(fnp.array([2, 1, 2])).counts
    Array([1, 2], dtype=int64)
    """
    check_arraylike("unique_counts", x)
    return UniqueCountsResult(*unique(x, return_counts=True))


def unique_inverse(x):
    """``(values, inverse)``: ``values[inverse]`` rebuilds ``x``.

    >>> unique_inverse(fnp.array([2, 1, 2])).inverse_indices
    Array([1, 0, 1], dtype=int64)
    """
    check_arraylike("unique_inverse", x)
    return UniqueInverseResult(*unique(x, return_inverse=True))


def unique_all(x):
    """``(values, indices, inverse, counts)``.

    >>> unique_all(fnp.array([2, 1, 2])).indices
    Array([1, 0], dtype=int64)
    """
    check_arraylike("unique_all", x)
    return UniqueAllResult(*unique(x, return_index=True, return_inverse=True,
                                   return_counts=True))


def _concrete_set_op(name, fn, *arrays, **kw):
    from .indexing import _concrete
    vals = [_concrete(asarray(a)) for a in arrays]
    if any(v is None for v in vals):
        raise TypeError(f"fnp.{name} needs concrete inputs: its result's shape depends on values")
    return asarray(fn(*vals, **kw))


def union1d(ar1, ar2):
    """Sorted union of two arrays (concrete inputs).

    >>> union1d(fnp.array([1, 3]), fnp.array([2, 3]))
    Array([1, 2, 3], dtype=int64)
    """
    check_arraylike("union1d", ar1, ar2)
    return _concrete_set_op("union1d", np.union1d, ar1, ar2)


def intersect1d(ar1, ar2, assume_unique=False):
    """Sorted common values of two arrays (concrete inputs).

    >>> intersect1d(fnp.array([1, 3]), fnp.array([2, 3]))
    Array([3], dtype=int64)
    """
    check_arraylike("intersect1d", ar1, ar2)
    return _concrete_set_op("intersect1d", np.intersect1d, ar1, ar2, assume_unique=assume_unique)


def setdiff1d(ar1, ar2, assume_unique=False):
    """Sorted values of ``ar1`` not in ``ar2`` (concrete inputs).

    >>> setdiff1d(fnp.array([1, 3]), fnp.array([2, 3]))
    Array([1], dtype=int64)
    """
    check_arraylike("setdiff1d", ar1, ar2)
    return _concrete_set_op("setdiff1d", np.setdiff1d, ar1, ar2, assume_unique=assume_unique)


def isin(element, test_elements, assume_unique=False, invert=False):
    """Elementwise membership of ``element`` in ``test_elements`` (``invert`` negates).

    >>> isin(fnp.array([1, 2, 3]), fnp.array([2, 5]))
    Array([False,  True, False], dtype=bool)
    """
    from .reductions import any as any_
    from .ufuncs import equal
    check_arraylike("isin", element, test_elements)
    e = asarray(element)
    t = ravel(test_elements)
    eq = equal(reshape(e, get_aval(e).shape + (1,)), t)
    r = any_(eq, axis=-1)
    return P.not_p.bind1(r) if invert else r


def in1d(ar1, ar2, assume_unique=False, invert=False):
    """``isin`` of the flattened ``ar1`` (NumPy 1's spelling; always 1-D).

    >>> in1d(fnp.array([[1, 2], [3, 2]]), fnp.array([2]))
    Array([False,  True, False,  True], dtype=bool)
    """
    check_arraylike("in1d", ar1, ar2)
    return isin(ravel(ar1), ar2, assume_unique=assume_unique, invert=invert)


def bincount(x, weights=None, minlength=0, *, length=None):
    """Counts of each non-negative integer in ``x`` (sums of ``weights`` if given, as float64
    like NumPy). ``length=`` fixes the result size (larger values are dropped), which traced
    inputs need.

    >>> bincount(fnp.array([0, 1, 1, 3]))
    Array([1, 2, 0, 1], dtype=int64)
    """
    from .indexing import _concrete
    check_arraylike("bincount", x)
    x = ravel(x)
    if dtypes.kind(get_aval(x).dtype) not in "iub":
        raise TypeError(f"fnp.bincount: x must be integers, got {get_aval(x).str_short()}")
    if get_aval(x).dtype == dtypes.bool_:
        x = convert(x, dtypes.default_int_dtype())
    c = _concrete(x)
    if c is not None and c.size and c.min() < 0:
        raise ValueError("fnp.bincount: x must be non-negative")
    if length is None:
        if c is None:
            raise TypeError("fnp.bincount on a traced array needs a static length=")
        length = max(int(c.max()) + 1 if c.size else 0, operator.index(minlength))
    if weights is None:
        w = lax.full(get_aval(x).shape, 1, dtypes.default_int_dtype())
    else:
        w = convert(ravel(weights), dtypes.default_float_dtype())
        if get_aval(w).shape != get_aval(x).shape:
            raise ValueError("fnp.bincount: weights must have the shape of x")
    zeros = lax.full((length,), 0, get_aval(w).dtype)
    return P.scatter_add_p.bind1(zeros, w, x, axes=(0,), mode="drop")


# ---- order statistics ------------------------------------------------------------------------------
# NumPy's quantile methods (Hyndman & Fan). Positions, weights and the interpolation below copy
# NumPy's formulas operation for operation, so results agree to the last bit.
_QUANTILE_METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
                     "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
                     "normal_unbiased", "lower", "higher", "midpoint", "nearest")
_DISCRETE = ("inverted_cdf", "closest_observation", "lower", "higher", "nearest")
_ALPHA_BETA = {"interpolated_inverted_cdf": (0, 1), "hazen": (0.5, 0.5), "weibull": (0, 0),
               "median_unbiased": (1 / 3.0, 1 / 3.0), "normal_unbiased": (3 / 8.0, 3 / 8.0)}


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, interpolation=None):
    """Quantiles ``q`` (in [0, 1]) of ``a`` along ``axis`` (int, tuple or None), with any of
    NumPy's 13 ``method``s. A slice containing NaN gives NaN (see :func:`nanquantile`).

    >>> quantile(fnp.array([1.0, 2.0, 3.0, 4.0]), 0.5)
    Array(2.5, dtype=float64)
    """
    check_arraylike("quantile", a, q)
    return _quantile("quantile", a, q, axis, out, method, keepdims, interpolation, nan=False)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, interpolation=None):
    """:func:`quantile` ignoring NaNs (an all-NaN slice gives NaN).

    >>> nanquantile(fnp.array([1.0, fnp.nan, 3.0]), 0.5)
    Array(2., dtype=float64)
    """
    check_arraylike("nanquantile", a, q)
    return _quantile("nanquantile", a, q, axis, out, method, keepdims, interpolation, nan=True)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, interpolation=None):
    """Percentiles ``q`` (in [0, 100]) of ``a`` along ``axis``: ``quantile(a, q / 100)``.

    >>> percentile(fnp.array([1.0, 2.0, 3.0, 4.0]), 50)
    Array(2.5, dtype=float64)
    """
    check_arraylike("percentile", a, q)
    return _quantile("percentile", a, q, axis, out, method, keepdims, interpolation, nan=False)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, interpolation=None):
    """:func:`percentile` ignoring NaNs.

    >>> nanpercentile(fnp.array([1.0, fnp.nan, 3.0]), 50)
    Array(2., dtype=float64)
    """
    check_arraylike("nanpercentile", a, q)
    return _quantile("nanpercentile", a, q, axis, out, method, keepdims, interpolation,
                     nan=True)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median along ``axis``: the middle value, or the mean of the two middle ones.

    >>> median(fnp.array([3, 1, 4, 2]))
    Array(2.5, dtype=float64)
    """
    check_arraylike("median", a)
    return _median("median", a, axis, out, keepdims, nan=False)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """:func:`median` ignoring NaNs (an all-NaN slice gives NaN).

    >>> nanmedian(fnp.array([3.0, fnp.nan, 1.0]))
    Array(2., dtype=float64)
    """
    check_arraylike("nanmedian", a)
    return _median("nanmedian", a, axis, out, keepdims, nan=True)


def _sorted_slices(name, a, axis, nan):
    """``a`` with the reduced axes flattened last and sorted (NaNs last), the kept shape, the
    result shape for keepdims, the number of values per slice (an int, or for the nan-variants
    an array of valid counts) and, for float inputs of the plain variants, which slices
    contain NaN."""
    from .reductions import sum as sum_
    from .ufuncs import isnan
    a = asarray(a)
    aval = get_aval(a)
    if aval.dtype == dtypes.bool_:
        raise TypeError(f"fnp.{name}: boolean input is not supported (NumPy cannot subtract "
                        "booleans); convert it to a number type first")
    if dtypes.kind(aval.dtype) == "c":  # JAX's refusal and wording (NumPy answers)
        raise ValueError(f"fnp.{name}: quantile does not support complex input, as the "
                         "operation is poorly defined")
    if axis is None:
        axes = tuple(range(aval.ndim))
    else:
        axes = tuple(sorted({normalize_axis(x, aval.ndim) for x in np.atleast_1d(axis).tolist()}))
        if len(axes) != len(np.atleast_1d(axis)):
            raise ValueError(f"fnp.{name}: repeated axis in {axis}")
    rest = tuple(d for d in range(aval.ndim) if d not in axes)
    n = math.prod(aval.shape[d] for d in axes)
    if n == 0:
        raise ValueError(f"fnp.{name}: cannot take order statistics of an empty slice")
    x = lax.transpose(a, rest + axes)
    x = reshape(x, tuple(aval.shape[d] for d in rest) + (n,))
    x = sort(x, axis=-1)
    keep_shape = tuple(1 if d in axes else s for d, s in enumerate(aval.shape))
    has_nan = None
    count = n
    if dtypes.kind(aval.dtype) == "f":
        if nan:
            count = sum_(P.not_p.bind1(isnan(x)), axis=-1)
        else:
            has_nan = isnan(lax.index_in_dim(x, n - 1, axis=-1, keepdims=False))
    return x, keep_shape, count, has_nan


def _take_positions(x, positions):
    """``x[..., positions]`` per slice: ``positions`` (shape Q + R or Q + 1s) index the last
    axis of ``x`` (shape R + (n,)); the result has shape Q + R."""
    from .indexing import take_along_axis
    pos = asarray(positions)
    nr = get_aval(x).ndim - 1
    if get_aval(pos).ndim < nr:  # one position for every slice
        pos = reshape(pos, (1,) * nr)
    nq = get_aval(pos).ndim - nr
    xb = reshape(x, (1,) * nq + get_aval(x).shape)
    idx = reshape(pos, get_aval(pos).shape + (1,))
    return lax.squeeze(take_along_axis(xb, idx, axis=-1, mode="clip"), (get_aval(xb).ndim - 1,))


def _quantile(name, a, q, axis, out, method, keepdims, interpolation, nan):
    from ._core import unsupported_out
    from .ufuncs import ceil, floor, greater_equal, less, remainder, rint
    unsupported_out(name, out)
    method = method if interpolation is None else interpolation
    if method not in _QUANTILE_METHODS:
        raise ValueError(f"fnp.{name}: {method!r} is not a valid method; use one of "
                         f"{', '.join(_QUANTILE_METHODS)}")
    percent = name.endswith("percentile")
    weak_q = type(q) in (int, float)
    q = asarray(q)
    qaval = get_aval(q)
    if dtypes.kind(qaval.dtype) not in "iuf":
        raise TypeError(f"fnp.{name}: q must be a real number, got {qaval.str_short()}")
    linear_int_q = method == "linear" and dtypes.kind(qaval.dtype) in "iu" and not percent
    if dtypes.kind(qaval.dtype) != "f":
        q = convert(q, dtypes.default_float_dtype())
    if percent:
        q = P.div_p.bind1(q, lax.ops._convert_weak(100, get_aval(q).dtype))
    from .indexing import _concrete
    qc = _concrete(q)
    if qc is not None and qc.size and not (qc.min() >= 0 and qc.max() <= 1):
        raise ValueError(f"fnp.{name}: " + ("percentiles must be in the range [0, 100]" if percent
                                           else "quantiles must be in the range [0, 1]"))
    x, keep_shape, count, has_nan = _sorted_slices(name, a, axis, nan)
    qdt = get_aval(q).dtype
    nr = get_aval(x).ndim - 1
    if not isinstance(count, int):  # one count per slice: positions get shape Q + R
        q = reshape(q, get_aval(q).shape + (1,) * nr)
        count = convert(count, qdt)
    else:
        q = reshape(q, get_aval(q).shape + (1,) * nr)
    n = count

    def clip_index(i):
        return convert(i, dtypes.default_int_dtype())

    if method in _DISCRETE or linear_int_q:
        if method in ("lower", "higher", "nearest", "linear"):
            base = (n - 1) * q
            pos = {"lower": floor, "higher": ceil, "nearest": rint}.get(method, lambda v: v)(base)
        elif method == "inverted_cdf":
            pos = _to_boundaries(n * q - 1, lambda g, _: g == 0)
        else:  # closest_observation: round to the nearest odd (0-based) index at g == 0
            pos = _to_boundaries(n * q - 1 - 0.5,
                                 lambda g, i: (g == 0) & (remainder(floor(i), 2) == 1))
        r = _take_positions(x, clip_index(pos))
    else:
        if method == "linear":
            vi = (n - 1) * q
        elif method == "midpoint":
            vi = 0.5 * (floor((n - 1) * q) + ceil((n - 1) * q))
        elif method == "averaged_inverted_cdf":
            vi = n * q - 1
        else:
            alpha, beta = _ALPHA_BETA[method]
            vi = n * q + (alpha + q * (1 - alpha - beta)) - 1
        vi = convert(vi, qdt)
        # As NumPy: beyond the last position both neighbours are the last value ("-1") and
        # before the first both are the first; the weight is measured from those codes.
        prev = floor(vi)
        above, below = greater_equal(vi, n - 1), less(vi, 0)
        prev_code = where(below, 0.0, where(above, -1.0, prev))
        next_code = where(below, 0.0, where(above, -1.0, prev + 1))
        gamma = convert(vi - prev_code, qdt)
        if method == "midpoint":
            gamma = convert(where(remainder(vi, 1) == 0, 0.0, 0.5), qdt)
        elif method == "averaged_inverted_cdf":
            gamma = convert(where(gamma == 0, 0.5, 1.0), qdt)
        last = n - 1
        lo = _take_positions(x, clip_index(where(prev_code < 0, last, prev_code)))
        hi = _take_positions(x, clip_index(where(next_code < 0, last, next_code)))
        out_dtype = dtypes.result_type((get_aval(x).dtype, False), (qdt, weak_q))[0]
        r = _lerp(lo, hi, gamma, out_dtype)
    if has_nan is not None:
        r = where(has_nan, np.nan, r)
    elif nan and not isinstance(count, int):
        r = where(count == 0, np.nan, r)
    if keepdims:
        r = reshape(r, get_aval(r).shape[:get_aval(r).ndim - nr] + keep_shape)
    return r


def _to_boundaries(index, condition):
    """NumPy's discrete rule: the previous position where ``condition(gamma, index)`` holds,
    else the next one (never below 0)."""
    from .ufuncs import floor, maximum
    prev = floor(index)
    return maximum(where(condition(index - prev, index), prev, prev + 1), 0)


def _lerp(a, b, t, dtype):
    """NumPy's ``_lerp``: ``a + (b - a) t``, or ``b - (b - a)(1 - t)`` when ``t >= 0.5``.

    The difference is taken in the input dtype for floats (as NumPy), in ``dtype`` for
    integers (where NumPy's integer subtraction could wrap around)."""
    if dtypes.kind(get_aval(a).dtype) != "f":
        a, b = convert(a, dtype), convert(b, dtype)
    diff = convert(P.sub_p.bind1(b, a), dtype)
    a, b = convert(a, dtype), convert(b, dtype)
    one_minus_t = convert(1 - t, dtype)
    upper = t >= 0.5
    t = convert(t, dtype)
    return where(upper, b - diff * one_minus_t, a + diff * t)


def _median(name, a, axis, out, keepdims, nan):
    from ._core import unsupported_out
    unsupported_out(name, out)
    a = asarray(a)
    if get_aval(a).dtype == dtypes.bool_:  # NumPy averages booleans as 0/1
        a = convert(a, dtypes.default_int_dtype())
    x, keep_shape, count, has_nan = _sorted_slices(name, a, axis, nan)
    idt = dtypes.default_int_dtype()
    if isinstance(count, (int, DimExpr)):  # a static (or symbolic) count
        lo_i, hi_i = (count - 1) // 2, count // 2
    else:
        lo_i = P.div_p.bind1(P.max_p.bind1(count - 1, np.asarray(0, idt)[()]),
                             np.asarray(2, idt)[()])
        hi_i = P.div_p.bind1(count, np.asarray(2, idt)[()])
    lo, hi = _take_positions(x, lo_i), _take_positions(x, hi_i)
    dtype = get_aval(x).dtype
    out_dtype = dtype if dtypes.kind(dtype) == "f" else dtypes.default_float_dtype()
    # NumPy averages the middle pair with np.mean (float16 accumulates in float32).
    acc = dtypes.float32 if out_dtype == dtypes.float16 else out_dtype
    # np.mean's sums start from +0.0, which turns a -0.0 median into +0.0
    lo, hi = convert(lo, acc) + 0.0, convert(hi, acc)
    r = where(lo_i == hi_i, lo, (lo + hi) / 2)
    r = convert(r, out_dtype)
    if has_nan is not None:
        r = where(has_nan, np.nan, r)
    elif nan and not isinstance(count, int):
        r = where(count == 0, np.nan, r)
    return reshape(r, keep_shape) if keepdims else r
