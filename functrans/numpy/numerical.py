"""Numerical routines on arrays: interpolation, convolution, covariance, integration and
differentiation (trapezoid, gradient), phase unwrapping, histograms, polynomials and window
functions. Each follows NumPy's own algorithm operation by operation, so results round like
NumPy's; value-dependent sizes (histogram bins, polynomial lengths) are static::

    >>> interp(fnp.array([0.5, 1.5]), fnp.array([0.0, 1.0, 2.0]), fnp.array([0.0, 10.0, 0.0]))
    Array([5., 5.], dtype=float64)
"""
from __future__ import annotations

import operator

import numpy as np

from .. import lax
from ..core import dtypes
from ..core.trace import get_aval
from ._core import check_arraylike, asarray, convert, normalize_axis, result_dtype
from . import joining, reductions, shape_ops, ufuncs
from .ufuncs import add, multiply, subtract, true_divide

__all__ = ["interp", "convolve", "correlate", "cov", "corrcoef", "trapezoid",
           "cumulative_trapezoid", "gradient", "unwrap", "histogram", "histogram_bin_edges",
           "polyval", "polyadd", "polysub", "polymul", "polyder", "polyint", "poly", "vander",
           "hamming", "hanning", "blackman", "bartlett", "kaiser"]


def _concrete(x):
    from .indexing import _concrete as c
    return c(x)


def _take(a, i):
    from .indexing import take
    return take(a, i)


def interp(x, xp, fp, left=None, right=None, period=None):
    """1-D piecewise-linear interpolation of ``(xp, fp)`` at ``x`` (``xp`` increasing), in
    float64 like NumPy: ``slope * (x - xp[j]) + fp[j]``, exact at the sample points.

    >>> interp(2.5, fnp.array([1.0, 2.0, 3.0]), fnp.array([3.0, 2.0, 0.0]))
    Array(1., dtype=float64)
    """
    from .sorting import argsort, searchsorted
    check_arraylike("interp", x, xp, fp)
    x, xp, fp = asarray(x), asarray(xp), asarray(fp)
    if get_aval(xp).ndim != 1 or get_aval(fp).ndim != 1:
        raise ValueError("fnp.interp: xp and fp must be 1-d sequences")
    n = get_aval(xp).shape[0]
    if get_aval(fp).shape[0] != n:
        raise ValueError(f"fnp.interp: fp and xp are not of the same length "
                         f"({get_aval(fp).shape[0]} and {n})")
    if n == 0:
        raise ValueError("fnp.interp: array of sample points is empty")
    d = dtypes.default_float_dtype()
    x, xp, fp = convert(x, d), convert(xp, d), convert(fp, d)
    if period is not None:
        if period == 0:
            raise ValueError("fnp.interp: period must be a non-zero value")
        period = abs(period)
        left = right = None
        x, xp = ufuncs.remainder(x, period), ufuncs.remainder(xp, period)
        order = argsort(xp)
        xp, fp = _take(xp, order), _take(fp, order)
        xp = joining.concatenate([subtract(xp[-1:], period), xp, add(xp[0:1], period)])
        fp = joining.concatenate([fp[-1:], fp, fp[0:1]])
        n += 2
    left = fp[0] if left is None else convert(asarray(left), d)
    right = fp[n - 1] if right is None else convert(asarray(right), d)
    if n == 1:
        inner = shape_ops.broadcast_to(fp[0], get_aval(x).shape)
    else:
        j = shape_ops.clip(subtract(searchsorted(xp, x, side="right"), 1), 0, n - 2)
        x0, x1, f0, f1 = _take(xp, j), _take(xp, j + 1), _take(fp, j), _take(fp, j + 1)
        slope = true_divide(subtract(f1, f0), subtract(x1, x0))
        inner = add(multiply(slope, subtract(x, x0)), f0)
        # NaN from one end (infinite slope times zero): try the other end, then equal fps.
        other = add(multiply(slope, subtract(x, x1)), f1)
        inner = shape_ops.where(ufuncs.isnan(inner), other, inner)
        inner = shape_ops.where(ufuncs.logical_and(ufuncs.isnan(inner), ufuncs.equal(f0, f1)),
                                f0, inner)
        inner = shape_ops.where(ufuncs.equal(x, x0), f0, inner)
    last = xp[n - 1]
    y = shape_ops.where(ufuncs.equal(x, last), fp[n - 1], inner)
    y = shape_ops.where(ufuncs.less(x, xp[0]), left, y)
    y = shape_ops.where(ufuncs.greater(x, last), right, y)
    # NumPy returns NaN inputs as they are, except with a single sample point.
    return y if n == 1 else shape_ops.where(ufuncs.isnan(x), x, y)


