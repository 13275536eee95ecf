"""``functrans.numpy.fft``: NumPy's discrete Fourier transforms (``s=``, ``axes=``, ``norm=``
as in NumPy), built on the ``fft`` primitive, so they differentiate, batch and compile::

    >>> fnp.fft.fft(fnp.array([1.0, 0.0, 0.0, 0.0]))
    Array([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j], dtype=complex128)

Like XLA (and JAX), one transform covers at most three axes.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from .. import lax
from .. import primitives as P
from ..core import dtypes
from ..core.trace import get_aval
from ._core import asarray, check_arraylike, convert, normalize_axis

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
           "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = (None, "backward", "ortho", "forward")


def _complex_of(dtype):
    """NumPy 2's dtype for a transform of ``dtype``: float32/float16 -> complex64, integers
    and bools -> complex128 (each canonicalized)."""
    d = np.dtype(dtype)
    if dtypes.kind(d) == "c":
        return dtypes.canonicalize_dtype(d)
    if d in (dtypes.float16, dtypes.float32):
        return dtypes.canonicalize_dtype(dtypes.complex64)
    return dtypes.canonicalize_dtype(dtypes.complex128)


def _axes_and_lengths(name, x, s, axes, inverse_real):
    """NumPy's rules: ``axes`` default to the last ``len(s)`` axes (all without ``s``), ``s``
    to the input's lengths (for irfft*, 2 * (m - 1) on the last axis)."""
    shape = get_aval(x).shape
    nd = len(shape)
    if s is not None:
        s = tuple(operator.index(n) for n in (s if np.ndim(s) else (s,)))
    if axes is None:
        axes = tuple(range(nd - len(s), nd)) if s is not None else tuple(range(nd))
    else:
        axes = tuple(axes) if np.ndim(axes) else (axes,)
    axes = tuple(normalize_axis(a, nd, "axes") for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"fnp.fft.{name}: repeated axes are not supported, got {axes}")
    if not 1 <= len(axes) <= 3:
        raise ValueError(f"fnp.fft.{name}: transforms over 1 to 3 axes are supported, got "
                         f"axes={axes}")
    if s is None:
        s = tuple(shape[a] for a in axes)
        if inverse_real:
            s = s[:-1] + (2 * (s[-1] - 1),)
    if len(s) != len(axes):
        raise ValueError(f"fnp.fft.{name}: s={s} and axes={axes} must have the same length")
    if any(n < 1 for n in s):
        raise ValueError(f"fnp.fft.{name}: invalid number of data points {s} (must be >= 1)")
    return axes, s


def _fit(x, axes, lengths):
    """Crop or zero-pad ``x`` along ``axes`` to ``lengths``."""
    shape = get_aval(x).shape
    for a, n in zip(axes, lengths):
        have = shape[a]
        if have > n:
            start, limit = [0] * len(shape), list(shape)
            limit[a] = n
            x = lax.slice(x, start, limit)
        elif have < n:
            cfg = [(0, 0, 0)] * len(shape)
            cfg[a] = (0, n - have, 0)
            x = lax.pad(x, np.zeros((), get_aval(x).dtype)[()], cfg)
        shape = get_aval(x).shape
    return x


def _scale(y, norm, n, forward):
    """Apply ``norm``: the primitive's FFT is unscaled and its IFFT divided by n."""
    if norm in (None, "backward"):
        return y
    if norm == "ortho":
        factor = 1 / math.sqrt(n) if forward else math.sqrt(n)
    else:  # "forward"
        factor = 1 / n if forward else n
    return P.mul_p.bind1(y, np.asarray(factor, get_aval(y).dtype)[()])


