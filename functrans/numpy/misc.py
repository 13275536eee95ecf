"""Everything else NumPy users reach for: rounding to decimals, comparisons with tolerance,
nan_to_num, interp, convolve, cov, trapezoid, polyval, and dtype utilities.

    >>> allclose(fnp.array([1.0, 2.0]), fnp.array([1.0, 2.0 + 1e-12]))
    Array(True, dtype=bool)
"""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import primitives as P
from ..core import dtypes
from ..core.array import Array
from ..core.trace import Tracer, get_aval
from ._core import asarray, convert, inexact_dtype, normalize_axis, promote
from . import reductions, shape_ops, ufuncs

__all__ = ["round", "around", "round_", "nan_to_num", "isclose", "allclose", "array_equal",
           "array_equiv", "interp", "convolve", "correlate", "cov", "corrcoef", "trapezoid",
           "polyval", "sinc", "real", "imag", "angle", "iscomplexobj", "isrealobj", "isreal",
           "iscomplex", "isscalar", "result_type", "promote_types", "can_cast", "issubdtype",
           "iinfo", "finfo", "dtype", "ix_", "vander", "gcd", "lcm", "frexp", "spacing",
           "histogram", "cumulative_trapezoid"]


def round(a, decimals=0, out=None):
    """Round half to even to ``decimals`` places (NumPy's algorithm: scale, rint, unscale).

    >>> round(fnp.array([0.5, 1.5, 2.675]), 2)
    Array([0.5 , 1.5 , 2.67], dtype=float64)
    """
    a = asarray(a)
    kind = get_aval(a).dtype.kind
    if kind in "biu":
        if decimals >= 0:
            return a
        factor = 10 ** (-decimals)
        f = lax.ops._convert_weak(factor, get_aval(a).dtype)
        return ufuncs.multiply(ufuncs.floor_divide(ufuncs.add(a, f // 2), f), f)
    if decimals == 0:
        return ufuncs.rint(a)
    factor = lax.ops._convert_weak(10.0 ** abs(decimals), get_aval(a).dtype)
    if decimals > 0:
        return P.div_p.bind1(ufuncs.rint(P.mul_p.bind1(a, factor)), factor)
    return P.mul_p.bind1(ufuncs.rint(P.div_p.bind1(a, factor)), factor)


around = round_ = round


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """Replace NaN with ``nan`` and infinities with the largest finite values (or given)."""
    x = asarray(x)
    d = get_aval(x).dtype
    if d.kind != "f":
        return x
    info = np.finfo(d)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    x = shape_ops.where(ufuncs.isnan(x), lax.full((), nan, d), x)
    x = shape_ops.where(P.eq_p.bind1(x, lax.full((), np.inf, d)), lax.full((), posinf, d), x)
    return shape_ops.where(P.eq_p.bind1(x, lax.full((), -np.inf, d)), lax.full((), neginf, d), x)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|a - b| <= atol + rtol * |b|`` elementwise (infinities must match exactly)."""
    a, b = promote(asarray(a), asarray(b))
    if get_aval(a).dtype.kind != "f":
        d = inexact_dtype(get_aval(a).dtype)
        a, b = convert(a, d), convert(b, d)
    diff = ufuncs.absolute(ufuncs.subtract(a, b))
    tol = ufuncs.add(atol, ufuncs.multiply(rtol, ufuncs.absolute(b)))
    close = ufuncs.less_equal(diff, tol)
    both_inf = ufuncs.logical_and(ufuncs.isinf(a), ufuncs.isinf(b))
    close = shape_ops.where(both_inf, ufuncs.equal(a, b), close)
    if equal_nan:
        close = ufuncs.logical_or(close, ufuncs.logical_and(ufuncs.isnan(a), ufuncs.isnan(b)))
    return close


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True if every element is :func:`isclose`."""
    return reductions.all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan=False):
    """True if shapes match and all elements are equal."""
    a1, a2 = asarray(a1), asarray(a2)
    if get_aval(a1).shape != get_aval(a2).shape:
        return asarray(False)
    eq = ufuncs.equal(a1, a2)
    if equal_nan:
        eq = ufuncs.logical_or(eq, ufuncs.logical_and(ufuncs.isnan(a1), ufuncs.isnan(a2)))
    return reductions.all(eq)


def array_equiv(a1, a2):
    """True if the arrays are equal after broadcasting."""
    a1, a2 = asarray(a1), asarray(a2)
    try:
        np.broadcast_shapes(get_aval(a1).shape, get_aval(a2).shape)
    except ValueError:
        return asarray(False)
    return reductions.all(ufuncs.equal(a1, a2))


def interp(x, xp, fp, left=None, right=None, period=None):
    """1-D piecewise-linear interpolation (``xp`` increasing)."""
    from .sorting import searchsorted
    from .indexing import take
    if period is not None:
        raise NotImplementedError("fnp.interp: period= is not supported")
    x, xp, fp = asarray(x), asarray(xp), asarray(fp)
    d = inexact_dtype(np.result_type(get_aval(x).dtype, get_aval(xp).dtype, get_aval(fp).dtype))
    x, xp, fp = convert(x, d), convert(xp, d), convert(fp, d)
    n = get_aval(xp).shape[0]
    i = shape_ops.clip(searchsorted(xp, x, side="right"), 1, n - 1)
    x0, x1 = take(xp, i - 1), take(xp, i)
    y0, y1 = take(fp, i - 1), take(fp, i)
    dx = x1 - x0
    t = shape_ops.where(dx == 0, lax.full((), 0, d), (x - x0) / shape_ops.where(
        dx == 0, lax.full((), 1, d), dx))
    y = y0 + t * (y1 - y0)
    y = shape_ops.where(x < take(xp, 0), fp[0] if left is None else left, y)
    return shape_ops.where(x > take(xp, n - 1), fp[n - 1] if right is None else right, y)


def convolve(a, v, mode="full"):
    """Discrete linear convolution of 1-D arrays (modes full, same, valid)."""
    a, v = asarray(a), asarray(v)
    return _correlate(a, shape_ops.flip(v), mode)


def correlate(a, v, mode="valid"):
    """Cross-correlation of 1-D arrays (modes valid, same, full)."""
    return _correlate(asarray(a), asarray(v), mode)


def _correlate(a, v, mode):
    from .linalg_ops import matmul
    a, v = promote(a, v)
    n, m = get_aval(a).shape[0], get_aval(v).shape[0]
    if n == 0 or m == 0:
        raise ValueError("convolve/correlate: inputs cannot be empty")
    if mode == "full":
        lo, hi = m - 1, m - 1
    elif mode == "same":
        lo = m // 2
        hi = m - 1 - lo
    elif mode == "valid":
        lo = hi = 0
    else:
        raise ValueError(f"mode must be 'full', 'same' or 'valid', got {mode!r}")
    if mode == "valid" and n < m:
        a, v = v, a
        n, m = m, n
    padded = lax.pad(a, lax.full((), 0, get_aval(a).dtype), [(lo, hi, 0)])
    length = get_aval(padded).shape[0] - m + 1
    idx = np.arange(length)[:, None] + np.arange(m)[None, :]
    from .indexing import take
    windows = take(padded, asarray(idx), axis=0)
    return matmul(windows, v)


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    """Covariance matrix of the variables in rows (``rowvar``) or columns of ``m``."""
    if fweights is not None or aweights is not None:
        raise NotImplementedError("fnp.cov: fweights/aweights are not supported")
    x = shape_ops.atleast_2d(asarray(m))
    if not rowvar and get_aval(x).shape[0] != 1:
        x = x.T
    if y is not None:
        yy = shape_ops.atleast_2d(asarray(y))
        if not rowvar and get_aval(yy).shape[0] != 1:
            yy = yy.T
        x = shape_ops.concatenate([x, yy], 0)
    d = inexact_dtype(get_aval(x).dtype)
    x = convert(x, d)
    n = get_aval(x).shape[1]
    ddof = (0 if bias else 1) if ddof is None else ddof
    xc = x - reductions.mean(x, axis=1, keepdims=True)
    c = (xc @ xc.T) / max(n - ddof, 0)
    return shape_ops.squeeze(c) if get_aval(c).shape == (1, 1) else c


def corrcoef(x, y=None, rowvar=True):
    """Pearson correlation coefficients."""
    c = cov(x, y, rowvar)
    if get_aval(c).ndim == 0:
        return c / c
    from .creation import diagonal
    dd = ufuncs.sqrt(diagonal(c))
    c = c / dd[:, None] / dd[None, :]
    return shape_ops.clip(c, -1, 1)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral of ``y`` by the trapezoidal rule along ``axis``."""
    y = asarray(y)
    axis = normalize_axis(axis, get_aval(y).ndim)
    n = get_aval(y).shape[axis]
    y0, y1 = lax.slice_in_dim(y, 0, n - 1, 1, axis), lax.slice_in_dim(y, 1, n, 1, axis)
    if x is None:
        return reductions.sum((y0 + y1) * (dx / 2.0), axis=axis)
    dxs = shape_ops.diff(asarray(x), axis=axis if get_aval(asarray(x)).ndim > 1 else -1)
    if get_aval(dxs).ndim == 1 and get_aval(y).ndim > 1:
        shape = [1] * get_aval(y).ndim
        shape[axis] = n - 1
        dxs = shape_ops.reshape(dxs, tuple(shape))
    return reductions.sum((y0 + y1) * dxs / 2.0, axis=axis)


def cumulative_trapezoid(y, x=None, dx=1.0, axis=-1):
    y = asarray(y)
    axis = normalize_axis(axis, get_aval(y).ndim)
    n = get_aval(y).shape[axis]
    y0, y1 = lax.slice_in_dim(y, 0, n - 1, 1, axis), lax.slice_in_dim(y, 1, n, 1, axis)
    step = dx if x is None else shape_ops.diff(asarray(x))
    return reductions.cumsum((y0 + y1) * step / 2.0, axis=axis)


def polyval(p, x):
    """Evaluate the polynomial with coefficients ``p`` (highest degree first) at ``x``."""
    p, x = asarray(p), asarray(x)
    y = lax.full_like(x, 0, np.result_type(get_aval(p).dtype, get_aval(x).dtype))
    for i in range(get_aval(p).shape[0]):
        y = y * x + p[i]
    return y


def vander(x, N=None, increasing=False):
    x = asarray(x)
    n = get_aval(x).shape[0] if N is None else N
    powers = np.arange(n) if increasing else np.arange(n)[::-1]
    return ufuncs.power(x[:, None], asarray(powers))


def sinc(x):
    """``sin(pi x) / (pi x)`` with ``sinc(0) = 1``."""
    x = asarray(x)
    x = convert(x, inexact_dtype(get_aval(x).dtype))
    d = get_aval(x).dtype
    zero = P.eq_p.bind1(x, lax.full((), 0, d))
    safe = shape_ops.where(zero, lax.full((), 1, d), x)
    px = safe * np.pi
    return shape_ops.where(zero, lax.full((), 1, d), ufuncs.sin(px) / px)


def real(x):
    return asarray(x)


def imag(x):
    from .creation import zeros_like
    return zeros_like(x)


def angle(z, deg=False):
    z = asarray(z)
    d = inexact_dtype(get_aval(z).dtype)
    a = shape_ops.where(z < 0, lax.full((), np.pi, d), lax.full((), 0, d))
    return ufuncs.rad2deg(a) if deg else a


def iscomplexobj(x):
    return False


def isrealobj(x):
    return True


def isreal(x):
    from .creation import ones_like
    return ones_like(x, dtype=bool)


def iscomplex(x):
    from .creation import zeros_like
    return zeros_like(x, dtype=bool)


def isscalar(element):
    """True for Python/NumPy scalars and 0-d arrays (as JAX)."""
    if isinstance(element, (Array, Tracer)):
        return get_aval(element).ndim == 0
    return np.isscalar(element)


def result_type(*arrays_and_dtypes):
    """The NEP 50 result dtype of the arguments."""
    from ._core import result_dtype
    return result_dtype(*arrays_and_dtypes)


def promote_types(a, b):
    return dtypes.promote_types(a, b)


def can_cast(from_, to, casting="safe"):
    from_ = get_aval(from_).dtype if isinstance(from_, (Array, Tracer)) else from_
    return np.can_cast(from_, to, casting)


def issubdtype(arg1, arg2):
    return np.issubdtype(arg1, arg2)


iinfo = dtypes.iinfo
finfo = dtypes.finfo
dtype = np.dtype


def ix_(*args):
    """Open mesh from sequences: index arrays shaped to broadcast against each other."""
    out = []
    n = len(args)
    for k, a in enumerate(args):
        a = asarray(a)
        if get_aval(a).dtype == dtypes.bool_:
            from .sorting import nonzero
            a = nonzero(a)[0]
        out.append(shape_ops.reshape(a, (1,) * k + (-1,) + (1,) * (n - k - 1)))
    return tuple(out)


def gcd(x1, x2):
    """Greatest common divisor (Euclid's algorithm, a fixed number of steps)."""
    a, b = promote(ufuncs.absolute(asarray(x1)), ufuncs.absolute(asarray(x2)))
    a, b = shape_ops.broadcast_arrays(a, b)
    d = get_aval(a).dtype
    if d.kind not in "iu":
        raise TypeError(f"fnp.gcd requires integer inputs, got {d}")
    zero = lax.full((), 0, d)
    for _ in range(2 * 8 * d.itemsize):  # Euclid needs O(log) steps: 2*bits is enough
        nz = P.ne_p.bind1(b, zero)
        safe_b = shape_ops.where(nz, b, lax.full((), 1, d))
        a, b = shape_ops.where(nz, b, a), shape_ops.where(nz, P.rem_p.bind1(a, safe_b), zero)
    return a


def lcm(x1, x2):
    """Least common multiple."""
    a, b = promote(ufuncs.absolute(asarray(x1)), ufuncs.absolute(asarray(x2)))
    g = gcd(a, b)
    d = get_aval(g).dtype
    safe = shape_ops.where(P.eq_p.bind1(g, lax.full((), 0, d)), lax.full((), 1, d), g)
    return shape_ops.where(P.eq_p.bind1(g, lax.full((), 0, d)), lax.full((), 0, d),
                           ufuncs.multiply(a, ufuncs.floor_divide(b, safe)))


def frexp(x):
    """Mantissa in [0.5, 1) and exponent with ``x = m * 2**e``."""
    x = asarray(x)
    x = convert(x, inexact_dtype(get_aval(x).dtype))
    d = get_aval(x).dtype
    ax = ufuncs.absolute(x)
    finite_nz = P.and_p.bind1(P.is_finite_p.bind1(x), P.ne_p.bind1(x, lax.full((), 0, d)))
    safe = shape_ops.where(finite_nz, ax, lax.full((), 1, d))
    e = ufuncs.floor(ufuncs.log2(safe)) + 1
    m = x / ufuncs.exp2(e)
    # Correct rounding at powers of two.
    over = ufuncs.greater_equal(ufuncs.absolute(m), 1.0)
    m = shape_ops.where(over, m / 2, m)
    e = shape_ops.where(over, e + 1, e)
    under = ufuncs.less(ufuncs.absolute(m), 0.5)
    m = shape_ops.where(P.and_p.bind1(under, finite_nz), m * 2, m)
    e = shape_ops.where(P.and_p.bind1(under, finite_nz), e - 1, e)
    m = shape_ops.where(finite_nz, m, x)
    e = shape_ops.where(finite_nz, e, lax.full((), 0, d))
    return m, convert(e, dtypes.int32)


def spacing(x):
    """Distance to the next larger-magnitude float."""
    x = asarray(x)
    x = convert(x, inexact_dtype(get_aval(x).dtype))
    inf = lax.full((), np.inf, get_aval(x).dtype)
    toward = shape_ops.where(ufuncs.signbit(x), -inf, inf)
    return ufuncs.nextafter(x, toward) - x


def histogram(a, bins=10, range=None, weights=None, density=None):
    """Counts of ``a`` in ``bins`` equal-width bins over ``range`` (static bins)."""
    a = shape_ops.ravel(asarray(a))
    if isinstance(bins, int):
        if range is None:
            from .indexing import _concrete
            c = _concrete(a)
            if c is None:
                raise TypeError("fnp.histogram on traced input needs range=")
            range = (c.min(), c.max()) if c.size else (0.0, 1.0)
        lo, hi = float(range[0]), float(range[1])
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        from .creation import linspace
        edges = linspace(lo, hi, bins + 1)
    else:
        edges = asarray(bins)
    from .sorting import searchsorted, bincount
    nb = get_aval(edges).shape[0] - 1
    idx = searchsorted(edges, a, side="right") - 1
    last = P.eq_p.bind1(a, lax.full((), 0, get_aval(a).dtype) + edges[nb])
    idx = shape_ops.where(last, nb - 1, idx)
    inside = ufuncs.logical_and(ufuncs.greater_equal(a, edges[0]), ufuncs.less_equal(a, edges[nb]))
    idx = shape_ops.where(inside, idx, nb)  # out-of-range rows go to a dropped bin
    w = None if weights is None else shape_ops.ravel(asarray(weights))
    counts = bincount(idx, w, length=nb + 1)[:nb]
    if density:
        widths = shape_ops.diff(edges)
        counts = counts / reductions.sum(counts) / widths
    return counts, edges
