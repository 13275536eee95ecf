"""Multidimensional histograms with NumPy's names: ``histogram2d`` and ``histogramdd``
(the one-dimensional ``histogram`` and its bin edges are in numerical.py).

    >>> h, edges = fnp.histogramdd(fnp.array([[0.0, 0.0], [1.0, 1.0]]), bins=2)
    >>> h
    Array([[1., 0.],
           [0., 1.]], dtype=float64)
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from ..core import dtypes
from ..core.trace import get_aval
from . import reductions, shape_ops, ufuncs
from ._core import check_arraylike, asarray, convert
from .numerical import histogram_bin_edges

__all__ = ["histogram2d", "histogramdd"]


def _bin_index(x, edges):
    """Each value's bin (the last bin includes its right edge) and whether it is inside."""
    from .sorting import searchsorted
    nb = get_aval(edges).shape[0] - 1
    idx = ufuncs.subtract(searchsorted(edges, x, side="right"), 1)
    idx = shape_ops.where(ufuncs.equal(x, edges[nb]), nb - 1, idx)
    inside = ufuncs.logical_and(ufuncs.greater_equal(x, edges[0]),
                                ufuncs.less_equal(x, edges[nb]))
    return idx, inside, nb


def _per_dim(value, d, what):
    if value is None or (not isinstance(value, (list, tuple)) and np.ndim(value) == 0):
        return [value] * d
    value = list(value)
    if len(value) != d:
        raise ValueError(f"fnp.histogramdd: the dimension of {what} ({len(value)}) must equal "
                         f"the dimension of the sample ({d})")
    return value


def histogramdd(sample, bins=10, range=None, density=None, weights=None):
    """The D-dimensional histogram of ``sample`` (an (N, D) array, or D arrays of length N).

    ``bins`` is a number of bins for every dimension, one per dimension, or per-dimension
    edge arrays; ``range`` a ``(min, max)`` pair per dimension (required for traced data).
    Returns ``(hist, edges)`` with float counts (weight sums; a density with ``density``), as
    NumPy.

    >>> h, (ex, ey) = fnp.histogramdd(fnp.array([[0.0, 1.0], [0.2, 0.0]]), bins=(2, 1))
    >>> h.shape, ex
    ((2, 1), Array([0. , 0.1, 0.2], dtype=float64))
    """
    check_arraylike("histogramdd", sample, weights, allow_none=True)
    return _histogramdd(sample, bins, range, density, weights)


def _histogramdd(sample, bins, range, density, weights):
    """:func:`histogramdd` of an (N, D) array or a list of D 1-d arrays."""
    from .sorting import bincount
    if isinstance(sample, (list, tuple)) and sample and np.ndim(sample[0]) == 1:
        cols = [shape_ops.ravel(asarray(s)) for s in sample]
        n = get_aval(cols[0]).shape[0]
        if any(get_aval(c).shape[0] != n for c in cols):
            raise ValueError("fnp.histogramdd: the sample arrays must have the same length")
    else:
        sample = asarray(sample)
        shape = get_aval(sample).shape
        if len(shape) == 1:
            sample = shape_ops.reshape(sample, (shape[0], 1))
        elif len(shape) != 2:
            raise ValueError(f"fnp.histogramdd: sample must be (N, D), got shape {shape}")
        cols = [sample[:, k] for k in builtins.range(get_aval(sample).shape[1])]
    d = len(cols)
    if not isinstance(bins, (list, tuple)) and np.ndim(bins) == 0:
        try:
            operator.index(bins)
        except TypeError:
            raise TypeError(f"fnp.histogramdd: bins must be an integer, a sequence of integers "
                            f"or a sequence of edge arrays, got {type(bins).__name__}") from None
    bins = _per_dim(bins, d, "bins")
    ranges = _per_dim(range, d, "range") if range is not None else [None] * d
    if weights is not None:
        weights = shape_ops.ravel(asarray(weights))
        if get_aval(weights).shape[0] != get_aval(cols[0]).shape[0]:
            raise ValueError(f"fnp.histogramdd: weights should have the sample's length "
                             f"{get_aval(cols[0]).shape[0]}, got {get_aval(weights).shape[0]}")
    edges, flat, inside, sizes = [], None, None, []
    for col, b, r in zip(cols, bins, ranges):
        e = histogram_bin_edges(col, b, r)
        idx, ok, nb = _bin_index(col, e)
        edges.append(e)
        sizes.append(nb)
        flat = idx if flat is None else ufuncs.add(ufuncs.multiply(flat, nb), idx)
        inside = ok if inside is None else ufuncs.logical_and(inside, ok)
    total = int(np.prod(sizes))
    flat = shape_ops.where(inside, flat, total)  # outside values go to a dropped extra bin
    counts = bincount(flat, weights, length=total + 1)[:total]
    hist = convert(counts, dtypes.canonicalize_dtype(np.float64))
    hist = shape_ops.reshape(hist, tuple(sizes))
    if density:
        hist = ufuncs.true_divide(hist, reductions.sum(hist))
        for k, e in enumerate(edges):
            shape = [1] * d
            shape[k] = sizes[k]
            hist = ufuncs.true_divide(hist, shape_ops.reshape(shape_ops.diff(e), tuple(shape)))
    return hist, edges



def histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    """The 2-d histogram of points ``(x[i], y[i])``: ``(hist, xedges, yedges)`` as NumPy.

    ``bins``: a number of bins, ``[nx, ny]``, one edge array for both, or ``[xedges, yedges]``.

    >>> h, xe, ye = fnp.histogram2d(fnp.array([0.0, 1.0, 1.0]), fnp.array([0.0, 1.0, 1.0]), bins=2)
    >>> h
    Array([[1., 0.],
           [0., 2.]], dtype=float64)
    """
    check_arraylike("histogram2d", x, y)
    x, y = asarray(x), asarray(y)
    if get_aval(x).shape != get_aval(y).shape or len(get_aval(x).shape) != 1:
        raise ValueError(f"fnp.histogram2d: x and y must be 1-d of the same length, got shapes "
                         f"{get_aval(x).shape} and {get_aval(y).shape}")
    if not isinstance(bins, (list, tuple)) and np.ndim(bins) == 1:
        bins = [bins, bins]  # one edge array for both dimensions
    hist, (xe, ye) = _histogramdd([x, y], bins, range, density, weights)
    return hist, xe, ye
