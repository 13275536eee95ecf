"""Everything else NumPy users reach for: rounding to decimals, comparisons with tolerance,
nan_to_num, sinc, i0, complex-number stubs for real arrays, gcd/lcm/frexp/spacing, piecewise,
apply_along_axis, and dtype utilities. Each follows NumPy's own algorithm step by step so the
results round like NumPy's::

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
from ._core import (_operand, asarray, check_arraylike, convert, normalize_axis, result_dtype,
                    unsupported_out)
from . import joining, reductions, shape_ops, ufuncs

__all__ = ["round", "around", "round_", "nan_to_num", "isclose", "allclose", "array_equal",
           "array_equiv", "sinc", "i0", "real", "imag", "angle",
           "isreal", "iscomplex", "isposinf", "isneginf", "ix_",
           "gcd", "lcm", "frexp", "spacing", "piecewise", "apply_along_axis", "apply_over_axes",
           "real_if_close"]


def round(a, decimals=0, out=None):
    """Round half to even to ``decimals`` places (NumPy's algorithm: scale, rint, unscale;
    integers with negative ``decimals`` go through float64 and back).

    >>> round(fnp.array([0.5, 1.5, 2.675]), 2)
    Array([0.5 , 1.5 , 2.68], dtype=float64)
    """
    check_arraylike("round", a)
    unsupported_out("round", out)
    a = asarray(a)
    d = get_aval(a).dtype
    decimals = int(decimals)
    if dtypes.kind(d) == "b":
        # NumPy rounds booleans through the float path into a bool result: only rint works.
        if decimals:
            raise TypeError("fnp.round: booleans can only be rounded with decimals=0 (NumPy "
                            "cannot store the scaled values as bool)")
        return ufuncs.rint(a)
    if dtypes.kind(d) in "iu":
        if decimals >= 0:
            return a
        f = 10.0 ** -decimals
        return convert(ufuncs.multiply(ufuncs.rint(ufuncs.true_divide(a, f)), f), d)
    if decimals == 0:
        return ufuncs.rint(a)
    f = 10.0 ** abs(decimals)
    if decimals > 0:
        return ufuncs.true_divide(ufuncs.rint(ufuncs.multiply(a, f)), f)
    return ufuncs.multiply(ufuncs.rint(ufuncs.true_divide(a, f)), f)


around = round_ = round


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN to ``nan``, infinities to the largest finite values (or ``posinf``/``neginf``).

    >>> nan_to_num(fnp.array([fnp.nan, fnp.inf, 1.0]), posinf=9.0)
    Array([0., 9., 1.], dtype=float64)
    """
    check_arraylike("nan_to_num", x)
    x = asarray(x)
    d = get_aval(x).dtype
    if dtypes.kind(d) != "f":
        return x
    info = np.finfo(d)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    x = shape_ops.where(ufuncs.isnan(x), lax.full((), nan, d), x)
    x = shape_ops.where(isposinf(x), lax.full((), posinf, d), x)
    return shape_ops.where(isneginf(x), lax.full((), neginf, d), x)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|a - b| <= atol + rtol * |b|`` with ``b`` finite, or ``a == b`` (NumPy's formula;
    integer ``b`` is compared in floating point).

    >>> isclose(fnp.array([1.0, 1.1]), 1.0)
    Array([ True, False], dtype=bool)
    """
    check_arraylike("isclose", a, b)
    x, y = _operand(a), _operand(b)
    if type(y) is int:
        y = float(y)
    elif type(y) not in (bool, float):
        y = convert(y, result_dtype(y, 1.0))  # inexact, as NumPy (abs(INT_MIN) overflows)
    tol = ufuncs.add(atol, ufuncs.multiply(rtol, ufuncs.absolute(y)))
    within = ufuncs.less_equal(ufuncs.absolute(ufuncs.subtract(x, y)), tol)
    result = ufuncs.logical_or(ufuncs.logical_and(within, ufuncs.isfinite(y)),
                               ufuncs.equal(x, y))
    if equal_nan:
        result = ufuncs.logical_or(result, ufuncs.logical_and(ufuncs.isnan(x), ufuncs.isnan(y)))
    return asarray(result)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True if every element is :func:`isclose`.

    >>> allclose(fnp.array([1.0, 2.0]), fnp.array([1.0, 2.0 + 1e-9]))
    Array(True, dtype=bool)
    """
    check_arraylike("allclose", a, b)
    return reductions.all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan=False):
    """True if the shapes match and all elements are equal (NaNs too with ``equal_nan``).

    >>> array_equal(fnp.array([1, 2]), fnp.array([1.0, 2.0]))
    Array(True, dtype=bool)
    """
    for key in (a1, a2):
        if getattr(key, "_is_key_array", False):  # typed PRNG keys (random._keys: above numpy)
            return key._array_equal(a1, a2)
    a1, a2 = asarray(a1), asarray(a2)
    if get_aval(a1).shape != get_aval(a2).shape:
        return asarray(False)
    eq = ufuncs.equal(a1, a2)
    if equal_nan:
        eq = ufuncs.logical_or(eq, ufuncs.logical_and(ufuncs.isnan(a1), ufuncs.isnan(a2)))
    return reductions.all(eq)