def _full_correlation(a, v):
    """``c[k] = sum_i a[i + k - (m - 1)] * v[i]`` for k in [0, n + m - 1)."""
    from .indexing import take
    from .linalg_ops import matmul
    n, m = get_aval(a).shape[0], get_aval(v).shape[0]
    padded = lax.pad(a, lax.full((), 0, get_aval(a).dtype), [(m - 1, m - 1, 0)])
    idx = np.arange(n + m - 1)[:, None] + np.arange(m)[None, :]
    return matmul(take(padded, asarray(idx), axis=0), v)


def _correlation_inputs(name, a, v, mode):
    from ._core import promote
    a, v = promote(asarray(a), asarray(v))
    for what, x in (("a", a), ("v", v)):
        if get_aval(x).ndim != 1:
            raise ValueError(f"fnp.{name}: {what} must be 1-d, got shape {get_aval(x).shape}")
        if get_aval(x).shape[0] == 0:
            raise ValueError(f"fnp.{name}: {what} cannot be empty")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"fnp.{name}: mode must be 'full', 'same' or 'valid', got {mode!r}")
    return a, v


def _window(full, start, length):
    return lax.slice_in_dim(full, start, start + length, 1, 0)


def correlate(a, v, mode="valid"):
    """Cross-correlation ``c[k] = sum_n a[n + k] * v[n]`` of 1-d arrays (modes valid, same,
    full; the output offsets follow NumPy, including for ``len(v) > len(a)``).

    >>> correlate(fnp.array([1.0, 2.0, 3.0]), fnp.array([0.0, 1.0, 0.5]))
    Array([3.5], dtype=float64)
    """
    check_arraylike("correlate", a, v)
    a, v = _correlation_inputs("correlate", a, v, mode)
    n, m = get_aval(a).shape[0], get_aval(v).shape[0]
    full = _full_correlation(a, v)
    if mode == "full":
        return full
    if mode == "valid":
        return _window(full, min(n, m) - 1, abs(n - m) + 1)
    start = (m - 1) // 2 if n >= m else (n - 1) - (n - 1) // 2
    return _window(full, start, max(n, m))