def _transform(name, a, s, axes, norm, fft_type):
    if norm not in _NORMS:
        raise ValueError(f"fnp.fft.{name}: invalid norm {norm!r}; use 'backward', 'ortho' or "
                         "'forward'")
    check_arraylike(f"fft.{name}", a)
    x = asarray(a)
    d = get_aval(x).dtype
    if fft_type == "RFFT":
        if dtypes.kind(d) == "c":
            raise TypeError(f"fnp.fft.{name} requires a real operand, got dtype {d}")
        x = convert(x, dtypes.real_dtype(_complex_of(d)))
    else:
        x = convert(x, _complex_of(d))
    axes, lengths = _axes_and_lengths(name, x, s, axes, fft_type == "IRFFT")
    fitted = lengths[:-1] + (lengths[-1] // 2 + 1,) if fft_type == "IRFFT" else lengths
    x = _fit(x, axes, fitted)
    nd = get_aval(x).ndim
    rest = [i for i in range(nd) if i not in axes]
    perm = rest + list(axes)
    if perm != list(range(nd)):
        x = lax.transpose(x, perm)
    y = P.fft_p.bind1(x, fft_type=fft_type, fft_lengths=tuple(lengths))
    if perm != list(range(nd)):
        y = lax.transpose(y, list(np.argsort(perm)))
    return _scale(y, norm, math.prod(lengths), fft_type in ("FFT", "RFFT"))


def fft(a, n=None, axis=-1, norm=None):
    """One-dimensional discrete Fourier transform (``numpy.fft.fft``).

    >>> fnp.fft.fft(fnp.array([0.0, 1.0, 0.0, -1.0])).imag
    Array([ 0., -2.,  0.,  2.], dtype=float64)
    """
    return _transform("fft", a, None if n is None else (n,), (axis,), norm, "FFT")


def ifft(a, n=None, axis=-1, norm=None):
    """Inverse of :func:`fft` (``numpy.fft.ifft``).

    >>> fnp.fft.ifft(fnp.array([4.0, 0.0, 0.0, 0.0])).real
    Array([1., 1., 1., 1.], dtype=float64)
    """
    return _transform("ifft", a, None if n is None else (n,), (axis,), norm, "IFFT")


def rfft(a, n=None, axis=-1, norm=None):
    """Transform of a real signal: the ``n // 2 + 1`` non-negative frequencies.

    >>> fnp.fft.rfft(fnp.array([1.0, 1.0, 1.0, 1.0]))
    Array([4.+0.j, 0.+0.j, 0.+0.j], dtype=complex128)
    """
    return _transform("rfft", a, None if n is None else (n,), (axis,), norm, "RFFT")


def irfft(a, n=None, axis=-1, norm=None):
    """Inverse of :func:`rfft`: a real signal of length ``n`` (default ``2 * (m - 1)``).

    >>> fnp.fft.irfft(fnp.array([4.0, 0.0, 0.0]))
    Array([1., 1., 1., 1.], dtype=float64)
    """
    return _transform("irfft", a, None if n is None else (n,), (axis,), norm, "IRFFT")


def fftn(a, s=None, axes=None, norm=None):
    """N-dimensional transform over ``axes`` (all, or the last ``len(s)``; at most three).

    >>> fnp.fft.fftn(fnp.ones((2, 2))).real
    Array([[4., 0.],
           [0., 0.]], dtype=float64)
    """
    return _transform("fftn", a, s, axes, norm, "FFT")


def ifftn(a, s=None, axes=None, norm=None):
    """Inverse of :func:`fftn`.

    >>> fnp.fft.ifftn(fnp.fft.fftn(fnp.eye(2))).real
    Array([[1., 0.],
           [0., 1.]], dtype=float64)
    """
    return _transform("ifftn", a, s, axes, norm, "IFFT")


def rfftn(a, s=None, axes=None, norm=None):
    """N-dimensional transform of a real array (half of the last transformed axis).

    >>> fnp.fft.rfftn(fnp.ones((2, 4))).shape
    (2, 3)
    """
    return _transform("rfftn", a, s, axes, norm, "RFFT")


def irfftn(a, s=None, axes=None, norm=None):
    """Inverse of :func:`rfftn` (last length ``2 * (m - 1)`` unless ``s`` gives it).

    >>> fnp.fft.irfftn(fnp.fft.rfftn(fnp.ones((2, 4)))).shape
    (2, 4)
    """
    return _transform("irfftn", a, s, axes, norm, "IRFFT")


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """Two-dimensional :func:`fftn` over ``axes`` (the last two).

    >>> fnp.fft.fft2(fnp.ones((2, 2))).real
    Array([[4., 0.],
           [0., 0.]], dtype=float64)
    """
    return _transform("fft2", a, s, axes, norm, "FFT")


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """Two-dimensional :func:`ifftn`.

    >>> fnp.fft.ifft2(fnp.fft.fft2(fnp.eye(2))).real
    Array([[1., 0.],
           [0., 1.]], dtype=float64)
    """
    return _transform("ifft2", a, s, axes, norm, "IFFT")


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """Two-dimensional :func:`rfftn`.

    >>> fnp.fft.rfft2(fnp.ones((2, 4))).shape
    (2, 3)
    """
    return _transform("rfft2", a, s, axes, norm, "RFFT")


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """Two-dimensional :func:`irfftn`.

    >>> fnp.fft.irfft2(fnp.fft.rfft2(fnp.ones((2, 4)))).shape
    (2, 4)
    """
    return _transform("irfft2", a, s, axes, norm, "IRFFT")


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """Sample frequencies of an ``n``-point transform with sample spacing ``d``.

    >>> fnp.fft.fftfreq(4)
    Array([ 0.  ,  0.25, -0.5 , -0.25], dtype=float64)
    """
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"fnp.fft.fftfreq: n must be positive, got {n}")
    ks = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
    return _freqs(ks, n, d, dtype)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """Sample frequencies of :func:`rfft` (the ``n // 2 + 1`` non-negative ones).

    >>> fnp.fft.rfftfreq(4)
    Array([0.  , 0.25, 0.5 ], dtype=float64)
    """
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"fnp.fft.rfftfreq: n must be positive, got {n}")
    return _freqs(np.arange(0, n // 2 + 1), n, d, dtype)


def _freqs(ks, n, d, dtype):
    out_dtype = dtypes.default_float_dtype() if dtype is None else \
        dtypes.canonicalize_dtype(dtype, what="fnp.fft frequencies dtype=")
    k = asarray(ks.astype(out_dtype))
    # As NumPy: k * (1 / (n * d)), rounded alike; d may be traced.
    nd = P.mul_p.bind1(np.asarray(n, out_dtype)[()], convert(asarray(d), out_dtype))
    return P.mul_p.bind1(k, P.div_p.bind1(np.asarray(1, out_dtype)[()], nd))


def _shift(name, x, axes, sign):
    from .shape_ops import roll
    check_arraylike(name, x)
    x = asarray(x)
    shape = get_aval(x).shape
    if axes is None:
        axes = tuple(range(len(shape)))
    elif np.ndim(axes) == 0:
        axes = (axes,)
    axes = tuple(normalize_axis(a, len(shape), "axes") for a in axes)
    shifts = tuple(sign * (shape[a] // 2) for a in axes)
    return roll(x, shifts, axes) if axes else x


def fftshift(x, axes=None):
    """Move the zero frequency to the center (``numpy.fft.fftshift``).

    >>> fnp.fft.fftshift(fnp.fft.fftfreq(4))
    Array([-0.5 , -0.25,  0.  ,  0.25], dtype=float64)
    """
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes=None):
    """Inverse of :func:`fftshift`.

    >>> fnp.fft.ifftshift(fnp.fft.fftshift(fnp.arange(5)))
    Array([0, 1, 2, 3, 4], dtype=int64)
    """
    return _shift("ifftshift", x, axes, -1)