def array_equiv(a1, a2):
    """True if the arrays are equal after broadcasting (False if they do not broadcast).

    >>> array_equiv(fnp.array([1, 2]), fnp.array([[1, 2], [1, 2]]))
    Array(True, dtype=bool)
    """
    a1, a2 = asarray(a1), asarray(a2)
    try:
        np.broadcast_shapes(get_aval(a1).shape, get_aval(a2).shape)
    except ValueError:
        return asarray(False)
    return reductions.all(ufuncs.equal(a1, a2))


def sinc(x):
    """``sin(pi x) / (pi x)``; at 0 NumPy evaluates it at the dtype's epsilon (giving 1).

    >>> sinc(fnp.array([0.0, 0.5]))
    Array([1.        , 0.63661977], dtype=float64)
    """
    check_arraylike("sinc", x)
    x = ufuncs.multiply(np.pi, asarray(x))
    d = get_aval(x).dtype
    y = shape_ops.where(x, x, float(np.finfo(d).eps) if dtypes.kind(d) == "f" else 1e-20)
    # At 0 the value comes from the Maclaurin series, whose custom derivatives make every
    # derivative there exact (sinc''(0) = -pi^2/3, as JAX; the quotient's would be 0).
    return shape_ops.where(ufuncs.equal(x, 0), _sinc_maclaurin(0)(x),
                           ufuncs.true_divide(ufuncs.sin(y), y))


_SINC_MACLAURIN = {}


