"""Portable route: polynomial and rational approximations written in plain Numba that
LLVM's loop vectorizer turns into SIMD code on any target (x86, ARM, any OS).

Rules that keep them vectorizable and exact where it matters:

- no branches that LLVM cannot turn into selects, no calls except intrinsics; 2**k is built
  from exponent bits (a ``pow`` call never vectorizes);
- every constant is a typed NumPy scalar, so float32 code stays float32;
- compiled with only the ``contract`` fast-math flag: FMA contraction is welcome (it only
  makes the Cody-Waite reductions more exact), but reassociation would undo the
  ``(x + SHIFT) - SHIFT`` rounding trick and the error-free sums;
- results are fixed up with selects for nan, infinities, zeros and tiny arguments.

Coefficients: Taylor coefficients where they suffice (exp, expm1, log in float32, sin in
float32); the fdlibm minimax coefficients (Sun Microsystems, freely redistributable)
for float64 log/log1p/sin/cos, float32 cos, and erf.
"""
from __future__ import annotations

import hashlib
import math
import pathlib

import numba
import numpy as np
from numba.core.caching import FunctionCache

from functrans.transforms.lowering.fastmath_ir import (bits_f32, bits_f64, f32_bits, f64_bits,
                                                       make_wide_fixup)

__all__ = ["IMPLS", "SIN_COS_LIMITS", "make_logistic"]

F = np.float32
D = np.float64
_FLAGS = dict(error_model="numpy", fastmath={"contract"}, nogil=True)
_SOURCES = ("fastmath_ir.py", "fastmath_libmvec.py", "fastmath_poly.py")
_DIGEST = hashlib.sha256(b"".join(
    (pathlib.Path(__file__).with_name(name)).read_bytes() for name in _SOURCES)).hexdigest()


class _SourceKeyedCache(FunctionCache):
    """Numba's on-disk cache, keyed also by the sources of this layer: Numba only checks
    the file of the function itself, and these helpers inline intrinsics from other files."""

    def _index_key(self, sig, codegen):
        return super()._index_key(sig, codegen) + (_DIGEST,)


def _jit(fn):
    """njit with the flags above, cached on disk: a process that finds the helpers there
    skips compiling them (about 1 s for a kernel using eight functions)."""
    disp = numba.njit(**_FLAGS)(fn)
    try:
        disp._cache = _SourceKeyedCache(disp.py_func)
    except Exception:  # no writable cache location: compile in each process
        pass
    return disp


# -- float32 exp / expm1 -------------------------------------------------------------------

_F0, _F1, _F2, _FH = F(0), F(1), F(2), F(0.5)
_F_INF, _F_NAN = F(np.inf), F(np.nan)
_F_SHIFT = F(12582912.0)            # 1.5 * 2**23: x + SHIFT rounds x to an integer
_F_LOG2E = F(1.4426950408889634)
_F_LN2 = F(math.log(2))
_F_LN2HI = F(0.693145751953125)     # 15 bits: k * LN2HI is exact for |k| < 512
_F_LN2LO = F(1.428606765330187e-06)
_FE = [F(1 / math.factorial(n)) for n in range(9)]
_FE2, _FE3, _FE4, _FE5, _FE6, _FE7, _FE8 = _FE[2:]


@_jit
def _scale_f32(p, k):
    """p * 2**k for -252 <= k <= 254 (callers clamp x so), in two steps: subnormal results are
    rounded once and overflow is exact."""
    k1 = k >> 1
    k2 = k - k1
    return p * bits_f32((k1 + 127) << 23) * bits_f32((k2 + 127) << 23)


@_jit
def _reduce_ln2_f32(x):
    """x = k ln2 + r with |r| <= ln2/2; k is returned as an integer."""
    t = x * _F_LOG2E + _F_SHIFT
    k = t - _F_SHIFT
    r = x - k * _F_LN2HI
    r = r - k * _F_LN2LO
    return r, f32_bits(t) - f32_bits(_F_SHIFT)


@_jit
def _exp_scaled_f32(x, m):
    """exp(x) * 2**m for m in {-1, 0}; clamping x keeps k in _scale_f32's range."""
    xc = x
    if xc > F(100):
        xc = F(100)
    if xc < F(-110):
        xc = F(-110)
    if xc != xc:  # nan: compute on 0, restored below
        xc = _F0
    r, k = _reduce_ln2_f32(xc)
    # Taylor to degree 7: truncation 2e-9 relative on |r| <= ln2/2
    q = _FE2 + r * (_FE3 + r * (_FE4 + r * (_FE5 + r * (_FE6 + r * _FE7))))
    res = _scale_f32(_F1 + (r + r * r * q), k + m)
    if x != x:
        res = x
    return res


