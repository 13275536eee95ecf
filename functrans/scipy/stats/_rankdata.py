"""``rankdata``: ranks of data with ties resolved as SciPy does (``jax.scipy.stats.rankdata``).

    >>> rankdata(fnp.array([0.5, 2.0, 0.5, 1.0]))
    Array([1.5, 4. , 1.5, 3. ], dtype=float64)
"""
from __future__ import annotations

from ... import numpy as fnp
from ...core.dtypes import default_float_dtype, is_inexact
from ...transforms.batching import vmap

__all__ = ["rankdata"]

_METHODS = ("average", "min", "max", "dense", "ordinal")


def _rank_1d(arr, method):
    n = arr.shape[0]
    sorter = fnp.argsort(arr, stable=True)
    s = arr[sorter]
    inv = fnp.zeros(n, dtype=sorter.dtype).at[sorter].set(fnp.arange(n, dtype=sorter.dtype))
    if method == "ordinal":
        return inv + 1
    obs = fnp.concatenate([fnp.ones(1, dtype=bool), s[1:] != s[:-1]])
    dense = fnp.cumsum(obs)[inv]
    if method == "dense":
        return dense
    # count[k]: where the k-th group of ties starts in sorted order (count[#groups] = n)
    count = fnp.concatenate([fnp.nonzero(obs, size=n, fill_value=n)[0],
                             fnp.full(1, n, dtype=sorter.dtype)])
    if method == "max":
        return count[dense]
    if method == "min":
        return count[dense - 1] + 1
    out = 0.5 * (count[dense] + count[dense - 1] + 1).astype(default_float_dtype())
    if is_inexact(arr.dtype):  # SciPy's nan_policy='propagate': any NaN -> all NaN
        out = fnp.where(fnp.any(fnp.isnan(arr)), fnp.nan, out)
    return out


def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
    """Ranks of ``a``'s values, 1-based, ties resolved by ``method``: ``'average'`` (the mean
    of the tied ranks, float), ``'min'``, ``'max'``, ``'dense'`` (ranks of the distinct
    values) or ``'ordinal'`` (ties in order of appearance), the last four integers. With
    ``axis=None`` ``a`` is flattened; otherwise each 1-D slice along ``axis`` is ranked.
    ``nan_policy='propagate'``: a slice holding a NaN ranks to all NaN for ``'average'``
    (SciPy); the integer methods, which cannot hold NaN, rank NaNs last (JAX). ``'omit'`` and
    ``'raise'`` are not implemented (as in JAX).

    >>> rankdata(fnp.array([[3, 1], [1, 2]]), "min", axis=1)
    Array([[2, 1],
           [1, 2]], dtype=int64)
    """
    if method not in _METHODS:
        raise ValueError(f"rankdata: unknown method {method!r}; expected one of {_METHODS}")
    if nan_policy not in ("propagate", "omit", "raise"):
        raise ValueError(f"rankdata: nan_policy must be 'propagate', 'omit' or 'raise', got "
                         f"{nan_policy!r}")
    if nan_policy != "propagate":
        raise NotImplementedError(f"rankdata: nan_policy={nan_policy!r} is not implemented "
                                  "(as in JAX); use 'propagate'")
    a = fnp.asarray(a)
    if axis is None:
        return _rank_1d(fnp.ravel(a), method)
    if a.ndim == 0:
        raise ValueError("rankdata: axis given for a 0-d array")
    axis = axis % a.ndim
    moved = fnp.moveaxis(a, axis, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    ranked = vmap(lambda r: _rank_1d(r, method))(rows)
    return fnp.moveaxis(ranked.reshape(moved.shape), -1, axis)