def convolve(a, v, mode="full"):
    """Discrete linear convolution of 1-d arrays (modes full, same, valid).

    >>> convolve(fnp.array([1.0, 2.0, 3.0]), fnp.array([0.0, 1.0, 0.5]))
    Array([0. , 1. , 2.5, 4. , 1.5], dtype=float64)
    """
    check_arraylike("convolve", a, v)
    a, v = _correlation_inputs("convolve", a, v, mode)
    n, m = get_aval(a).shape[0], get_aval(v).shape[0]
    full = _full_correlation(a, shape_ops.flip(v))
    if mode == "full":
        return full
    if mode == "valid":
        return _window(full, min(n, m) - 1, abs(n - m) + 1)
    return _window(full, (min(n, m) - 1) // 2, max(n, m))


def _weights_1d(name, w, n, what):
    w = convert(asarray(w), dtypes.default_float_dtype())
    if get_aval(w).ndim > 1:
        raise RuntimeError(f"fnp.cov: cannot handle multidimensional {what}")
    if get_aval(w).shape[0] != n:
        raise RuntimeError(f"fnp.cov: incompatible numbers of samples and {what}")
    c = _concrete(w)
    if c is not None and (c < 0).any():
        raise ValueError(f"fnp.cov: {what} cannot be negative")
    if name == "fweights" and c is not None and not np.all(c == np.around(c)):
        raise TypeError("fnp.cov: fweights must be integer")
    return w


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """Covariance matrix of the variables in the rows (``rowvar``) or columns of ``m``, with
    optional frequency and analytic weights (at least float64, as NumPy).

    >>> cov(fnp.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
    Array([[ 1., -1.],
           [-1.,  1.]], dtype=float64)
    """
    from .linalg_ops import dot
    check_arraylike("cov", m, y, allow_none=True)
    for w in (fweights, aweights):  # each on its own, as JAX
        check_arraylike("cov", w, allow_none=True)
    if ddof is not None and ddof != int(ddof):
        raise ValueError("fnp.cov: ddof must be integer")
    m = asarray(m)
    if get_aval(m).ndim > 2:
        raise ValueError("fnp.cov: m has more than 2 dimensions")
    if y is not None:
        y = asarray(y)
        if get_aval(y).ndim > 2:
            raise ValueError("fnp.cov: y has more than 2 dimensions")
    if dtype is None:
        dtype = result_dtype(m, dtypes.default_float_dtype()) if y is None else \
            result_dtype(m, y, dtypes.default_float_dtype())
    dtype = dtypes.canonicalize_dtype(dtype)
    X = convert(joining.atleast_2d(m), dtype)
    if not rowvar and get_aval(m).ndim != 1:
        X = shape_ops.transpose(X)
    if get_aval(X).shape[0] == 0:
        return lax.full((0, 0), 0, dtypes.default_float_dtype())
    if y is not None:
        yy = convert(joining.atleast_2d(y), dtype)
        if not rowvar and get_aval(yy).shape[0] != 1:
            yy = shape_ops.transpose(yy)
        X = joining.concatenate([X, yy], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    nobs = get_aval(X).shape[1]
    w = None
    if fweights is not None:
        w = _weights_1d("fweights", fweights, nobs, "fweights")
    if aweights is not None:
        aw = _weights_1d("aweights", aweights, nobs, "aweights")
        w = aw if w is None else multiply(w, aw)
    avg, w_sum = reductions.average(X, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        fact = nobs - ddof
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = subtract(w_sum, ddof)
    else:
        fact = subtract(w_sum, true_divide(multiply(ddof, reductions.sum(multiply(w, aw))),
                                           w_sum))
    # Degrees of freedom <= 0: NumPy warns and divides by zero.
    fact = max(fact, 0.0) if isinstance(fact, int) else ufuncs.maximum(fact, 0.0)
    X = subtract(X, avg[:, None])
    X_T = shape_ops.transpose(X if w is None else multiply(X, w))
    c = multiply(dot(X, X_T), true_divide(1, fact))
    return shape_ops.squeeze(c)


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """Pearson correlation coefficients (the covariance scaled by the standard deviations,
    clipped to [-1, 1]).

    >>> corrcoef(fnp.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
    Array([[ 1., -1.],
           [-1.,  1.]], dtype=float64)
    """
    from .creation import diag
    check_arraylike("corrcoef", x, y, allow_none=True)
    c = cov(x, y, rowvar, dtype=dtype)
    if get_aval(c).ndim == 0:
        return true_divide(c, c)
    d = diag(c)
    stddev = ufuncs.sqrt(d)
    c = true_divide(c, stddev[:, None])
    c = true_divide(c, stddev[None, :])
    return shape_ops.clip(c, -1, 1)


def _spacing(name, x, y, axis, dx):
    """The sample spacing for trapezoid rules: ``dx``, or ``diff(x)`` shaped against ``y``."""
    if x is None:
        return dx
    x = asarray(x)
    ny = get_aval(y).ndim
    if get_aval(x).ndim == 1:
        d = shape_ops.diff(x)
        shape = [1] * ny
        shape[axis] = get_aval(d).shape[0]
        return shape_ops.reshape(d, tuple(shape))
    if get_aval(x).ndim != ny:
        raise ValueError(f"fnp.{name}: x must be 1-d or have the rank of y")
    return shape_ops.diff(x, axis=axis)


def _trapezoids(name, y, x, dx, axis):
    y = asarray(y)
    nd = get_aval(y).ndim
    axis = normalize_axis(axis, nd)
    n = get_aval(y).shape[axis]
    d = _spacing(name, x, y, axis, dx)
    y1 = lax.slice_in_dim(y, min(1, n), n, 1, axis)
    y0 = lax.slice_in_dim(y, 0, max(n - 1, 0), 1, axis)
    return true_divide(multiply(d, add(y1, y0)), 2.0), axis


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral of ``y`` along ``axis`` by the trapezoidal rule (samples at ``x``, or spaced
    ``dx``).

    >>> trapezoid(fnp.array([1.0, 2.0, 3.0]))
    Array(4., dtype=float64)
    """
    check_arraylike("trapezoid", y, x, allow_none=True)
    parts, axis = _trapezoids("trapezoid", y, x, dx, axis)
    return reductions.sum(parts, axis=axis)


def cumulative_trapezoid(y, x=None, dx=1.0, axis=-1, initial=None):
    """Running trapezoidal integral along ``axis`` (SciPy's ``cumulative_trapezoid``);
    ``initial=0`` prepends a zero.

    >>> cumulative_trapezoid(fnp.array([1.0, 2.0, 3.0]))
    Array([1.5, 4. ], dtype=float64)
    """
    y = asarray(y)
    if get_aval(y).shape[normalize_axis(axis, get_aval(y).ndim)] == 0:
        raise ValueError("fnp.cumulative_trapezoid: at least one point is required along axis")
    parts, axis = _trapezoids("cumulative_trapezoid", y, x, dx, axis)
    res = reductions.cumsum(parts, axis=axis)
    if initial is not None:
        if initial != 0 or not np.isscalar(initial):
            raise ValueError("fnp.cumulative_trapezoid: `initial` must be None or 0")
        pad = [(0, 0, 0)] * get_aval(res).ndim
        pad[axis] = (1, 0, 0)
        res = lax.pad(res, lax.full((), 0, get_aval(res).dtype), pad)
    return res


def _edge_slices(f, axis, start, stop):
    return lax.slice_in_dim(f, start, stop, 1, axis)


def gradient(f, *varargs, axis=None, edge_order=1):
    """Second-order central differences inside, first- or second-order one-sided differences
    at the edges (NumPy's formulas); spacings are scalars or coordinate arrays per axis.

    >>> gradient(fnp.array([1.0, 2.0, 4.0, 7.0]))
    Array([1. , 1.5, 2.5, 3. ], dtype=float64)
    """
    f = asarray(f)
    N = get_aval(f).ndim
    axes = tuple(range(N)) if axis is None else tuple(
        normalize_axis(a, N) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if len(set(axes)) != len(axes):
        raise ValueError(f"fnp.gradient: repeated axis in {axis}")
    n = len(varargs)
    if n == 0:
        dx = [1.0] * len(axes)
    elif n == 1 and np.ndim(varargs[0]) == 0:
        dx = list(varargs) * len(axes)
    elif n == len(axes):
        dx = []
        for ax, distances in zip(axes, varargs):
            if np.ndim(distances) == 0:
                dx.append(distances)
                continue
            distances = asarray(distances)
            if get_aval(distances).ndim != 1:
                raise ValueError("fnp.gradient: distances must be either scalars or 1d")
            if get_aval(distances).shape[0] != get_aval(f).shape[ax]:
                raise ValueError("fnp.gradient: when 1d, distances must match the length of "
                                 "the corresponding dimension")
            if dtypes.kind(get_aval(distances).dtype) in "iu":
                distances = convert(distances, dtypes.default_float_dtype())
            diffx = shape_ops.diff(distances)
            known = _concrete(diffx)
            # NumPy reduces constant spacings to the (cheaper) uniform formulas.
            # (a NumPy scalar: strong, so float16 data is differenced in float64 as NumPy)
            dx.append(asarray(known[0]) if known is not None and known.size and
                      (known == known[0]).all() else diffx)
    else:
        raise TypeError("fnp.gradient: invalid number of arguments")
    if edge_order not in (1, 2):
        raise ValueError("fnp.gradient: 'edge_order' must be 1 or 2")
    if dtypes.kind(get_aval(f).dtype) != "f":
        f = convert(f, dtypes.default_float_dtype())
    outs = []
    for ax, h in zip(axes, dx):
        size = get_aval(f).shape[ax]
        if size < edge_order + 1:
            raise ValueError("fnp.gradient: shape of array too small to calculate a numerical "
                             "gradient, at least (edge_order + 1) elements are required")
        if np.ndim(h) == 1:
            # Traced coordinates: NumPy's choice between the uniform and the general formula
            # depends on their values, so compute both and select.
            uniform = reductions.all(ufuncs.equal(h, h[0]))
            outs.append(shape_ops.where(uniform, _gradient_axis(f, ax, h[0], edge_order, size),
                                        _gradient_axis(f, ax, h, edge_order, size)))
        else:
            outs.append(_gradient_axis(f, ax, h, edge_order, size))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _gradient_axis(f, ax, h, edge_order, n):
    nd = get_aval(f).ndim

    def s(a, b):
        return lax.slice_in_dim(f, a, b, 1, ax)
    uniform = np.ndim(h) == 0

    def shaped(v):
        shape = [1] * nd
        shape[ax] = -1
        return shape_ops.reshape(v, tuple(shape))

    if uniform:
        interior = true_divide(subtract(s(2, n), s(0, n - 2)), multiply(2.0, h))
    else:
        dx1, dx2 = h[0:-1], h[1:]
        a = true_divide(ufuncs.negative(dx2), multiply(dx1, add(dx1, dx2)))
        b = true_divide(subtract(dx2, dx1), multiply(dx1, dx2))
        c = true_divide(dx1, multiply(dx2, add(dx1, dx2)))
        interior = add(add(multiply(shaped(a), s(0, n - 2)), multiply(shaped(b), s(1, n - 1))),
                       multiply(shaped(c), s(2, n)))
    if edge_order == 1:
        h0 = h if uniform else h[0]
        hn = h if uniform else h[-1]
        first = true_divide(subtract(s(1, 2), s(0, 1)), h0)
        last = true_divide(subtract(s(n - 1, n), s(n - 2, n - 1)), hn)
    else:
        if uniform:
            a, b, c = true_divide(-1.5, h), true_divide(2.0, h), true_divide(-0.5, h)
            a2, b2, c2 = true_divide(0.5, h), true_divide(-2.0, h), true_divide(1.5, h)
        else:
            dx1, dx2 = h[0], h[1]
            a = true_divide(ufuncs.negative(add(multiply(2.0, dx1), dx2)),
                            multiply(dx1, add(dx1, dx2)))
            b = true_divide(add(dx1, dx2), multiply(dx1, dx2))
            c = true_divide(ufuncs.negative(dx1), multiply(dx2, add(dx1, dx2)))
            dx1, dx2 = h[-2], h[-1]
            a2 = true_divide(dx2, multiply(dx1, add(dx1, dx2)))
            b2 = true_divide(ufuncs.negative(add(dx2, dx1)), multiply(dx1, dx2))
            c2 = true_divide(add(multiply(2.0, dx2), dx1), multiply(dx2, add(dx1, dx2)))
        first = add(add(multiply(a, s(0, 1)), multiply(b, s(1, 2))), multiply(c, s(2, 3)))
        last = add(add(multiply(a2, s(n - 3, n - 2)), multiply(b2, s(n - 2, n - 1))),
                   multiply(c2, s(n - 1, n)))
    d = get_aval(f).dtype
    parts = [convert(p, d) for p in (first, interior, last)]
    return joining.concatenate(parts, axis=ax)


def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    """Undo jumps larger than ``discont`` (default ``period / 2``) by adding multiples of
    ``period`` along ``axis``.

    >>> unwrap(fnp.array([0.0, 3.0, 6.5]))
    Array([0.        , 3.        , 0.21681469], dtype=float64)
    """
    check_arraylike("unwrap", p)
    p = asarray(p)
    nd = get_aval(p).ndim
    axis = normalize_axis(axis, nd)
    dd = shape_ops.diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    dtype = result_dtype(dd, period)
    if dtypes.kind(dtype) in "iu":
        interval_high, rem = divmod(period, 2)
        boundary_ambiguous = rem == 0
    else:
        interval_high = period / 2
        boundary_ambiguous = True
    interval_low = -interval_high
    ddmod = add(ufuncs.mod(subtract(dd, interval_low), period), interval_low)
    if boundary_ambiguous:
        ddmod = shape_ops.where(ufuncs.logical_and(ufuncs.equal(ddmod, interval_low),
                                                   ufuncs.greater(dd, 0)), interval_high, ddmod)
    ph_correct = shape_ops.where(ufuncs.less(ufuncs.absolute(dd), discont), 0,
                                 subtract(ddmod, dd))
    n = get_aval(p).shape[axis]
    head = convert(lax.slice_in_dim(p, 0, min(1, n), 1, axis), dtype)
    tail = add(lax.slice_in_dim(p, min(1, n), n, 1, axis), reductions.cumsum(ph_correct, axis))
    return joining.concatenate([head, convert(tail, dtype)], axis=axis)


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """The bin edges :func:`histogram` uses (``bins`` equal-width bins over ``range``, or the
    given increasing edges); ``range`` is required for traced data.

    >>> histogram_bin_edges(fnp.array([0.0, 1.0, 2.0]), bins=2)
    Array([0., 1., 2.], dtype=float64)
    """
    check_arraylike("histogram_bin_edges", a, bins)
    a = shape_ops.ravel(asarray(a))
    if isinstance(bins, str):
        raise NotImplementedError("fnp.histogram: automatic bin estimators ('auto', 'fd', ...) "
                                  "depend on the data; pass a number of bins and range=")
    if np.ndim(bins) == 1:
        edges = asarray(bins)
        c = _concrete(edges)
        if c is not None and np.any(c[:-1] > c[1:]):
            raise ValueError("fnp.histogram: `bins` must increase monotonically, when an array")
        return edges
    if np.ndim(bins) != 0:
        raise ValueError("fnp.histogram: `bins` must be 1d, when an array")
    try:
        n = operator.index(bins)
    except TypeError:
        raise TypeError("fnp.histogram: `bins` must be an integer, a string, or an array") \
            from None
    if n < 1:
        raise ValueError("fnp.histogram: `bins` must be positive, when an integer")
    if range is not None:
        first, last = range
        if first > last:
            raise ValueError("fnp.histogram: max must be larger than min in range parameter")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"fnp.histogram: supplied range of [{first}, {last}] is not finite")
    elif get_aval(a).size == 0:
        first, last = 0, 1
    else:
        c = _concrete(a)
        if c is None:
            raise TypeError("fnp.histogram of traced data needs range= (the bin edges depend on "
                            "the data's minimum and maximum)")
        first, last = c.min(), c.max()
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"fnp.histogram: autodetected range of [{first}, {last}] is not "
                             "finite")
    if first == last:
        first, last = first - 0.5, last + 0.5
    bin_type = np.result_type(first, last, np.zeros(0, get_aval(a).dtype))
    if dtypes.kind(bin_type) in "iub":
        bin_type = np.result_type(bin_type, float)
    from .creation import linspace
    # NumPy scalars from the data's min/max are strong (linspace computes in their dtype);
    # Python bounds are weak (linspace computes in float64).
    first, last = (asarray(v) if isinstance(v, np.generic) else v for v in (first, last))
    edges = linspace(first, last, n + 1, dtype=dtypes.canonicalize_dtype(bin_type))
    c = _concrete(edges)
    if c is not None and np.any(c[:-1] >= c[1:]):
        raise ValueError(f"fnp.histogram: too many bins for data range; cannot create {n} "
                         "finite-sized bins")
    return edges


def histogram(a, bins=10, range=None, density=None, weights=None):
    """Counts (or weight sums) of ``a`` in bins; values outside the bins are ignored and the
    last bin includes its right edge.

    >>> histogram(fnp.array([0.0, 0.5, 2.0]), bins=2)
    (Array([2, 1], dtype=int64), Array([0., 1., 2.], dtype=float64))
    """
    from .sorting import bincount, searchsorted
    check_arraylike("histogram", a, bins, weights, allow_none=True)
    a = asarray(a)
    if weights is not None:
        weights = asarray(weights)
        if get_aval(weights).shape != get_aval(a).shape:
            raise ValueError(f"fnp.histogram: weights should have the same shape as a, got "
                             f"{get_aval(weights).shape} and {get_aval(a).shape}")
        weights = shape_ops.ravel(weights)
    a = shape_ops.ravel(a)
    edges = histogram_bin_edges(a, bins, range)
    nb = get_aval(edges).shape[0] - 1
    idx = subtract(searchsorted(edges, a, side="right"), 1)
    idx = shape_ops.where(ufuncs.equal(a, edges[nb]), nb - 1, idx)
    inside = ufuncs.logical_and(ufuncs.greater_equal(a, edges[0]),
                                ufuncs.less_equal(a, edges[nb]))
    idx = shape_ops.where(inside, idx, nb)  # outside values go to a dropped extra bin
    counts = bincount(idx, weights, length=nb + 1)[:nb]
    # NumPy accumulates in the weights' dtype (int64 counts without weights).
    counts = convert(counts, dtypes.default_int_dtype() if weights is None
                     else get_aval(weights).dtype)
    if density:
        widths = shape_ops.diff(edges)
        return true_divide(true_divide(counts, widths), reductions.sum(counts)), edges
    return counts, edges


# ---- polynomials ------------------------------------------------------------------------------------
def polyval(p, x):
    """The polynomial with coefficients ``p`` (highest degree first) at ``x`` (Horner).

    >>> polyval(fnp.array([1, 0, -1]), fnp.array([2, 3]))
    Array([3, 8], dtype=int64)
    """
    check_arraylike("polyval", p, x)
    p, x = asarray(p), asarray(x)
    x = convert(x, get_aval(x).dtype)  # NumPy makes arrays: Python scalars are not weak
    from .creation import zeros_like
    y = zeros_like(x)
    for i in range(get_aval(p).shape[0]):
        y = add(multiply(y, x), p[i])
    return y


def _poly_pair(name, a1, a2, op):
    a1, a2 = joining.atleast_1d(asarray(a1)), joining.atleast_1d(asarray(a2))
    n1, n2 = get_aval(a1).shape[0], get_aval(a2).shape[0]
    if n1 < n2:
        a1 = lax.pad(a1, lax.full((), 0, get_aval(a1).dtype), [(n2 - n1, 0, 0)])
    elif n2 < n1:
        a2 = lax.pad(a2, lax.full((), 0, get_aval(a2).dtype), [(n1 - n2, 0, 0)])
    return op(a1, a2)


def polyadd(a1, a2):
    """Sum of two polynomials (highest degree first; the shorter one is padded in front).

    >>> polyadd(fnp.array([1, 2]), fnp.array([1, 0, 0]))
    Array([1, 1, 2], dtype=int64)
    """
    check_arraylike("polyadd", a1, a2)
    return _poly_pair("polyadd", a1, a2, add)


def polysub(a1, a2):
    """Difference of two polynomials.

    >>> polysub(fnp.array([1, 2]), fnp.array([1, 0, 0]))
    Array([-1,  1,  2], dtype=int64)
    """
    check_arraylike("polysub", a1, a2)
    return _poly_pair("polysub", a1, a2, subtract)


def _trim_leading_zeros(p):
    c = _concrete(p)
    if c is None:
        raise ValueError("fnp.polymul: trim_leading_zeros=True needs concrete coefficients")
    nz = np.flatnonzero(c)
    return p[nz[0]:] if nz.size else p[-1:]


def polymul(a1, a2, *, trim_leading_zeros=False):
    """Product of two polynomials. NumPy strips leading zero coefficients first, which gives a
    value-dependent length; as in JAX that needs ``trim_leading_zeros=True`` (and concrete
    inputs).

    >>> polymul(fnp.array([1, 1]), fnp.array([1, -1]))
    Array([ 1,  0, -1], dtype=int64)
    """
    check_arraylike("polymul", a1, a2)
    a1, a2 = joining.atleast_1d(asarray(a1)), joining.atleast_1d(asarray(a2))
    a1, a2 = (lax.full((1,), 0, get_aval(a).dtype) if get_aval(a).shape[0] == 0 else a
              for a in (a1, a2))
    if trim_leading_zeros:
        a1, a2 = _trim_leading_zeros(a1), _trim_leading_zeros(a2)
    return convolve(a1, a2)


def polyder(p, m=1):
    """The ``m``-th derivative of a polynomial.

    >>> polyder(fnp.array([1, 1, 1]))
    Array([2, 1], dtype=int64)
    """
    check_arraylike("polyder", p)
    m = int(m)
    if m < 0:
        raise ValueError("fnp.polyder: order of derivative must be positive (see polyint)")
    p = asarray(p)
    for _ in range(m):
        n = get_aval(p).shape[0] - 1
        coef = asarray(np.arange(n, 0, -1, dtype=dtypes.default_int_dtype()))
        p = multiply(p[:-1], coef)
    return p


def polyint(p, m=1, k=None):
    """The ``m``-th antiderivative of a polynomial, integration constants ``k`` (zeros by
    default).

    >>> polyint(fnp.array([3.0, 2.0, 1.0]))
    Array([1., 1., 1., 0.], dtype=float64)
    """
    check_arraylike("polyint", p, k, allow_none=True)
    m = int(m)
    if m < 0:
        raise ValueError("fnp.polyint: order of integral must be positive (see polyder)")
    k = joining.atleast_1d(asarray(np.zeros(m) if k is None else k))
    nk = get_aval(k).shape[0]
    if nk == 1 and m > 1:
        k = multiply(k[0], np.ones(m))
    elif nk < m:
        raise ValueError("fnp.polyint: k must be a scalar or a rank-1 array of length 1 or >m")
    p = asarray(p)
    for i in range(m):
        n = get_aval(p).shape[0]
        scaled = true_divide(p, asarray(np.arange(n, 0, -1, dtype=dtypes.default_int_dtype())))
        p = joining.concatenate([scaled, shape_ops.reshape(k[i], (1,))])
    return p


def poly(seq_of_zeros):
    """Coefficients of the monic polynomial with the given roots; of a square matrix, its
    characteristic polynomial (from its eigenvalues: complex, as in JAX, where NumPy returns
    the real part when the roots come in conjugate pairs).

    >>> poly(fnp.array([1.0, 2.0]))
    Array([ 1., -3.,  2.], dtype=float64)
    """
    from numpy.lib._type_check_impl import mintypecode
    from .linalg_decomp import eigvals
    check_arraylike("poly", seq_of_zeros)
    z = joining.atleast_1d(asarray(seq_of_zeros))
    s = get_aval(z).shape
    if len(s) == 2 and s[0] == s[1] and s[0] != 0:
        z = eigvals(z)
        s = get_aval(z).shape
    if len(s) != 1:
        raise ValueError("fnp.poly: input must be 1d or non-empty square 2d array")
    dt = dtypes.canonicalize_dtype(mintypecode(get_aval(z).dtype.char))
    z = convert(z, dt)
    if s[0] == 0:
        return asarray(1.0)
    a = lax.full((1,), 1, dt)
    for i in range(s[0]):
        a = convolve(a, joining.stack([lax.full((), 1, dt), ufuncs.negative(z[i])]))
    return a


def vander(x, N=None, increasing=False):
    """Vandermonde matrix: columns are powers of ``x`` (decreasing unless ``increasing``),
    built by running products as NumPy does.

    >>> vander(fnp.array([2, 3]), 3)
    Array([[4, 2, 1],
           [9, 3, 1]], dtype=int64)
    """
    check_arraylike("vander", x)
    x = asarray(x)
    if get_aval(x).ndim != 1:
        raise ValueError("fnp.vander: x must be a one-dimensional array or sequence")
    n = get_aval(x).shape[0]
    N = n if N is None else operator.index(N)
    dt = dtypes.promote_types(get_aval(x).dtype, dtypes.default_int_dtype())
    x = convert(x, dt)
    cols = [lax.full((n, 1), 1, dt)] if N > 0 else []
    if N > 1:
        cols.append(reductions.cumprod(shape_ops.broadcast_to(x[:, None], (n, N - 1)), axis=1))
    v = joining.concatenate(cols, axis=1) if cols else lax.full((n, 0), 0, dt)
    return v if increasing else shape_ops.flip(v, axis=1)


# ---- window functions ---------------------------------------------------------------------------
def _window_points(M):
    M = float(operator.index(M))
    if M < 1:
        return None, M
    return asarray(np.arange(1 - M, M, 2, dtype=np.float64)), M


def _cos_window(M, coefficients):
    n, M = _window_points(M)
    if n is None:
        return lax.full((0,), 0, dtypes.default_float_dtype())
    if M == 1:
        return lax.full((1,), 1, dtypes.default_float_dtype())
    out = None
    for k, c in enumerate(coefficients):
        term = c if k == 0 else multiply(c, ufuncs.cos(true_divide(
            multiply(np.pi if k == 1 else 2.0 * np.pi, n), M - 1)))
        out = term if out is None else add(out, term)
    return out


def hamming(M):
    """The Hamming window of ``M`` points.

    >>> hamming(3)
    Array([0.08, 1.  , 0.08], dtype=float64)
    """
    return _cos_window(M, (0.54, 0.46))


def hanning(M):
    """The Hann window of ``M`` points.

    >>> hanning(3)
    Array([0., 1., 0.], dtype=float64)
    """
    return _cos_window(M, (0.5, 0.5))


def blackman(M):
    """The Blackman window of ``M`` points.

    >>> blackman(3)
    Array([-1.38777878e-17,  1.00000000e+00, -1.38777878e-17], dtype=float64)
    """
    return _cos_window(M, (0.42, 0.5, 0.08))


def bartlett(M):
    """The Bartlett (triangular) window of ``M`` points.

    >>> bartlett(5)
    Array([0. , 0.5, 1. , 0.5, 0. ], dtype=float64)
    """
    n, M = _window_points(M)
    if n is None:
        return lax.full((0,), 0, dtypes.default_float_dtype())
    if M == 1:
        return lax.full((1,), 1, dtypes.default_float_dtype())
    return shape_ops.where(ufuncs.less_equal(n, 0), add(1, true_divide(n, M - 1)),
                           subtract(1, true_divide(n, M - 1)))


def kaiser(M, beta):
    """The Kaiser window of ``M`` points and shape ``beta``.

    >>> kaiser(3, 0.0)
    Array([1., 1., 1.], dtype=float64)
    """
    from .misc import i0
    M = float(operator.index(M))
    d = dtypes.default_float_dtype()
    if M == 1:
        return lax.full((1,), 1, d)
    n = asarray(np.arange(0, M, dtype=np.float64))
    alpha = (M - 1) / 2.0
    beta = convert(asarray(beta), d)
    r = ufuncs.power(true_divide(subtract(n, alpha), alpha), 2.0)
    return true_divide(i0(multiply(beta, ufuncs.sqrt(subtract(1, r)))), i0(beta))
