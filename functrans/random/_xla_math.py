"""XLA's arithmetic where JAX's random samples depend on it, so that they match bit for bit.

* XLA contracts ``x * y + z`` into a fused multiply-add (CPUs with FMA, GPUs): :func:`fma`
  rounds once too (the ``fma`` primitive).
* ``erf`` (float32) and ``erf_inv`` are XLA's polynomial approximations, not the accurate
  functions of ``lax``: normal samples depend on every bit of ``erf_inv``.

Everything is a composite of ``lax`` operations (differentiable, traceable, batchable).
"""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import numpy as fnp
from ..core import dtypes
from ..core.trace import get_aval


def _c(value, dtype):
    return np.asarray(value, dtype)[()]


# ---- fused multiply-add ---------------------------------------------------------------------------
# XLA contracts uniform's ``floats * (maxval - minval) + minval`` into one fused multiply-add on
# CPUs with FMA (and on GPUs), so the result is rounded once: lax.fma rounds once too.
def fma(x, y, z, dtype: np.dtype):
    """``x * y + z`` with a single rounding (x an array; y, z arrays or scalars of ``dtype``).

    float16 is computed as XLA does (its "excess precision": float32 arithmetic, one rounding
    to float16 at the end), which differs from a true fma in rare double-rounding cases. Where
    the splitting overflows (|y| near the dtype's maximum) the plain multiply-add is used.

        >>> x = np.float32(1 + 2**-12)  # x * x - 1 is 2**-11 after rounding x * x
        >>> float(fma(x, x, np.float32(-1), np.dtype("float32"))) == 2**-11 + 2**-24
        True
    """
    if dtype == np.float16:
        f32 = np.dtype(np.float32)
        x, y, z = (lax.convert_element_type(v, f32) for v in (x, y, z))
        return lax.convert_element_type(lax.add(lax.mul(x, y), z), dtype)
    if isinstance(y, (np.ndarray, np.generic)) and y.shape == () and abs(np.frexp(y)[0]) in (
            0.0, 0.5):
        return lax.add(lax.mul(x, y), z)  # y a power of two: the product is already exact
    # The fma primitive rounds once eagerly and compiled alike (error-free arithmetic written
    # out in lax operations would not survive the compiler's reassociation).
    return lax.fma(x, y, z)


# ---- erf and erf_inv -----------------------------------------------------------------------------
# XLA's erf_inv (Giles' polynomials in w = -log1p(-x^2)), reproduced so that normal samples match
# JAX's in (nearly) every bit; an accurate erf_inv differs from it by up to 60 ulp (float32) and
# thousands of ulp (float64) in the tails. XLA evaluates the float32 polynomial with fused
# multiply-adds, emulated here in float64 where it is enabled; float64 uses plain Horner steps.
_ERFINV32 = (
    (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
     -0.00125372503, -0.00417768164, 0.246640727, 1.50140941),
    (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
     -0.0076224613, 0.00943887047, 1.00167406, 2.83297682))
_ERFINV64 = (
    (-3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
     1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
     6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
     2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
     1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
     4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
     0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
     0.24015818242558961693, 1.6536545626831027356),
    (2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
     1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
     2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
     6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
     0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
     -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
     3.0838856104922207635),
    (-2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
     -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
     2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
     -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
     7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
     1.0103004648645343977, 4.8499064014085844221))


def _fma32(a, b, c):
    """float32 ``a * b + c`` rounded once (as XLA's fma): the product is exact in float64."""
    f32, wide = np.dtype(np.float32), dtypes.canonicalize_dtype(np.float64)
    if wide == f32:  # 64-bit dtypes disabled: Dekker's exact emulation in float32
        return fma(a, b, c, f32)
    a, b, c = (lax.convert_element_type(v, wide) for v in (a, b, c))
    return lax.convert_element_type(lax.add(lax.mul(a, b), c), f32)


# XLA's float32 erf (Eigen's rational approximation with fmas); float64 erf is libm's.
_ERF32_P = (0.00022905065861350646, 0.0034082910107109506, 0.050955695062380861,
            0.18520832239976145, 1.128379143519084)
_ERF32_Q = (-1.1791602954361697e-7, 0.000023547966471313185, 0.0010179625278914885,
            0.014070470171167667, 0.11098505178285362, 0.49746925110067538, 1.0)


