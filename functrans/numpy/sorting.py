"""Sorting and searching: sort, argsort, lexsort, searchsorted, partition, nonzero, unique,
median, quantile, percentile.

Functions whose output shape depends on values (nonzero, unique, argwhere) need concrete
inputs, or a static ``size=`` under tracing, as in JAX::

    >>> argsort(fnp.array([3, 1, 2]))
    Array([1, 2, 0], dtype=int64)
"""
from __future__ import annotations

import math

import numpy as np

from .. import lax
from .. import primitives as P
from ..core import dtypes
from ..core.array import Array
from ..core.trace import get_aval
from ._core import asarray, convert, normalize_axis
from .shape_ops import ravel, reshape

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
    if order is not None:
        raise NotImplementedError("fnp.sort: order= (structured arrays) is not supported")
    a, axis = _axis_or_flat(a, axis)
    if get_aval(a).ndim == 0:
        return a
    out = lax.sort(a, axis, True, 1)
    return lax.rev(out, (axis,)) if descending else out


def argsort(a, axis=-1, kind=None, order=None, *, stable=True, descending=False):
    """Indices that sort ``a`` along ``axis`` (stable; descending keeps ties in order)."""
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
    return sort(a, axis=0)


def sort_complex(a):
    return sort(a)


def lexsort(keys, axis=-1):
    """Indices sorting by ``keys[-1]`` first, then ``keys[-2]``, ... (NumPy's lexsort)."""
    keys = [asarray(k) for k in keys]
    aval = get_aval(keys[0])
    axis = normalize_axis(axis, aval.ndim)
    idx = lax.broadcasted_iota(dtypes.default_int_dtype(), aval.shape, axis)
    outs = lax.sort(tuple(keys[::-1]) + (idx,), axis, True, len(keys))
    return outs[-1]


def partition(a, kth, axis=-1):
    """A sorted copy (a valid partition for every ``kth``)."""
    return sort(a, axis)


def argpartition(a, kth, axis=-1):
    return argsort(a, axis)


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """Insertion points of ``v`` in sorted 1-D ``a`` (binary search, log2(n) gathers).

    >>> searchsorted(fnp.array([1, 3, 5]), fnp.array([0, 3, 6]))
    Array([0, 1, 3], dtype=int64)
    """
    from ._core import promote
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    a = asarray(a)
    if get_aval(a).ndim != 1:
        raise ValueError("searchsorted: a must be 1-D")
    if sorter is not None:
        from .indexing import take
        a = take(a, sorter)
    a, v = promote(a, asarray(v))
    n = get_aval(a).shape[0]
    idt = dtypes.default_int_dtype()
    lo = lax.full(get_aval(v).shape, 0, idt)
    hi = lax.full(get_aval(v).shape, n, idt)
    cmp = P.lt_p if side == "left" else P.le_p
    for _ in range(max(1, math.ceil(math.log2(n + 1)))):
        mid = P.div_p.bind1(P.add_p.bind1(lo, hi), np.asarray(2, idt)[()])
        safe = P.min_p.bind1(mid, np.asarray(max(n - 1, 0), idt)[()])
        am = P.gather_p.bind1(a, safe, axes=(0,), mode="clip", fill_value=None) if n else v
        go_right = P.and_p.bind1(cmp.bind1(am, v), P.lt_p.bind1(mid, hi))
        lo = lax.select(go_right, P.add_p.bind1(mid, np.asarray(1, idt)[()]), lo)
        hi = lax.select(go_right, hi, mid)
    return lo


def digitize(x, bins, right=False):
    """Indices of the bins each value of ``x`` falls into."""
    bins = asarray(bins)
    from .indexing import _concrete
    b = _concrete(bins)
    increasing = b is None or b.size < 2 or b[-1] >= b[0]
    side = "left" if right else "right"
    if increasing:
        return searchsorted(bins, x, side=side)
    n = get_aval(bins).shape[0]
    return P.sub_p.bind1(np.asarray(n, dtypes.default_int_dtype())[()],
                         searchsorted(lax.rev(bins, (0,)), x, side="right" if right else "left"))


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
    return nonzero(ravel(a), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """Indices of non-zero elements as an (N, ndim) array."""
    from .shape_ops import stack
    a = asarray(a)
    if get_aval(a).ndim == 0:
        a = reshape(a, (1,))
    cols = nonzero(a, size=size, fill_value=fill_value)
    return stack(cols, axis=1)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None):
    """Sorted unique values (concrete input, as the result's size depends on values)."""
    c = _concrete_or_size("unique", asarray(ar), size)
    if c is None:
        raise NotImplementedError("fnp.unique with size= on traced input is not supported yet")
    res = np.unique(c, return_index=return_index, return_inverse=return_inverse,
                    return_counts=return_counts, axis=axis, equal_nan=equal_nan)
    if not isinstance(res, tuple):
        return asarray(res)
    return tuple(asarray(r) for r in res)


def unique_values(x):
    return unique(x)


def unique_counts(x):
    return unique(x, return_counts=True)


def unique_inverse(x):
    return unique(x, return_inverse=True)


def unique_all(x):
    return unique(x, return_index=True, return_inverse=True, return_counts=True)


def _concrete_set_op(name, fn, *arrays, **kw):
    from .indexing import _concrete
    vals = [_concrete(asarray(a)) for a in arrays]
    if any(v is None for v in vals):
        raise TypeError(f"fnp.{name} needs concrete inputs: its result's shape depends on values")
    return asarray(fn(*vals, **kw))


def union1d(ar1, ar2):
    return _concrete_set_op("union1d", np.union1d, ar1, ar2)


def intersect1d(ar1, ar2, assume_unique=False):
    return _concrete_set_op("intersect1d", np.intersect1d, ar1, ar2, assume_unique=assume_unique)