@_jit
def _exp_f32(x):
    return _exp_scaled_f32(x, 0)


@_jit
def _expm1_core_f32(x):
    xc = x
    if xc > F(100):
        xc = F(100)
    if xc < F(-30):   # expm1(-30) rounds to -1
        xc = F(-30)
    if xc != xc:  # nan: compute on 0, restored below
        xc = _F0
    r, k = _reduce_ln2_f32(xc)
    q = _FE2 + r * (_FE3 + r * (_FE4 + r * (_FE5 + r * (_FE6 + r * (_FE7 + r * _FE8)))))
    p = r + r * r * q
    # expm1(x) = 2**k * (p + (1 - 2**-k)); 1 - 2**-k is exact for -44 <= k <= 24 and below
    # half an ulp of 1 beyond 24, where it is clamped to stay representable.
    kk = k if k < 30 else 30
    t = _F1 - bits_f32((127 - kk) << 23)
    res = _scale_f32(p + t, k)
    if x != x:
        res = x
    return res


@_jit
def _expm1_f32(x):
    res = _expm1_core_f32(x)
    if abs(x) < F(2.0 ** -25):  # keeps -0.0 and subnormals exact
        res = x
    return res


@_jit
def _exp2_f32(x):
    xc = x
    if xc > F(200):
        xc = F(200)
    if xc < F(-200):
        xc = F(-200)
    if xc != xc:  # nan: compute on 0, restored below
        xc = _F0
    t = xc + _F_SHIFT
    k = t - _F_SHIFT
    r = (xc - k) * _F_LN2
    q = _FE2 + r * (_FE3 + r * (_FE4 + r * (_FE5 + r * (_FE6 + r * _FE7))))
    res = _scale_f32(_F1 + (r + r * r * q), f32_bits(t) - f32_bits(_F_SHIFT))
    if x != x:
        res = x
    return res


# -- float32 log family --------------------------------------------------------------------

_F_SQRTH_BITS = 0x3F3504F3          # sqrt(1/2)
_F_MANT_MASK = -(1 << 23)           # clears the mantissa field (as a signed mask)
_F_TINY_NORMAL = F(1.1754944e-38)
_FLG1, _FLG2, _FLG3, _FLG4 = F(2 / 3), F(2 / 5), F(2 / 7), F(2 / 9)   # 2 atanh(s) series
_F_LOG2E_HI = F(1.4426950408889634)
_F_LOG10_2HI = F(0.30102539)        # 0x3e9a2000: k * hi exact
_F_LOG10_2LO = F(math.log10(2) - 0.30102539)
_F_LOG10E = F(math.log10(math.e))


@_jit
def _log_parts_f32(x):
    """x = 2**k * (1 + f) with sqrt(1/2) <= 1 + f < sqrt(2), for positive finite x."""
    sub = x < _F_TINY_NORMAL
    xs = x * F(8388608.0) if sub else x
    ix = f32_bits(xs)
    tmp = ix - _F_SQRTH_BITS
    k = (tmp >> 23) - (23 if sub else 0)
    f = bits_f32(ix - (tmp & _F_MANT_MASK)) - _F1
    return f, k


@_jit
def _log1p_small_f32(f):
    """log(1 + f) - f for |f| < 0.42, in fdlibm's form: s (hfsq + R) - hfsq."""
    s = f / (_F2 + f)
    z = s * s
    r = z * (_FLG1 + z * (_FLG2 + z * (_FLG3 + z * _FLG4)))
    hfsq = _FH * f * f
    return s * (hfsq + r) - hfsq


@_jit
def _log_edges_f32(x, res):
    if x < _F0:
        res = _F_NAN
    if x == _F0:
        res = -_F_INF
    if x == _F_INF:
        res = x
    if x != x:
        res = x
    return res


@_jit
def _log_f32(x):
    f, k = _log_parts_f32(x)
    dk = F(k)
    res = dk * _F_LN2HI + (f + (_log1p_small_f32(f) + dk * _F_LN2LO))
    return _log_edges_f32(x, res)