def erf(x, dtype):
    """XLA's erf: libm's for float64; Eigen's rational approximation (in float32) otherwise.

        >>> erf(np.float32(0.5), np.dtype("float32"))
        Array(0.5204999, dtype=float32)
    """
    if dtype == np.float64:
        return lax.erf(x)
    f32 = np.dtype(np.float32)
    x = lax.convert_element_type(x, f32)
    x2 = lax.mul(x, x)
    p = _fma32(x2, _c(_ERF32_P[0], f32), _c(_ERF32_P[1], f32))
    for c in _ERF32_P[2:]:
        p = _fma32(x2, p, _c(c, f32))
    q = _fma32(x2, _c(_ERF32_Q[0], f32), _c(_ERF32_Q[1], f32))
    for c in _ERF32_Q[2:]:
        q = _fma32(x2, q, _c(c, f32))
    out = lax.div(lax.mul(x, p), q)
    saturated = lax.le(_c(3.832506856900711, f32), lax.abs(x))
    one = fnp.where(fnp.signbit(x), _c(-1.0, f32), _c(1.0, f32))  # copysign(1, x)
    return lax.convert_element_type(lax.select(saturated, one, out), dtype)


def _erf_inv32(x, w):
    f32 = np.dtype(np.float32)
    wide = dtypes.canonicalize_dtype(np.float64)
    small = lax.lt(w, _c(5.0, f32))
    # max() leaves the selected values unchanged and keeps sqrt's derivative finite where
    # its branch is not taken (a NaN cotangent there would leak through the select).
    t = lax.select(small, lax.sub(w, _c(2.5, f32)),
                   lax.sub(lax.sqrt(lax.max(w, _c(5.0, f32))), _c(3.0, f32)))
    coef = [fnp.where(small, _c(a, wide), _c(b, wide)) for a, b in zip(*_ERFINV32)]
    t_wide = lax.convert_element_type(t, wide)
    p = lax.convert_element_type(coef[0], f32)
    for c in coef[1:]:
        # float32 product is exact in float64: one rounding to float32 per step, as an fma.
        p = lax.convert_element_type(
            lax.add(lax.mul(lax.convert_element_type(p, wide), t_wide), c), f32)
    return p


def _erf_inv64(x, w):
    f64 = np.dtype(np.float64)
    a, b, c = _ERFINV64
    lt_625, lt_16 = lax.lt(w, _c(6.25, f64)), lax.lt(w, _c(16.0, f64))
    t = lax.select(lt_625, lax.sub(w, _c(3.125, f64)),
                   lax.sub(lax.sqrt(lax.max(w, _c(6.25, f64))),
                           fnp.where(lt_16, _c(3.25, f64), _c(5.0, f64))))

    def coef(i):
        k = _c(a[i], f64)
        if i < 19:
            k = fnp.where(lt_625, k, _c(b[i], f64))
        if i < 17:
            k = fnp.where(lt_16, k, _c(c[i], f64))
        return k

    p = fnp.broadcast_to(coef(0), get_aval(x).shape)
    for i in range(1, 23):
        step = lax.add(coef(i), lax.mul(p, t))
        p = step if i < 17 else lax.select(lt_16 if i < 19 else lt_625, step, p)
    return p


def erf_inv(x, dtype):
    """XLA's erf_inv (float16, bfloat16 and float8 are computed in float32, as XLA does);
    +-1 give +-inf.

        >>> erf_inv(np.float32(0.5), np.dtype("float32"))
        Array(0.47693628, dtype=float32)
    """
    if dtype == np.float16 or dtypes.is_narrow_float(dtype):  # XLA computes it in float32
        f32 = np.dtype(np.float32)
        return lax.convert_element_type(erf_inv(lax.convert_element_type(x, f32), f32), dtype)
    w = lax.neg(lax.log1p(lax.mul(x, lax.neg(x))))
    p = _erf_inv64(x, w) if dtype == np.float64 else _erf_inv32(x, w)
    infinite = fnp.where(fnp.signbit(x), _c(-np.inf, dtype), _c(np.inf, dtype))  # x * inf
    return lax.select(lax.eq(lax.abs(x), _c(1, dtype)), infinite, lax.mul(p, x))