def setdiff1d(ar1, ar2, assume_unique=False):
    return _concrete_set_op("setdiff1d", np.setdiff1d, ar1, ar2, assume_unique=assume_unique)


def isin(element, test_elements, assume_unique=False, invert=False):
    """Elementwise membership test (compares against every test element)."""
    from .reductions import any as any_
    from .ufuncs import equal
    e = asarray(element)
    t = ravel(test_elements)
    eq = equal(reshape(e, get_aval(e).shape + (1,)), t)
    r = any_(eq, axis=-1)
    return P.not_p.bind1(r) if invert else r


in1d = isin


def bincount(x, weights=None, minlength=0, *, length=None):
    """Counts of each non-negative integer (``length=`` for a static result size)."""
    from .indexing import _concrete
    x = ravel(x)
    if length is None:
        c = _concrete(x)
        if c is None:
            raise TypeError("fnp.bincount on a traced array needs a static length=")
        length = max(int(c.max()) + 1 if c.size else 0, minlength)
    w = (lax.full(get_aval(x).shape, 1, dtypes.default_int_dtype()) if weights is None
         else asarray(weights))
    zeros = lax.full((length,), 0, get_aval(w).dtype)
    return P.scatter_add_p.bind1(zeros, ravel(w), x, axes=(0,), mode="drop")


# ---- order statistics ------------------------------------------------------------------------------
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, interpolation=None):
    """Quantiles ``q`` (in [0, 1]) along ``axis`` with NumPy's methods (linear, lower, higher,
    nearest, midpoint)."""
    return _quantile(a, q, axis, method if interpolation is None else interpolation, keepdims,
                     nan=False)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, interpolation=None):
    """Percentiles ``q`` (in [0, 100]) along ``axis``."""
    from .ufuncs import true_divide
    return quantile(a, true_divide(q, 100.0), axis, out, overwrite_input, method, keepdims,
                    interpolation=interpolation)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median along ``axis``."""
    return quantile(a, 0.5, axis, keepdims=keepdims)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, interpolation=None):
    return _quantile(a, q, axis, method if interpolation is None else interpolation, keepdims,
                     nan=True)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, interpolation=None):
    from .ufuncs import true_divide
    return nanquantile(a, true_divide(q, 100.0), axis, method=method, keepdims=keepdims,
                       interpolation=interpolation)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return nanquantile(a, 0.5, axis, keepdims=keepdims)


def _quantile(a, q, axis, method, keepdims, nan):
    from ._core import inexact_dtype
    from .reductions import sum as sum_
    from .shape_ops import moveaxis
    from .ufuncs import ceil, floor, isnan
    if method not in ("linear", "lower", "higher", "nearest", "midpoint"):
        raise ValueError(f"quantile method {method!r} is not supported")
    a = asarray(a)
    aval = get_aval(a)
    dt = inexact_dtype(aval.dtype)
    a = convert(a, dt)
    q = convert(asarray(q), dt)
    if axis is None:
        x, ax = ravel(a), 0
        axes = tuple(range(aval.ndim))
    else:
        axes = tuple(sorted(normalize_axis(x, aval.ndim) for x in np.atleast_1d(axis).tolist()))
        rest = [d for d in range(aval.ndim) if d not in axes]
        x = lax.transpose(a, tuple(rest) + axes)
        x = reshape(x, tuple(aval.shape[d] for d in rest) + (-1,))
        ax = len(rest)
    x = sort(x, axis=ax)  # NaNs last
    n = get_aval(x).shape[ax]
    if nan:
        count = sum_(P.not_p.bind1(isnan(x)), axis=ax, keepdims=True)
        count = convert(count, dt)
    else:
        count = lax.full((), float(n), dt)
    qs = reshape(q, get_aval(q).shape + (1,) * get_aval(x).ndim)
    pos = P.mul_p.bind1(qs, P.sub_p.bind1(count, np.asarray(1, dt)[()])) if nan else \
        P.mul_p.bind1(qs, np.asarray(n - 1, dt)[()])
    lo_f, hi_f = floor(pos), ceil(pos)
    idt = dtypes.default_int_dtype()
    xb = x
    from .shape_ops import broadcast_to
    shape = np.broadcast_shapes(get_aval(lo_f).shape, get_aval(x).shape[:ax] + (1,)
                                + get_aval(x).shape[ax + 1:])
    from .indexing import take_along_axis

    def pick(p):
        i = convert(P.max_p.bind1(P.min_p.bind1(p, np.asarray(max(n - 1, 0), dt)[()]),
                                  np.asarray(0, dt)[()]), idt)
        i = broadcast_to(i, shape)
        xx = broadcast_to(xb, get_aval(q).shape + get_aval(x).shape) if get_aval(q).shape else xb
        return take_along_axis(xx, i, axis=ax + get_aval(q).ndim)

    lo, hi = pick(lo_f), pick(hi_f)
    frac = P.sub_p.bind1(pos, lo_f)
    if method == "lower":
        r = lo
    elif method == "higher":
        r = hi
    elif method == "midpoint":
        r = P.mul_p.bind1(P.add_p.bind1(lo, hi), np.asarray(0.5, dt)[()])
    elif method == "nearest":
        from .ufuncs import rint
        r = pick(rint(pos))
    else:
        r = P.add_p.bind1(lo, P.mul_p.bind1(P.sub_p.bind1(hi, lo), broadcast_to(frac, get_aval(lo).shape)))
    r = lax.squeeze(r, (ax + get_aval(q).ndim,))
    if keepdims:
        keep = tuple(1 if d in axes else s for d, s in enumerate(aval.shape))
        r = reshape(r, get_aval(q).shape + keep)
    return r
