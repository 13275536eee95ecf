"""fft: discrete Fourier transforms over the trailing ``len(fft_lengths)`` axes, as JAX's
``fft`` primitive (XLA's FFT op)::

    >>> fft_p.bind1(np.ones(4, np.complex128), fft_type="FFT", fft_lengths=(4,))
    Array([4.+0.j, 0.+0.j, 0.+0.j, 0.+0.j], dtype=complex128)

``fft_type`` is one of

* ``FFT``: complex -> complex, unnormalized;
* ``IFFT``: complex -> complex, the inverse (divided by the number of points);
* ``RFFT``: real -> complex, the non-negative frequencies (the last axis becomes n // 2 + 1);
* ``IRFFT``: complex -> real, the inverse of RFFT (last axis n // 2 + 1 -> ``fft_lengths[-1]``).

Every type is linear: the JVP applies the same transform to the tangent, and the transposes
are JAX's (FFT and IFFT are symmetric; RFFT's and IRFFT's transposes are scaled to account for
the Hermitian-symmetric half they drop or restore).
"""
from __future__ import annotations

import math

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.trace import Primitive, get_aval

FFT_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")
__all__ = ["fft_p", "FFT_TYPES"]


def _fft_abstract_eval(x, *, fft_type, fft_lengths):
    if fft_type not in FFT_TYPES:
        raise ValueError(f"fft: fft_type must be one of {FFT_TYPES}, got {fft_type!r}")
    lengths = tuple(fft_lengths)
    k = len(lengths)
    if not 1 <= k <= 3:
        raise ValueError(f"fft: 1 to 3 fft_lengths are supported (as in XLA), got {lengths}")
    if x.ndim < k:
        raise TypeError(f"fft: operand {x.str_short()} has fewer than {k} dimensions for "
                        f"fft_lengths={lengths}")
    if any(n < 0 for n in lengths):
        raise ValueError(f"fft: fft_lengths must be non-negative, got {lengths}")
    lead, trail = x.shape[:x.ndim - k], x.shape[x.ndim - k:]
    if fft_type == "RFFT":
        if x.dtype not in (dtypes.float32, dtypes.float64):
            raise TypeError(f"fft: RFFT requires a float32 or float64 operand, got "
                            f"{x.str_short()}")
        if trail != lengths:
            raise TypeError(f"fft: RFFT operand {x.str_short()} must end with the "
                            f"fft_lengths {lengths}")
        shape = lead + lengths[:-1] + (lengths[-1] // 2 + 1,)
        return [ShapedArray(shape, dtypes.complex_dtype(x.dtype))]
    if dtypes.kind(x.dtype) != "c":
        raise TypeError(f"fft: {fft_type} requires a complex operand, got {x.str_short()}")
    if fft_type == "IRFFT":
        want = lengths[:-1] + (lengths[-1] // 2 + 1,)
        if trail != want:
            raise TypeError(f"fft: IRFFT operand {x.str_short()} must end with {want} for "
                            f"fft_lengths {lengths}")
        return [ShapedArray(lead + lengths, dtypes.real_dtype(x.dtype))]
    if trail != lengths:
        raise TypeError(f"fft: {fft_type} operand {x.str_short()} must end with the "
                        f"fft_lengths {lengths}")
    return [ShapedArray(x.shape, x.dtype)]


def _fft_impl(x, *, fft_type, fft_lengths):
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    out_dtype = x.dtype if fft_type in ("FFT", "IFFT") else (
        dtypes.complex_dtype(x.dtype) if fft_type == "RFFT" else dtypes.real_dtype(x.dtype))
    if math.prod(fft_lengths) == 0:
        shape = x.shape[:x.ndim - len(fft_lengths)] + tuple(fft_lengths)
        if fft_type == "RFFT":
            shape = shape[:-1] + (fft_lengths[-1] // 2 + 1,)
        return [np.zeros(shape, out_dtype)]
    if fft_type == "FFT":
        out = np.fft.fftn(x, axes=axes)
    elif fft_type == "IFFT":
        out = np.fft.ifftn(x, axes=axes)
    elif fft_type == "RFFT":
        out = np.fft.rfftn(x, axes=axes)
    else:
        out = np.fft.irfftn(x, s=fft_lengths, axes=axes)
    return [np.asarray(out, out_dtype)]


fft_p = Primitive("fft", impl=_fft_impl, abstract_eval=_fft_abstract_eval)


# ==== transformation rules ========================================================================
from ..transforms.autodiff.rules import Zero, deflinear, is_zero  # noqa: E402
from ..transforms.batching import batching_rules, moveaxis  # noqa: E402
from . import complex_parts as C  # noqa: E402
from . import elementwise as E  # noqa: E402
from . import structural as S  # noqa: E402


def _rfft_transpose(ct, fft_lengths):
    # RFFT = slice(FFT(complex(x))): its transpose pads the cotangent back to the full last
    # axis with zeros, applies FFT (symmetric) and keeps the real part (the transpose of
    # embedding a real operand), as JAX obtains by transposing that composition.
    aval = get_aval(ct)
    n = fft_lengths[-1]
    pad = [(0, 0, 0)] * (aval.ndim - 1) + [(0, n - aval.shape[-1], 0)]
    full = S.pad_p.bind1(ct, np.zeros((), aval.dtype)[()], padding_config=tuple(pad))
    return C.real_p.bind1(fft_p.bind1(full, fft_type="FFT", fft_lengths=fft_lengths))


def _irfft_transpose(ct, fft_lengths):
    # RFFT of the cotangent, scaled by 1/N, with the entries IRFFT uses twice (all but the
    # zero and, for even n, the Nyquist frequency) doubled; conjugated for JAX's convention.
    x = fft_p.bind1(ct, fft_type="RFFT", fft_lengths=fft_lengths)
    aval = get_aval(x)
    m = aval.shape[-1]
    mask = np.full(m, 2.0)
    mask[0] = 1.0
    if fft_lengths[-1] % 2 == 0:
        mask[-1] = 1.0
    scale = (mask / math.prod(fft_lengths)).astype(aval.dtype)
    w = S.broadcast_in_dim_p.bind1(scale, shape=aval.shape,
                                   broadcast_dimensions=(aval.ndim - 1,))
    return C.conj_p.bind1(E.mul_p.bind1(x, w))


def _fft_transpose(cts, x, *, fft_type, fft_lengths):
    ct = cts[0]
    if is_zero(ct):
        return [Zero(x.aval)]
    if fft_type == "RFFT":
        return [_rfft_transpose(ct, fft_lengths)]
    if fft_type == "IRFFT":
        return [_irfft_transpose(ct, fft_lengths)]
    return [fft_p.bind1(ct, fft_type=fft_type, fft_lengths=fft_lengths)]


deflinear(fft_p, _fft_transpose)


def _fft_batch(axis, vals, dims, *, fft_type, fft_lengths):
    # The transform acts on trailing axes: a leading batch axis is just another one.
    (x,), (d,) = vals, dims
    return [fft_p.bind1(moveaxis(x, d, 0), fft_type=fft_type, fft_lengths=fft_lengths)], [0]


batching_rules[fft_p] = _fft_batch