@_jit
def _log2_f32(x):
    f, k = _log_parts_f32(x)
    res = F(k) + (f + _log1p_small_f32(f)) * _F_LOG2E_HI
    return _log_edges_f32(x, res)


@_jit
def _log10_f32(x):
    f, k = _log_parts_f32(x)
    dk = F(k)
    res = dk * _F_LOG10_2HI + ((f + _log1p_small_f32(f)) * _F_LOG10E + dk * _F_LOG10_2LO)
    return _log_edges_f32(x, res)


@_jit
def _log1p_f32(x):
    u = _F1 + x
    f, k = _log_parts_f32(u)
    # c: the rounding error of u = 1 + x, relative to u (both subtractions below are exact)
    c = (_F1 - (u - x)) if u >= _F2 else (x - (u - _F1))
    dk = F(k)
    res = dk * _F_LN2HI + (f + (_log1p_small_f32(f) + (dk * _F_LN2LO + c / u)))
    if abs(x) < F(2.0 ** -24):
        res = x
    if x < -_F1:
        res = _F_NAN
    if x == -_F1:
        res = -_F_INF
    if x == _F_INF:
        res = x
    if x != x:
        res = x
    return res


# -- float64 exp / expm1 -------------------------------------------------------------------

_D0, _D1, _D2, _DH = D(0), D(1), D(2), D(0.5)
_D_INF, _D_NAN = D(np.inf), D(np.nan)
_D_SHIFT = D(6755399441055744.0)    # 1.5 * 2**52
_D_LOG2E = D(1.4426950408889634)
_D_LN2 = D(math.log(2))
_D_LN2HI = D(6.93147180369123816490e-01)   # 32 bits: k * LN2HI exact for |k| < 2**21
_D_LN2LO = D(1.90821492927058770002e-10)
_DE = [D(1 / math.factorial(n)) for n in range(15)]
_DE2, _DE3, _DE4, _DE5, _DE6, _DE7, _DE8, _DE9, _DE10, _DE11, _DE12, _DE13 = _DE[2:14]


@_jit
def _scale_f64(p, k):
    """p * 2**k for -2044 <= k <= 2046, as _scale_f32."""
    k1 = k >> 1
    k2 = k - k1
    return p * bits_f64((k1 + 1023) << 52) * bits_f64((k2 + 1023) << 52)


@_jit
def _reduce_ln2_f64(x):
    t = x * _D_LOG2E + _D_SHIFT
    k = t - _D_SHIFT
    r = x - k * _D_LN2HI
    r = r - k * _D_LN2LO
    return r, f64_bits(t) - f64_bits(_D_SHIFT)


@_jit
def _exp_poly_f64(r):
    """exp(r) - 1 - r over r**2, Taylor to degree 13 (truncation 4e-18 on |r| <= ln2/2)."""
    return _DE2 + r * (_DE3 + r * (_DE4 + r * (_DE5 + r * (_DE6 + r * (_DE7 + r * (
        _DE8 + r * (_DE9 + r * (_DE10 + r * (_DE11 + r * (_DE12 + r * _DE13))))))))))


@_jit
def _exp_scaled_f64(x, m):
    xc = x
    if xc > D(800):
        xc = D(800)
    if xc < D(-800):
        xc = D(-800)
    if xc != xc:  # nan: compute on 0, restored below
        xc = _D0
    r, k = _reduce_ln2_f64(xc)
    res = _scale_f64(_D1 + (r + r * r * _exp_poly_f64(r)), k + m)
    if x != x:
        res = x
    return res


@_jit
def _exp_f64(x):
    return _exp_scaled_f64(x, 0)


@_jit
def _expm1_core_f64(x):
    xc = x
    if xc > D(800):
        xc = D(800)
    if xc < D(-60):
        xc = D(-60)
    if xc != xc:  # nan: compute on 0, restored below
        xc = _D0
    r, k = _reduce_ln2_f64(xc)
    p = r + r * r * _exp_poly_f64(r)
    kk = k if k < 60 else 60
    t = _D1 - bits_f64((1023 - kk) << 52)
    res = _scale_f64(p + t, k)
    if x != x:
        res = x
    return res


@_jit
def _expm1_f64(x):
    res = _expm1_core_f64(x)
    if abs(x) < D(2.0 ** -54):
        res = x
    return res