def _sinc_maclaurin(k):
    """``t -> (d/dt)^k (sin t / t)`` at t = 0, as a function of t whose derivative is the
    (k+1)-th term: 0 for odd k, (-1)^(k/2) / (k + 1) for even k."""
    if k not in _SINC_MACLAURIN:
        from ..transforms.autodiff import custom_jvp
        c = 0.0 if k % 2 else (-1) ** (k // 2) / (k + 1)
        f = custom_jvp(lambda t: ufuncs.add(ufuncs.multiply(t, 0), c))
        f.defjvp(lambda p, t: (f(p[0]), ufuncs.multiply(_sinc_maclaurin(k + 1)(p[0]), t[0])))
        _SINC_MACLAURIN[k] = f
    return _SINC_MACLAURIN[k]


# Chebyshev coefficients of NumPy's (Cephes') i0 on [0, 8] and (8, inf).
_I0A = (-4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
        1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
        -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
        9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
        -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7,
        1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5,
        -5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4,
        1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
        -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2,
        1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1)
_I0B = (-7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
        3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
        1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
        -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
        7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
        -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
        3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7,
        2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
        8.04490411014108831608e-1)


def _chbevl(x, coefficients):
    b0, b1, b2 = coefficients[0], 0.0, 0.0
    for c in coefficients[1:]:
        b2, b1 = b1, b0
        b0 = ufuncs.add(ufuncs.subtract(ufuncs.multiply(x, b1), b2), c)
    return ufuncs.multiply(0.5, ufuncs.subtract(b0, b2))


def i0(x):
    """Modified Bessel function of the first kind, order 0 (NumPy's Chebyshev expansion).

    >>> i0(fnp.array([0.0, 1.0]))
    Array([1.        , 1.26606588], dtype=float64)
    """
    check_arraylike("i0", x)
    x = asarray(x)
    if dtypes.kind(get_aval(x).dtype) != "f":
        x = convert(x, dtypes.default_float_dtype())
    x = ufuncs.absolute(x)
    small = ufuncs.less_equal(x, 8.0)
    safe_small = shape_ops.where(small, x, 0.0)  # keep both branches finite
    safe_large = shape_ops.where(small, 8.0, x)
    lo = ufuncs.multiply(ufuncs.exp(safe_small),
                         _chbevl(ufuncs.subtract(ufuncs.true_divide(safe_small, 2.0), 2), _I0A))
    hi = ufuncs.true_divide(ufuncs.multiply(ufuncs.exp(safe_large), _chbevl(
        ufuncs.subtract(ufuncs.true_divide(32.0, safe_large), 2.0), _I0B)),
        ufuncs.sqrt(safe_large))
    return shape_ops.where(small, lo, hi)


def real(val):
    """The real part (the array itself for real dtypes).

    >>> real(fnp.array([1 + 2j, 3 - 1j]))
    Array([1., 3.], dtype=float64)
    """
    check_arraylike("real", val)
    x = asarray(val)
    return P.real_p.bind1(x) if dtypes.kind(get_aval(x).dtype) == "c" else x


def imag(val):
    """The imaginary part (zeros of the same dtype for real dtypes).

    >>> imag(fnp.array([1 + 2j, 3 - 1j]))
    Array([ 2., -1.], dtype=float64)
    """
    check_arraylike("imag", val)
    x = asarray(val)
    if dtypes.kind(get_aval(x).dtype) == "c":
        return P.imag_p.bind1(x)
    from .creation import zeros_like
    return zeros_like(x)


def angle(z, deg=False):
    """The argument ``arctan2(imag(z), real(z))`` (in degrees with ``deg=True``).

    >>> angle(fnp.array([1.0, -1.0, 1j]))
    Array([0.        , 3.14159265, 1.57079633], dtype=float64)
    """
    check_arraylike("angle", z)
    z = asarray(z)
    if dtypes.kind(get_aval(z).dtype) == "c":
        a = ufuncs.arctan2(imag(z), real(z))
    else:
        a = ufuncs.arctan2(0, z)
    return ufuncs.multiply(a, 180 / np.pi) if deg else a


def real_if_close(a, tol=100):
    """The real part if every imaginary part is within ``tol`` machine epsilons of zero
    (a concrete check, as in NumPy and JAX); otherwise the array itself.

    >>> real_if_close(fnp.array([1.0 + 1e-20j, 2.0]))
    Array([1., 2.], dtype=float64)
    """
    x = asarray(a)
    d = get_aval(x).dtype
    if dtypes.kind(d) != "c":
        return x
    eps = np.finfo(dtypes.real_dtype(d)).eps
    if bool(reductions.all(ufuncs.less(ufuncs.absolute(imag(x)), tol * eps))):
        return real(x)
    return x


def isreal(x):
    """True where the imaginary part is zero.

    >>> isreal(fnp.array([1.0, 2.0 + 1j]))
    Array([ True, False], dtype=bool)
    """
    check_arraylike("isreal", x)
    return ufuncs.equal(imag(x), 0)


def iscomplex(x):
    """True where the imaginary part is nonzero.

    >>> iscomplex(fnp.array([1.0, 2.0 + 1j]))
    Array([False,  True], dtype=bool)
    """
    check_arraylike("iscomplex", x)
    return ufuncs.not_equal(imag(x), 0)


def isposinf(x, out=None):
    """True where ``x`` is +inf.

    >>> isposinf(fnp.array([fnp.inf, -fnp.inf, 1.0]))
    Array([ True, False, False], dtype=bool)
    """
    check_arraylike("isposinf", x)
    unsupported_out("isposinf", out)
    return ufuncs.logical_and(ufuncs.isinf(x), ufuncs.logical_not(ufuncs.signbit(x)))


def isneginf(x, out=None):
    """True where ``x`` is -inf.

    >>> isneginf(fnp.array([fnp.inf, -fnp.inf, 1.0]))
    Array([False,  True, False], dtype=bool)
    """
    check_arraylike("isneginf", x)
    unsupported_out("isneginf", out)
    return ufuncs.logical_and(ufuncs.isinf(x), ufuncs.signbit(x))


def ix_(*args):
    """Open mesh from 1-d sequences: index arrays shaped to broadcast against each other
    (booleans become the indices of their True entries).

    >>> [a.shape for a in ix_(fnp.array([0, 1]), fnp.array([2, 3, 4]))]
    [(2, 1), (1, 3)]
    """
    check_arraylike("ix_", *args)
    out = []
    n = len(args)
    for k, seq in enumerate(args):
        a = asarray(seq)
        aval = get_aval(a)
        if aval.ndim != 1:
            raise ValueError(f"fnp.ix_: cross index must be 1 dimensional, got shape {aval.shape}")
        if aval.size == 0 and not isinstance(seq, (Array, Tracer, np.ndarray)):
            a = convert(a, dtypes.default_int_dtype())  # an empty list: NumPy's intp
        elif aval.dtype == dtypes.bool_:
            from .sorting import nonzero
            a = nonzero(a)[0]
        out.append(shape_ops.reshape(a, (1,) * k + (-1,) + (1,) * (n - k - 1)))
    return tuple(out)


# ---- number theory and float decomposition --------------------------------------------------------
def _loop_operands(name, ufunc, args):
    """Operands cast to NumPy's loop dtypes for ``ufunc`` and broadcast to one shape."""
    from ._core import ufunc_operands
    ops, out_dtype, _ = ufunc_operands(name, ufunc, args, keep_scalars=False)
    return ops, out_dtype


def _unsigned_abs(a):
    """|a| in the unsigned dtype of a's width, as NumPy's gcd/lcm compute (so |INT_MIN| is
    exact)."""
    d = get_aval(a).dtype
    if dtypes.kind(d) == "u":
        return a
    return convert(ufuncs.absolute(a), np.dtype(f"u{d.itemsize}"))


def _gcd_unsigned(a, b):
    d = get_aval(a).dtype
    zero = lax.full_like(a, 0)
    # Euclid's remainder sequence shrinks at least as fast as Fibonacci numbers: 1.5 steps per
    # bit of the dtype are always enough.
    for _ in range(3 * 8 * d.itemsize // 2 + 2):
        nz = P.ne_p.bind1(b, zero)
        safe_b = lax.select(nz, b, lax.full_like(b, 1))
        a, b = lax.select(nz, b, a), lax.select(nz, P.rem_p.bind1(a, safe_b), zero)
    return a


def gcd(x1, x2, out=None):
    """Greatest common divisor of the absolute values (integers only).

    >>> gcd(fnp.array([12, 18]), 8)
    Array([4, 2], dtype=int64)
    """
    check_arraylike("gcd", x1, x2)
    unsupported_out("gcd", out)
    (a, b), d = _loop_operands("gcd", np.gcd, (x1, x2))
    return convert(_gcd_unsigned(_unsigned_abs(a), _unsigned_abs(b)), d)


def lcm(x1, x2, out=None):
    """Least common multiple of the absolute values (integers only; wraps on overflow).

    >>> lcm(fnp.array([4, 6]), 6)
    Array([12,  6], dtype=int64)
    """
    check_arraylike("lcm", x1, x2)
    unsupported_out("lcm", out)
    (a, b), d = _loop_operands("lcm", np.lcm, (x1, x2))
    a, b = _unsigned_abs(a), _unsigned_abs(b)
    g = _gcd_unsigned(a, b)
    is_zero = P.eq_p.bind1(g, lax.full_like(g, 0))
    safe = lax.select(is_zero, lax.full_like(g, 1), g)
    # a / gcd * b, as NumPy (dividing first keeps the intermediate small).
    r = P.mul_p.bind1(P.div_p.bind1(a, safe), b)
    return convert(lax.select(is_zero, lax.full_like(g, 0), r), d)


def frexp(x, out=None):
    """Mantissa in [0.5, 1) (with x's sign) and integer exponent with ``x = m * 2**e``.

    >>> frexp(fnp.array([8.0, 0.75]))
    (Array([0.5 , 0.75], dtype=float64), Array([4, 0], dtype=int32))
    """
    check_arraylike("frexp", x)
    unsupported_out("frexp", out)
    (x,), _ = _loop_operands("frexp", np.frexp, (x,))
    d = get_aval(x).dtype
    info = np.finfo(d)
    nmant, bias = int(info.nmant), int(info.maxexp) - 1
    bits_dtype = np.dtype(f"i{d.itemsize}")
    # Scale subnormals into the normal range first, then read the exponent field.
    subnormal = P.lt_p.bind1(ufuncs.absolute(x), lax.full_like(x, float(info.tiny)))
    scaled = lax.select(subnormal, P.mul_p.bind1(x, lax.full_like(x, 2.0 ** (nmant + 1))), x)
    bits = lax.bitcast_convert_type(scaled, bits_dtype)
    field = P.and_p.bind1(P.shift_right_logical_p.bind1(bits, lax.full_like(bits, nmant)),
                          lax.full_like(bits, 2 * bias + 1))
    exp = P.sub_p.bind1(field, lax.full_like(field, bias - 1))
    exp = lax.select(subnormal, P.sub_p.bind1(exp, lax.full_like(exp, nmant + 1)), exp)
    # Mantissa: keep sign and fraction bits, set the exponent field to bias - 1 (0.5 <= m < 1).
    keep = ~np.array((2 * bias + 1) << nmant, bits_dtype)
    mant_bits = P.or_p.bind1(P.and_p.bind1(bits, lax.full_like(bits, keep)),
                             lax.full_like(bits, (bias - 1) << nmant))
    mant = lax.bitcast_convert_type(mant_bits, d)
    special = P.or_p.bind1(P.eq_p.bind1(x, lax.full_like(x, 0)),
                           P.not_p.bind1(P.is_finite_p.bind1(x)))
    mant = lax.select(special, x, mant)
    exp = lax.select(special, lax.full_like(exp, 0), exp)
    return mant, convert(exp, dtypes.int32)


def spacing(x, out=None):
    """Distance from ``x`` to the next float away from zero (negative for negative ``x``).
    NumPy's float16 loop differs: it gives the (positive) distance to the next float above.

    >>> spacing(fnp.array([1.0], "float32"))
    Array([1.1920929e-07], dtype=float32)
    """
    check_arraylike("spacing", x)
    unsupported_out("spacing", out)
    (x,), _ = _loop_operands("spacing", np.spacing, (x,))
    inf = lax.full_like(x, np.inf)
    if get_aval(x).dtype == dtypes.float16:
        r = P.sub_p.bind1(P.nextafter_p.bind1(x, inf), x)
        return lax.select(P.is_finite_p.bind1(x), r, lax.full_like(x, np.nan))
    toward = lax.select(ufuncs.signbit(x), P.neg_p.bind1(inf), inf)
    r = P.sub_p.bind1(P.nextafter_p.bind1(x, toward), x)
    # NumPy gives +0.0 and -0.0 the same, positive spacing.
    tiny = lax.full_like(x, float(np.finfo(get_aval(x).dtype).smallest_subnormal))
    return lax.select(P.eq_p.bind1(x, lax.full_like(x, 0)), tiny, r)


# ---- functional helpers ----------------------------------------------------------------------------
def piecewise(x, condlist, funclist, *args, **kw):
    """Evaluate ``funclist[i](x)`` (or a constant) where ``condlist[i]`` holds; an extra last
    function is the default. Every function is evaluated on all of ``x`` (traceable).

    >>> piecewise(fnp.array([-1.0, 2.0]), [fnp.array([True, False])], [lambda v: -v, 5.0])
    Array([1., 5.], dtype=float64)
    """
    check_arraylike("piecewise", x)
    x = asarray(x)
    xs = get_aval(x).shape
    if isinstance(condlist, (Array, Tracer, np.ndarray)) and np.ndim(condlist) == len(xs) or \
            type(condlist) is bool or not isinstance(condlist, (list, tuple)):
        condlist = [condlist]
    conds = [shape_ops.broadcast_to(asarray(c), xs) for c in condlist]
    n = len(conds)
    if len(funclist) not in (n, n + 1):
        raise ValueError(f"fnp.piecewise: with {n} condition(s), either {n} or {n + 1} "
                         f"functions are expected, got {len(funclist)}")
    if len(funclist) == n + 1:
        rest = P.not_p.bind1(reductions.any(joining.stack(conds), axis=0)) if n else \
            lax.full(xs, True, dtypes.bool_)
        conds.append(rest)
    out = lax.full(xs, 0, get_aval(x).dtype)
    for c, f in zip(conds, funclist):
        value = f(x, *args, **kw) if callable(f) else f
        value = convert(asarray(value), get_aval(x).dtype)
        out = shape_ops.where(c, value, out)
    return out


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """``func1d`` applied to each 1-d slice along ``axis`` (a Python loop over the other
    dimensions; the outputs are stacked where the slice was).

    >>> apply_along_axis(lambda v: v.sum(), 1, fnp.ones((2, 3)))
    Array([3., 3.], dtype=float64)
    """
    check_arraylike("apply_along_axis", arr)
    arr = asarray(arr)
    nd = get_aval(arr).ndim
    axis = normalize_axis(axis, nd)
    moved = shape_ops.moveaxis(arr, axis, -1)
    outer = get_aval(moved).shape[:-1]
    if not outer or 0 in outer:
        if 0 in outer:
            raise ValueError("fnp.apply_along_axis: cannot apply to 0-sized slices")
        res = asarray(func1d(moved, *args, **kwargs))
        return res
    flat = shape_ops.reshape(moved, (-1, get_aval(moved).shape[-1]))
    results = [asarray(func1d(flat[i], *args, **kwargs))
               for i in range(get_aval(flat).shape[0])]
    stacked = joining.stack(results)
    rshape = get_aval(results[0]).shape
    out = shape_ops.reshape(stacked, outer + rshape)
    # The function's output dimensions replace ``axis``.
    k = len(rshape)
    perm = list(range(axis)) + list(range(len(outer), len(outer) + k)) + \
        list(range(axis, len(outer)))
    return shape_ops.transpose(out, perm)


def apply_over_axes(func, a, axes):
    """``func(a, axis)`` applied over each of ``axes`` in turn, keeping the reduced axes.

    >>> apply_over_axes(fnp.sum, fnp.ones((2, 3)), [0, 1])
    Array([[6.]], dtype=float64)
    """
    check_arraylike("apply_over_axes", a)
    val = asarray(a)
    nd = get_aval(val).ndim
    for ax in axes if isinstance(axes, (list, tuple)) else (axes,):  # in the given order
        ax = normalize_axis(ax, nd)
        res = asarray(func(val, ax))
        if get_aval(res).ndim == get_aval(val).ndim:
            val = res
        elif get_aval(res).ndim == get_aval(val).ndim - 1:
            val = shape_ops.expand_dims(res, ax)
        else:
            raise ValueError("fnp.apply_over_axes: function is not returning an array of the "
                             "correct shape")
    return val