@_jit
def _exp2_f64(x):
    xc = x
    if xc > D(1100):
        xc = D(1100)
    if xc < D(-1100):
        xc = D(-1100)
    if xc != xc:  # nan: compute on 0, restored below
        xc = _D0
    t = xc + _D_SHIFT
    k = t - _D_SHIFT
    r = (xc - k) * _D_LN2
    res = _scale_f64(_D1 + (r + r * r * _exp_poly_f64(r)), f64_bits(t) - f64_bits(_D_SHIFT))
    if x != x:
        res = x
    return res


# -- float64 log family --------------------------------------------------------------------

_D_SQRTH_BITS = 0x3FE6A09E667F3BCD
_D_MANT_MASK = -(1 << 52)
_D_TINY_NORMAL = D(2.2250738585072014e-308)
_LG1 = D(6.666666666666735130e-01)
_LG2 = D(3.999999999940941908e-01)
_LG3 = D(2.857142874366239149e-01)
_LG4 = D(2.222219843214978396e-01)
_LG5 = D(1.818357216161805012e-01)
_LG6 = D(1.531383769920937332e-01)
_LG7 = D(1.479819860511658591e-01)
# 1/ln2 and 1/ln10 split so that (21-bit) * hi is exact (fdlibm e_log2.c, e_log10.c)
_D_IVLN2HI = D(1.44269504072144627571e+00)
_D_IVLN2LO = D(1.67517131648865118353e-10)
_D_IVLN10HI = D(4.34294481878168880939e-01)
_D_IVLN10LO = D(2.50829467116452752298e-11)
_D_LOG10_2HI = D(3.01029995663611771306e-01)
_D_LOG10_2LO = D(3.69423907715893078616e-13)


@_jit
def _log_parts_f64(x):
    sub = x < _D_TINY_NORMAL
    xs = x * D(18014398509481984.0) if sub else x
    ix = f64_bits(xs)
    tmp = ix - _D_SQRTH_BITS
    k = (tmp >> 52) - (54 if sub else 0)
    f = bits_f64(ix - (tmp & _D_MANT_MASK)) - _D1
    return f, k


@_jit
def _log1p_small_f64(f):
    s = f / (_D2 + f)
    z = s * s
    w = z * z
    r = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7))) + w * (_LG2 + w * (_LG4 + w * _LG6))
    hfsq = _DH * f * f
    return s * (hfsq + r) - hfsq


@_jit
def _log_edges_f64(x, res):
    if x < _D0:
        res = _D_NAN
    if x == _D0:
        res = -_D_INF
    if x == _D_INF:
        res = x
    if x != x:
        res = x
    return res


@_jit
def _log_f64(x):
    f, k = _log_parts_f64(x)
    dk = D(k)
    res = dk * _D_LN2HI + (f + (_log1p_small_f64(f) + dk * _D_LN2LO))
    return _log_edges_f64(x, res)


@_jit
def _split_log1p_f64(f):
    """log(1 + f) = hi + lo with hi carrying 21 bits, so hi * (21+ bit constant) is exact."""
    g = _log1p_small_f64(f)
    hi = bits_f64(f64_bits(f + g) & -(1 << 32))
    return hi, (f - hi) + g    # f - hi is exact: hi is within a factor 2 of f


@_jit
def _log2_f64(x):
    f, k = _log_parts_f64(x)
    hi, lo = _split_log1p_f64(f)
    val_hi = hi * _D_IVLN2HI
    val_lo = (lo + hi) * _D_IVLN2LO + lo * _D_IVLN2HI
    y = D(k)
    w = y + val_hi
    val_lo = val_lo + ((y - w) + val_hi)
    return _log_edges_f64(x, val_lo + w)


@_jit
def _log10_f64(x):
    f, k = _log_parts_f64(x)
    hi, lo = _split_log1p_f64(f)
    y = D(k)
    val_hi = hi * _D_IVLN10HI
    y2 = y * _D_LOG10_2HI
    val_lo = y * _D_LOG10_2LO + (lo + hi) * _D_IVLN10LO + lo * _D_IVLN10HI
    w = y2 + val_hi
    val_lo = val_lo + ((y2 - w) + val_hi)
    return _log_edges_f64(x, val_lo + w)


@_jit
def _log1p_f64(x):
    u = _D1 + x
    f, k = _log_parts_f64(u)
    c = (_D1 - (u - x)) if u >= _D2 else (x - (u - _D1))
    dk = D(k)
    res = dk * _D_LN2HI + (f + (_log1p_small_f64(f) + (dk * _D_LN2LO + c / u)))
    if abs(x) < D(2.0 ** -54):
        res = x
    if x < -_D1:
        res = _D_NAN
    if x == -_D1:
        res = -_D_INF
    if x == _D_INF:
        res = x
    if x != x:
        res = x
    return res


# -- sin / cos -----------------------------------------------------------------------------

# Beyond these magnitudes the reductions below lose exactness (k * pio2_1 must stay exact);
# there a vectorized fixup hands the few lanes concerned to libm in double precision.
SIN_COS_LIMITS = {numba.float32: 4.0e8, numba.float64: 1.6e6}
_fix_sin = make_wide_fixup("sin", SIN_COS_LIMITS)
_fix_cos = make_wide_fixup("cos", SIN_COS_LIMITS)

_INVPIO2 = D(6.36619772367581382433e-01)
# float32 inputs: reduce in double with pi/2 = pio2_1 (25 bits) + pio2_1t, exact enough
# for |x| < 2**28 pi/2 (fdlibm __rem_pio2f)
_PIO2_1F = D(1.57079631090164184570e+00)
_PIO2_1TF = D(1.58932547735281966916e-08)
_S1, _S2, _S3, _S4, _S5 = (D((-1) ** n / math.factorial(2 * n + 1)) for n in range(1, 6))
_C0F = D(float.fromhex("-0x1ffffffd0c5e81p-54"))   # fdlibm __cosdf: |error| < 2**-34.1
_C1F = D(float.fromhex("0x155553e1053a42p-57"))
_C2F = D(float.fromhex("-0x16c087e80f1e27p-62"))
_C3F = D(float.fromhex("0x199342e0ee5069p-68"))


@_jit
def _sincos_f32(x):
    """(sin r, cos r, quadrant) of x = r + quadrant * pi/2, in double precision."""
    xd = D(x)
    t = xd * _INVPIO2 + _D_SHIFT
    fn = t - _D_SHIFT
    r = (xd - fn * _PIO2_1F) - fn * _PIO2_1TF
    z = r * r
    s = r + r * z * (_S1 + z * (_S2 + z * (_S3 + z * (_S4 + z * _S5))))
    w = z * z
    c = ((_D1 + z * _C0F) + w * _C1F) + (w * z) * (_C2F + z * _C3F)
    return s, c, f64_bits(t)


@_jit
def _sin_f32(x):
    s, c, q = _sincos_f32(x)
    v = c if q & 1 else s
    if q & 2:
        v = -v
    res = F(v)
    if abs(x) < F(2.0 ** -12):  # sin(x) rounds to x; keeps -0.0
        res = x
    return _fix_sin(x, res)


@_jit
def _cos_f32(x):
    s, c, q = _sincos_f32(x)
    v = s if q & 1 else c
    if (q + 1) & 2:
        v = -v
    return _fix_cos(x, F(v))


# float64: pi/2 = pio2_1 + pio2_2 + pio2_3 + pio2_3t (33+33+33+53 bits, fdlibm __rem_pio2),
# subtracted with error-free sums: exact enough for all |x| < 2**20 pi/2
_PIO2_1 = D(1.57079632673412561417e+00)
_PIO2_2 = D(6.07710050630396597660e-11)
_PIO2_3 = D(2.02226624871116645580e-21)
_PIO2_3T = D(8.47842766036889956997e-32)
_KS1 = D(-1.66666666666666324348e-01)
_KS2 = D(8.33333333332248946124e-03)
_KS3 = D(-1.98412698298579493134e-04)
_KS4 = D(2.75573137070700676789e-06)
_KS5 = D(-2.50507602534068634195e-08)
_KS6 = D(1.58969099521155010221e-10)
_KC1 = D(4.16666666666666019037e-02)
_KC2 = D(-1.38888888888741095749e-03)
_KC3 = D(2.48015872894767294178e-05)
_KC4 = D(-2.75573143513906633035e-07)
_KC5 = D(2.08757232129817482790e-09)
_KC6 = D(-1.13596475577881948265e-11)


@_jit
def _two_diff(a, b):
    s = a - b
    bb = s - a
    return s, (a - (s - bb)) - (b + bb)


@_jit
def _rem_pio2_f64(x):
    t = x * _INVPIO2 + _D_SHIFT
    fn = t - _D_SHIFT
    a = x - fn * _PIO2_1          # exact: fn < 2**20 and pio2_1 has 33 bits
    s1, e1 = _two_diff(a, fn * _PIO2_2)
    s2, e2 = _two_diff(s1, fn * _PIO2_3)
    tail = (e1 + e2) - fn * _PIO2_3T
    y0 = s2 + tail
    return y0, (s2 - y0) + tail, f64_bits(t)


@_jit
def _ksin(x, y):
    z = x * x
    w = z * z
    r = _KS2 + z * (_KS3 + z * _KS4) + z * w * (_KS5 + z * _KS6)
    v = z * x
    return x - ((z * (_DH * y - v * r) - y) - v * _KS1)


@_jit
def _kcos(x, y):
    z = x * x
    w = z * z
    r = z * (_KC1 + z * (_KC2 + z * _KC3)) + w * w * (_KC4 + z * (_KC5 + z * _KC6))
    hz = _DH * z
    w = _D1 - hz
    return w + (((_D1 - w) - hz) + (z * r - x * y))


@_jit
def _sin_f64(x):
    y0, y1, q = _rem_pio2_f64(x)
    s = _ksin(y0, y1)
    c = _kcos(y0, y1)
    v = c if q & 1 else s
    if q & 2:
        v = -v
    if abs(x) < D(2.0 ** -26):
        v = x
    return _fix_sin(x, v)


@_jit
def _cos_f64(x):
    y0, y1, q = _rem_pio2_f64(x)
    s = _ksin(y0, y1)
    c = _kcos(y0, y1)
    v = s if q & 1 else c
    if (q + 1) & 2:
        v = -v
    return _fix_cos(x, v)


# -- functions built the same way for both precisions --------------------------------------

def _make_tanh(dt, expm1_core, tiny, cap):
    """tanh(x) = e / (e + 2) with e = expm1(2|x|): no cancellation for small |x|; |x| is
    capped where tanh rounds to 1."""
    two, capv, tinyv = dt(2), dt(cap), dt(tiny)

    def tanh(x):
        ax = abs(x)
        axc = ax
        if axc > capv:
            axc = capv
        e = expm1_core(axc + axc)
        t = e / (e + two)
        if x < 0:
            t = -t
        if ax < tinyv:
            t = x
        return t
    return _jit(tanh)


def make_logistic(dt, exp):
    """An njit logistic(x) = 1 / (1 + exp(-x)) for dtype ``dt`` built on the njit-callable
    ``exp``, computed as e / (1 + e) with e = exp(-|x|) for x < 0 so that neither tail
    overflows or cancels.

    >>> f = make_logistic(np.float32, _exp_f32)
    >>> float(f(np.float32(-100.0))) > 0
    True
    """
    one = dt(1)

    def logistic(x):
        e = exp(-abs(x))
        num = one if x >= 0 else e
        return num / (one + e)
    return _jit(logistic)


def _make_sinh_cosh(dt, expm1_core, exp_scaled, tiny, small):
    """sinh from expm1 below ``small`` (no cancellation), exp(|x|)/2 above it, scaled inside
    exp so that the result only overflows where sinh does."""
    half, one, tinyv, smallv = dt(0.5), dt(1), dt(tiny), dt(small)

    def sinh(x):
        ax = abs(x)
        e = expm1_core(ax)
        r = half * (e + e / (e + one))
        if ax >= smallv:
            r = exp_scaled(ax, -1)
        if x < 0:
            r = -r
        if ax < tinyv:
            r = x
        return r

    def cosh(x):
        ax = abs(x)
        e = exp_scaled(ax, -1)
        r = e + dt(0.25) / e
        if ax >= smallv:
            r = e
        return r
    return _jit(sinh), _jit(cosh)


# fdlibm s_erf.c / s_erff.c coefficients, (pp, qq) on [0, 0.84375], (pa, qa) on
# [0.84375, 1.25], (ra, sa) on [1.25, 1/0.35], (rb, sb) on [1/0.35, 6]
_ERF64 = dict(
    erx=8.45062911510467529297e-01,
    pp=(1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
        -5.77027029648944159157e-03, -2.37630166566501626084e-05),
    qq=(3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
        1.32494738004321644526e-04, -3.96022827877536812320e-06),
    pa=(-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
        3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
        -2.16637559486879084300e-03),
    qa=(1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
        1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02),
    ra=(-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
        -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
        -8.12874355063065934246e+01, -9.81432934416914548592e+00),
    sa=(1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
        6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
        6.57024977031928170135e+00, -6.04244152148580987438e-02),
    rb=(-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
        -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
        -4.83519191608651397019e+02),
    sb=(3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
        3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
        -2.24409524465858183362e+01),
)


def _make_erf(dt, exp):
    """fdlibm's erf with every interval evaluated and the right one selected per lane; the
    tail uses one exp(-x*x - 0.5625 + R/S): its argument's rounding error is scaled by
    erfc(x) <= 0.08 there, a fraction of an ulp of erf."""
    C = {k: (tuple(dt(c) for c in v) if isinstance(v, tuple) else dt(v))
         for k, v in _ERF64.items()}
    erx = C["erx"]
    pp0, pp1, pp2, pp3, pp4 = C["pp"]
    qq1, qq2, qq3, qq4, qq5 = C["qq"]
    pa0, pa1, pa2, pa3, pa4, pa5, pa6 = C["pa"]
    qa1, qa2, qa3, qa4, qa5, qa6 = C["qa"]
    ra0, ra1, ra2, ra3, ra4, ra5, ra6, ra7 = C["ra"]
    sa1, sa2, sa3, sa4, sa5, sa6, sa7, sa8 = C["sa"]
    rb0, rb1, rb2, rb3, rb4, rb5, rb6 = C["rb"]
    sb1, sb2, sb3, sb4, sb5, sb6, sb7 = C["sb"]
    one, b1, b2, b3, b4 = dt(1), dt(0.84375), dt(1.25), dt(1 / 0.35), dt(6)
    c5625 = dt(0.5625)

    def erf(x):
        ax = abs(x)
        small = ax < b1
        z = x * x
        s = ax - one
        num = (pp0 + z * (pp1 + z * (pp2 + z * (pp3 + z * pp4)))) if small else \
            (pa0 + s * (pa1 + s * (pa2 + s * (pa3 + s * (pa4 + s * (pa5 + s * pa6))))))
        den = (one + z * (qq1 + z * (qq2 + z * (qq3 + z * (qq4 + z * qq5))))) if small else \
            (one + s * (qa1 + s * (qa2 + s * (qa3 + s * (qa4 + s * (qa5 + s * qa6))))))
        q = num / den
        xc = ax
        if xc < b2:
            xc = b2
        if xc > b4:
            xc = b4
        inv = one / xc
        w = inv * inv
        near = xc < b3
        r = (ra0 + w * (ra1 + w * (ra2 + w * (ra3 + w * (ra4 + w * (ra5 + w * (
            ra6 + w * ra7))))))) if near else \
            (rb0 + w * (rb1 + w * (rb2 + w * (rb3 + w * (rb4 + w * (rb5 + w * rb6))))))
        sd = (one + w * (sa1 + w * (sa2 + w * (sa3 + w * (sa4 + w * (sa5 + w * (sa6 + w * (
            sa7 + w * sa8)))))))) if near else \
            (one + w * (sb1 + w * (sb2 + w * (sb3 + w * (sb4 + w * (sb5 + w * (sb6 + w * sb7)))))))
        y = one - exp(-xc * xc - c5625 + r / sd) * inv
        if ax < b2:
            y = erx + q
        if x < 0:
            y = -y
        if small:
            y = x + x * q
        if x != x:
            y = x
        return y
    return _jit(erf)


_tanh_f32 = _make_tanh(F, _expm1_core_f32, 2.0 ** -13, 10.0)
_tanh_f64 = _make_tanh(D, _expm1_core_f64, 2.0 ** -28, 20.0)
_logistic_f32 = make_logistic(F, _exp_f32)
_logistic_f64 = make_logistic(D, _exp_f64)
_sinh_f32, _cosh_f32 = _make_sinh_cosh(F, _expm1_core_f32, _exp_scaled_f32, 2.0 ** -12, 9.0)
_sinh_f64, _cosh_f64 = _make_sinh_cosh(D, _expm1_core_f64, _exp_scaled_f64, 2.0 ** -27, 22.0)
_erf_f32 = _make_erf(F, _exp_f32)
_erf_f64 = _make_erf(D, _exp_f64)

IMPLS = {
    (name, dt): globals()[f"_{name}_{suffix}"]
    for name in ("exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "tanh", "sin", "cos",
                 "logistic", "erf", "sinh", "cosh")
    for dt, suffix in ((numba.float32, "f32"), (numba.float64, "f64"))
}
"""(name, numba dtype) -> njit implementation of the portable route."""
