"""Elementwise functions with NumPy's names, broadcasting and dtype rules.

Each function resolves NumPy's loop dtypes for its inputs, casts, broadcasts, then applies
primitives (``impl`` below) to operands that already have the loop dtype::

    >>> sin(fnp.arange(3, dtype="int8")).dtype     # NumPy: int8 -> float16
    dtype('float16')
"""
from __future__ import annotations

import math

import numpy as np

from .. import lax
from .. import primitives as P
from ..core import dtypes
from ..core.config import config
from ..core.trace import get_aval
from ._core import (_operand, broadcast_operands, check_arraylike, convert, ufunc_operands,
                    unsupported_out)
from ._plans import Plans, replay, signature

_ALL = []
_MISSING = object()


def _kind(x) -> str:
    return dtypes.kind(get_aval(x).dtype)


def _const(value, like):
    """A scalar of ``like``'s dtype (a weak literal in jaxprs)."""
    return lax.ops._convert_weak(value, get_aval(like).dtype)


def _make(np_ufunc, impl, name=None, *, scalars=True):
    """A NumPy-compatible ufunc from ``impl``, which receives operands already cast to the
    loop dtypes. ``scalars=False`` broadcasts rank-0 operands too, for implementations that
    ``select`` between operands (select_n needs equal shapes)."""
    name = name or np_ufunc.__name__
    nin = np_ufunc.nin

    def fn(*args, out=None, dtype=None, where=None):
        if out is None and dtype is None and where is None:
            key = signature(args)
            if key is not None:
                plan = plans.table.get(key, _MISSING)
                if plan is _MISSING:
                    result = slow(*args)
                    plans.record(key, args)
                    return result
                if plan is not None:
                    return replay(plan, args)
        return slow(*args, out=out, dtype=dtype, where=where)

    def slow(*args, out=None, dtype=None, where=None):
        if len(args) != nin:
            raise TypeError(f"fnp.{name} takes {nin} positional argument{'s' * (nin > 1)}, "
                            f"got {len(args)}")
        check_arraylike(name, *args)
        unsupported_out(name, out)
        if where is not None:
            raise NotImplementedError(
                f"fnp.{name}: where= is not supported (without out= NumPy leaves the masked "
                f"entries uninitialized); use fnp.where(mask, fnp.{name}(...), other)")
        ops, out_dtype, weak = ufunc_operands(name, np_ufunc, args, dtype, scalars)
        return convert(impl(*ops), out_dtype, weak)

    plans = Plans(slow, name)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Elementwise ``{name}`` with NumPy's broadcasting and dtype rules "
                  f"(see ``numpy.{np_ufunc.__name__}``); ``dtype=`` selects the loop as in "
                  "NumPy.\n\n"
                  f"    >>> fnp.{name}({', '.join(['fnp.array([1.0, 2.0])'] * nin)})"
                  "  # doctest: +SKIP\n")
    _ALL.append(name)
    return fn


def _half_in_float(impl):
    """NumPy evaluates float16 loops in float32 and rounds once at the end; composite
    formulas do the same so that they round like NumPy rather than at every step."""
    def run(*ops):
        if get_aval(ops[0]).dtype != dtypes.float16:
            return impl(*ops)
        wide = [convert(o, dtypes.float32) if get_aval(o).dtype == dtypes.float16 else o
                for o in ops]
        return convert(impl(*wide), dtypes.float16)
    return run


def _in_float64(impl):
    """Evaluate a float16/float32 formula in float64: the single final rounding makes it
    (almost always) correctly rounded, as NumPy's libm-backed loops are."""
    def run(*ops):
        d = get_aval(ops[0]).dtype
        if dtypes.kind(d) != "f" or d == dtypes.float64:
            return impl(*ops)
        wide = dtypes.canonicalize_dtype(dtypes.float64)
        return convert(impl(*[convert(o, wide) if _kind(o) == "f" else o for o in ops]), d)
    return run


def _float_only(prim, identity_for_ints=False):
    """Apply a float primitive; integer/bool loops (NumPy keeps their dtype) are identities."""
    def impl(x):
        if _kind(x) not in "fc":
            if identity_for_ints:
                return x
            raise TypeError(f"{prim.name} needs a float operand")
        return prim.bind1(x)
    return impl


# ---- unary --------------------------------------------------------------------------------------------
def _neg(x):
    return P.neg_p.bind1(x)


def _abs(x):
    return x if _kind(x) in "bu" else P.abs_p.bind1(x)


def _parts(x):
    return P.real_p.bind1(x), P.imag_p.bind1(x)


def _isnan(x):
    if _kind(x) == "c":
        return P.or_p.bind1(*map(_isnan, _parts(x)))
    return P.ne_p.bind1(x, x) if _kind(x) == "f" else lax.full_like(x, False, dtypes.bool_)


def _isinf(x):
    if _kind(x) == "c":
        return P.or_p.bind1(*map(_isinf, _parts(x)))
    if _kind(x) != "f":
        return lax.full_like(x, False, dtypes.bool_)
    return P.eq_p.bind1(P.abs_p.bind1(x), _const(np.inf, x))


def _isfinite(x):
    if _kind(x) == "c":
        return P.and_p.bind1(*map(_isfinite, _parts(x)))
    return P.is_finite_p.bind1(x) if _kind(x) == "f" else lax.full_like(x, True, dtypes.bool_)


def signbit_float(x):
    """Sign bit of a float (sees -0.0 and -nan), via its integer bits."""
    d = get_aval(x).dtype
    bits = lax.bitcast_convert_type(x, np.dtype(f"i{d.itemsize}"))
    return P.lt_p.bind1(bits, _const(0, bits))


def _signbit(x):
    return signbit_float(x) if _kind(x) == "f" else P.lt_p.bind1(x, _const(0, x))


def _to_bool(x):
    return x if _kind(x) == "b" else P.ne_p.bind1(x, _const(0, x))


def _log_base(base):
    def impl(x):
        return P.div_p.bind1(P.log_p.bind1(x), _const(math.log(base), x))
    return _in_float64(impl)


def _reciprocal(x):
    return P.div_p.bind1(_const(1, x), x)


def _square(x):
    return P.and_p.bind1(x, x) if _kind(x) == "b" else P.square_p.bind1(x)


def _rint(x):
    if _kind(x) == "c":  # NumPy rounds both parts
        return P.complex_p.bind1(*map(_rint, _parts(x)))
    return P.round_p.bind1(x, rounding_method=1) if _kind(x) == "f" else x


def _trunc(x):
    if _kind(x) != "f":
        return x
    return lax.select(P.lt_p.bind1(x, _const(0, x)), P.ceil_p.bind1(x), P.floor_p.bind1(x))


def _scale(factor):
    def impl(x):
        return P.mul_p.bind1(x, _const(factor, x))
    return _half_in_float(impl)


negative = _make(np.negative, _neg)
positive = _make(np.positive, lambda x: x)
absolute = _make(np.absolute, _abs)
abs = _make(np.absolute, _abs, "abs")
fabs = _make(np.fabs, _abs)
sign = _make(np.sign, lambda x: P.sign_p.bind1(x))
sqrt = _make(np.sqrt, _float_only(P.sqrt_p))
cbrt = _make(np.cbrt, _float_only(P.cbrt_p))
square = _make(np.square, _square)
reciprocal = _make(np.reciprocal, _reciprocal)
exp = _make(np.exp, _float_only(P.exp_p))
exp2 = _make(np.exp2, _float_only(P.exp2_p))
expm1 = _make(np.expm1, _float_only(P.expm1_p))
log = _make(np.log, _float_only(P.log_p))
log2 = _make(np.log2, _log_base(2))
log10 = _make(np.log10, _log_base(10))
log1p = _make(np.log1p, _float_only(P.log1p_p))
sin = _make(np.sin, _float_only(P.sin_p))
cos = _make(np.cos, _float_only(P.cos_p))
tan = _make(np.tan, _float_only(P.tan_p))
arcsin = _make(np.arcsin, _float_only(P.asin_p))
arccos = _make(np.arccos, _float_only(P.acos_p))
arctan = _make(np.arctan, _float_only(P.atan_p))
sinh = _make(np.sinh, _float_only(P.sinh_p))
cosh = _make(np.cosh, _float_only(P.cosh_p))
tanh = _make(np.tanh, _float_only(P.tanh_p))
arcsinh = _make(np.arcsinh, _float_only(P.asinh_p))
arccosh = _make(np.arccosh, _float_only(P.acosh_p))
arctanh = _make(np.arctanh, _float_only(P.atanh_p))
asin, acos, atan = (_make(u, _float_only(p), n) for u, p, n in (
    (np.arcsin, P.asin_p, "asin"), (np.arccos, P.acos_p, "acos"), (np.arctan, P.atan_p, "atan")))
asinh, acosh, atanh = (_make(u, _float_only(p), n) for u, p, n in (
    (np.arcsinh, P.asinh_p, "asinh"), (np.arccosh, P.acosh_p, "acosh"),
    (np.arctanh, P.atanh_p, "atanh")))
floor = _make(np.floor, _float_only(P.floor_p, identity_for_ints=True))
ceil = _make(np.ceil, _float_only(P.ceil_p, identity_for_ints=True))
trunc = _make(np.trunc, _trunc)
fix = _make(np.trunc, _trunc, "fix")
rint = _make(np.rint, _rint)
isnan = _make(np.isnan, _isnan)
isinf = _make(np.isinf, _isinf)
isfinite = _make(np.isfinite, _isfinite)
signbit = _make(np.signbit, _signbit)
logical_not = _make(np.logical_not, lambda x: P.not_p.bind1(_to_bool(x)))
invert = _make(np.invert, lambda x: P.not_p.bind1(x))
bitwise_not = _make(np.invert, lambda x: P.not_p.bind1(x), "bitwise_not")
bitwise_invert = _make(np.invert, lambda x: P.not_p.bind1(x), "bitwise_invert")
deg2rad = _make(np.deg2rad, _scale(math.pi / 180))
radians = _make(np.radians, _scale(math.pi / 180))
rad2deg = _make(np.rad2deg, _scale(180 / math.pi))
degrees = _make(np.degrees, _scale(180 / math.pi))
def _bitwise_count(x):
    # NumPy counts the bits of |x| (so -1 has one bit), in uint8.
    d = get_aval(x).dtype
    ux = convert(P.abs_p.bind1(x) if dtypes.kind(d) == "i" else x, np.dtype(f"u{d.itemsize}"))
    return P.population_count_p.bind1(ux)


bitwise_count = _make(np.bitwise_count, _bitwise_count)
def _conj(x):
    return P.conj_p.bind1(x) if _kind(x) == "c" else x


conjugate = _make(np.conjugate, _conj)
conj = _make(np.conjugate, _conj, "conj")


# ---- binary ---------------------------------------------------------------------------------------------
def _binary_prim(prim):
    return lambda x, y: prim.bind1(x, y)


def _subtract(x, y):
    return P.sub_p.bind1(x, y)


def _true_divide(x, y):
    return P.div_p.bind1(x, y)


def _floor_divide(x, y):
    if _kind(x) == "b":
        return P.and_p.bind1(x, y)
    if _kind(x) in "iu":
        q = P.div_p.bind1(x, y)
        if _kind(x) == "u":
            return q
        r = P.rem_p.bind1(x, y)
        fix = P.and_p.bind1(P.ne_p.bind1(r, _const(0, r)),
                            P.ne_p.bind1(P.lt_p.bind1(r, _const(0, r)),
                                         P.lt_p.bind1(y, _const(0, y))))
        return lax.select(fix, P.sub_p.bind1(q, _const(1, q)), q)
    return divmod_float(x, y)[0]


def divmod_float(x, y):
    """NumPy's float floor division and modulo (npy_divmod): exact remainders via fmod.
    Operands must have equal shapes."""
    mod = P.rem_p.bind1(x, y)
    div = P.div_p.bind1(P.sub_p.bind1(x, mod), y)
    zero = _const(0, x)
    fix = P.and_p.bind1(P.ne_p.bind1(mod, zero),
                        P.ne_p.bind1(P.lt_p.bind1(y, zero), P.lt_p.bind1(mod, zero)))
    mod = lax.select(fix, P.add_p.bind1(mod, y), mod)
    div = lax.select(fix, P.sub_p.bind1(div, _const(1, div)), div)
    # A zero remainder takes the divisor's sign.
    mod = lax.select(P.eq_p.bind1(mod, zero), copysign_float(zero_like(mod), y), mod)
    floordiv = P.floor_p.bind1(div)
    bump = P.gt_p.bind1(P.sub_p.bind1(div, floordiv), _const(0.5, div))
    floordiv = lax.select(bump, P.add_p.bind1(floordiv, _const(1, div)), floordiv)
    # div == 0 keeps the sign of the true quotient; division by zero gives x / y.
    floordiv = lax.select(P.eq_p.bind1(div, zero),
                          copysign_float(zero_like(div), P.div_p.bind1(x, y)), floordiv)
    by_zero = P.eq_p.bind1(y, zero)
    floordiv = lax.select(by_zero, P.div_p.bind1(x, y), floordiv)
    mod = lax.select(by_zero, P.rem_p.bind1(x, y), mod)
    return floordiv, mod


def zero_like(x):
    return lax.full_like(x, 0)


def copysign_float(x, y):
    """|x| with the sign bit of y (x and y of one shape, or y rank-0)."""
    ax = P.abs_p.bind1(x)
    return lax.select(signbit_float(y), P.neg_p.bind1(ax), ax)


def _remainder(x, y):
    if _kind(x) == "b":
        raise TypeError("remainder of booleans")
    if _kind(x) in "iu":
        r = P.rem_p.bind1(x, y)
        if _kind(x) == "u":
            return r
        fix = P.and_p.bind1(P.ne_p.bind1(r, _const(0, r)),
                            P.ne_p.bind1(P.lt_p.bind1(r, _const(0, r)),
                                         P.lt_p.bind1(y, _const(0, y))))
        return lax.select(fix, P.add_p.bind1(r, y), r)
    return divmod_float(x, y)[1]


def int_power(x, y):
    """Integer ``x ** y`` for traced integer exponents: square-and-multiply over y's bits.
    Negative exponents give 0, except for bases 1 and -1 (whose powers stay +-1)."""
    signed = _kind(y) == "i"
    bits = 8 * get_aval(y).dtype.itemsize - (1 if signed else 0)
    acc = lax.full_like(x, 1)
    base = x
    for i in range(bits):
        bit = P.ne_p.bind1(P.and_p.bind1(P.shift_right_logical_p.bind1(y, _const(i, y)),
                                          _const(1, y)), _const(0, y))
        acc = lax.select(bit, P.mul_p.bind1(acc, base), acc)
        base = P.mul_p.bind1(base, base)
    if signed:
        one, zero = lax.full_like(x, 1), lax.full_like(x, 0)
        neg_value = lax.select(P.eq_p.bind1(x, one), one, zero)
        if _kind(x) == "i":
            odd = P.ne_p.bind1(P.and_p.bind1(y, _const(1, y)), _const(0, y))
            minus_one = lax.full_like(x, -1)
            neg_value = lax.select(P.eq_p.bind1(x, minus_one),
                                   lax.select(odd, minus_one, one), neg_value)
        acc = lax.select(P.lt_p.bind1(y, _const(0, y)), neg_value, acc)
    return acc


def _power(x, y):
    if _kind(x) in "fc":  # a rank-0 exponent stays a scalar operand, as in JAX's jaxprs
        return P.pow_p.bind1(x, y)
    x, y = broadcast_operands("power", [x, y], keep_scalars=False)  # int_power selects
    if _kind(x) == "b":
        return P.or_p.bind1(x, P.not_p.bind1(y))
    return int_power(x, y)


def power(x1, x2, out=None, *, dtype=None):
    """``x1 ** x2`` elementwise. A static Python integer exponent becomes ``integer_pow``
    (exact repeated multiplication), as in JAX.

    >>> power(fnp.array([2.0, 3.0]), 2)
    Array([4., 9.], dtype=float64)
    """
    check_arraylike("power", x1, x2)
    unsupported_out("power", out)
    if type(x2) is int and type(x1) not in (bool, int, float) and dtype is None:
        (x, _), _, _ = ufunc_operands("power", np.power, [x1, x2])
        if _kind(x) != "b":
            if x2 < 0 and _kind(x) not in "fc":
                raise ValueError("Integers to negative integer powers are not allowed.")
            if get_aval(x).dtype == dtypes.float16:
                # As NumPy's float16 pow, compute in float32 and round once: float16
                # intermediate products would overflow (100.**-3) and round at every step.
                return convert(lax.integer_pow(convert(x, dtypes.float32), x2), dtypes.float16)
            return lax.integer_pow(x, x2)
    return _power_ufunc(x1, x2, dtype=dtype)


_power_ufunc = _make(np.power, _power, "power")
_ALL.remove("power")
pow = power
float_power = _make(np.float_power, _power)


def _logaddexp_value(x, y, base2):
    m = P.max_p.bind1(x, y)
    d = P.neg_p.bind1(P.abs_p.bind1(P.sub_p.bind1(x, y)))
    if base2:  # log2(1 + 2**d)
        tail = P.div_p.bind1(P.log1p_p.bind1(P.exp2_p.bind1(d)), _const(math.log(2), x))
    else:
        tail = P.log1p_p.bind1(P.exp_p.bind1(d))
    # Equal inputs (also both +inf or both -inf, where d is nan) give m + log(2).
    same = P.add_p.bind1(m, _const(1.0 if base2 else math.log(2), x))
    return lax.select(P.eq_p.bind1(x, y), same, P.add_p.bind1(m, tail))


def _logaddexp_jvp(base2):
    """d/dx logaddexp(x, y) = exp(x - out) = logistic(x - y) (base 2: with (x - y) ln 2).

    Written through the weights rather than the max/abs of the value's formula, so the
    derivative is smooth at ties to every order (second derivative 1/4, ln2/4 for base 2, as
    the true function and JAX's rule give). With an infinite operand the weights take their
    limits: 1 and 0 against a finite one, 1/2 each when both are the same infinity (JAX's
    exp(x - out) gives NaN for two -inf)."""
    scale = math.log(2) if base2 else 1.0

    def jvp(primals, tangents):
        x, y = primals
        tx, ty = tangents
        out = _logaddexp_cj[base2](x, y)
        inf_tie = P.and_p.bind1(P.eq_p.bind1(x, y),
                                P.eq_p.bind1(P.abs_p.bind1(x), _const(np.inf, x)))
        diff = lax.select(inf_tie, lax.full_like(x, 0), P.sub_p.bind1(x, y))
        if base2:
            diff = P.mul_p.bind1(diff, _const(scale, diff))
        wx = P.logistic_p.bind1(diff)
        wy = P.logistic_p.bind1(P.neg_p.bind1(diff))
        return out, P.add_p.bind1(P.mul_p.bind1(tx, wx), P.mul_p.bind1(ty, wy))
    return jvp


def _make_logaddexp(base2):
    from ..transforms.autodiff import custom_jvp
    f = custom_jvp(lambda x, y: _logaddexp_value(x, y, base2))
    f.defjvp(_logaddexp_jvp(base2))
    return f


_logaddexp_cj = {False: _make_logaddexp(False), True: _make_logaddexp(True)}


def _logaddexp(x, y, base2=False):
    if _kind(x) != "f":
        return _logaddexp_value(x, y, base2)
    return _logaddexp_cj[base2](x, y)


def _hypot(x, y):
    ax, ay = P.abs_p.bind1(x), P.abs_p.bind1(y)
    if get_aval(x).dtype.itemsize < 8 and dtypes.default_float_dtype() == dtypes.float64:
        # Squares of float16/float32 values cannot overflow float64: no scaling needed.
        wide = [convert(v, dtypes.float64) for v in (ax, ay)]
        h = convert(P.sqrt_p.bind1(P.add_p.bind1(*[P.mul_p.bind1(v, v) for v in wide])),
                    get_aval(x).dtype)
    else:
        big, small = P.max_p.bind1(ax, ay), P.min_p.bind1(ax, ay)
        safe_big = lax.select(P.eq_p.bind1(big, _const(0, big)), lax.full_like(big, 1), big)
        r = P.div_p.bind1(small, safe_big)
        h = P.mul_p.bind1(big, P.sqrt_p.bind1(P.add_p.bind1(_const(1, r), P.mul_p.bind1(r, r))))
    # C's hypot: an infinite operand gives +inf even when the other one is NaN.
    inf = P.or_p.bind1(P.eq_p.bind1(ax, _const(np.inf, ax)), P.eq_p.bind1(ay, _const(np.inf, ay)))
    return lax.select(inf, lax.full_like(h, np.inf), h)


def _fmax_fmin(prim):
    def impl(x, y):
        m = prim.bind1(x, y)
        if _kind(x) not in "fc":  # a complex number is NaN if either part is
            return m
        return lax.select(P.ne_p.bind1(x, x), y, lax.select(P.ne_p.bind1(y, y), x, m))
    return impl


def _heaviside(x, h0):
    zero = _const(0, x)
    return lax.select(P.lt_p.bind1(x, zero), lax.full_like(x, 0),
                      lax.select(P.gt_p.bind1(x, zero), lax.full_like(x, 1),
                                 lax.select(P.ne_p.bind1(x, x), x, h0)))


def _copysign(x, y):
    return copysign_float(x, y)


def _logical(prim):
    return lambda x, y: prim.bind1(_to_bool(x), _to_bool(y))


def _compare(prim, negative_first):
    """A comparison. NumPy also has exact mixed int64/uint64 loops: a negative signed value
    compares below every unsigned one (``negative_first`` is ``negative <op> unsigned``)."""
    def impl(x, y):
        dx, dy = get_aval(x).dtype, get_aval(y).dtype
        if dx == dy:
            if dtypes.kind(dx) == "c" and prim not in (P.eq_p, P.ne_p):
                return _lexicographic(prim, x, y)
            return prim.bind1(x, y)
        if dtypes.kind(dx) == "i":
            neg, r, value = P.lt_p.bind1(x, _const(0, x)), prim.bind1(convert(x, dy), y), \
                negative_first
        else:
            neg, r = P.lt_p.bind1(y, _const(0, y)), prim.bind1(x, convert(y, dx))
            # Swapping the operands flips the ordered comparisons but not (in)equality.
            value = negative_first if prim in (P.eq_p, P.ne_p) else not negative_first
        return lax.select(neg, lax.full_like(r, value), r)
    return impl


def _lexicographic(prim, x, y):
    """``prim`` (lt, le, gt, ge) of complex ``x`` and ``y`` in NumPy's and JAX's order: the
    real parts decide unless they are equal, then the imaginary parts (any comparison with a
    NaN part is false). lax's comparisons refuse complex operands, as JAX's do."""
    (xr, xi), (yr, yi) = _parts(x), _parts(y)
    return lax.select(P.eq_p.bind1(xr, yr), prim.bind1(xi, yi), prim.bind1(xr, yr))


def _right_shift(x, y):
    prim = P.shift_right_logical_p if _kind(x) == "u" else P.shift_right_arithmetic_p
    return prim.bind1(x, y)


def _ldexp(x, n):
    """``x * 2**n`` without intermediate overflow: musl's scalbn (scale by at most 2**emax
    per step, stepping through the subnormal range so that only the last multiply rounds)."""
    d = get_aval(x).dtype
    info = np.finfo(d)
    emax, emin, p = int(info.maxexp) - 1, int(info.minexp), int(info.nmant) + 1
    for _ in range(2):
        big = P.gt_p.bind1(n, _const(emax, n))
        x = lax.select(big, P.mul_p.bind1(x, _const(2.0 ** emax, x)), x)
        n = lax.select(big, P.sub_p.bind1(n, _const(emax, n)), n)
    for _ in range(2):
        small = P.lt_p.bind1(n, _const(emin, n))
        x = lax.select(small, P.mul_p.bind1(x, _const(2.0 ** (emin + p), x)), x)
        n = lax.select(small, P.sub_p.bind1(n, _const(emin + p, n)), n)
    n = P.max_p.bind1(P.min_p.bind1(n, _const(emax, n)), _const(emin, n))
    bits_dtype = np.dtype(f"i{d.itemsize}")
    biased = convert(P.add_p.bind1(n, _const(emax, n)), bits_dtype)
    scale = lax.bitcast_convert_type(
        P.shift_left_p.bind1(biased, _const(int(info.nmant), biased)), d)
    return P.mul_p.bind1(x, scale)


add = _make(np.add, _binary_prim(P.add_p))
subtract = _make(np.subtract, _subtract)
multiply = _make(np.multiply, lambda x, y: (P.and_p if _kind(x) == "b" else P.mul_p).bind1(x, y))
divide = _make(np.divide, _true_divide)
true_divide = _make(np.true_divide, _true_divide, "true_divide")
floor_divide = _make(np.floor_divide, _half_in_float(_floor_divide), scalars=False)
remainder = _make(np.remainder, _half_in_float(_remainder), scalars=False)
mod = _make(np.remainder, _half_in_float(_remainder), "mod", scalars=False)
fmod = _make(np.fmod, _binary_prim(P.rem_p))
# Complex operands: lax.max/lax.min's lexicographic order, NaNs not propagated (as in JAX).
maximum = _make(np.maximum, _binary_prim(P.max_p))
minimum = _make(np.minimum, _binary_prim(P.min_p))
fmax = _make(np.fmax, _fmax_fmin(P.max_p), scalars=False)
fmin = _make(np.fmin, _fmax_fmin(P.min_p), scalars=False)
arctan2 = _make(np.arctan2, _binary_prim(P.atan2_p))
atan2 = _make(np.arctan2, _binary_prim(P.atan2_p), "atan2")
hypot = _make(np.hypot, _half_in_float(_hypot), scalars=False)
logaddexp = _make(np.logaddexp, _half_in_float(_logaddexp), scalars=False)
logaddexp2 = _make(np.logaddexp2, _half_in_float(lambda x, y: _logaddexp(x, y, base2=True)),
                   scalars=False)
copysign = _make(np.copysign, _copysign, scalars=False)
nextafter = _make(np.nextafter, _binary_prim(P.nextafter_p))
heaviside = _make(np.heaviside, _heaviside, scalars=False)
ldexp = _make(np.ldexp, _half_in_float(_ldexp), scalars=False)


def _comparison(np_ufunc, prim, negative_first):
    ordered = {P.lt_p: "<", P.le_p: "<", P.gt_p: ">", P.ge_p: ">"}.get(prim)
    fn = _make(np_ufunc, _compare(prim, negative_first))

    def compare(x1, x2, /, out=None, *, dtype=None, where=None):
        # NumPy 2 compares integer arrays with Python ints outside their dtype's range by
        # value (uint8 array < -1 is all False) instead of overflowing the scalar; JAX
        # (python_int_wraparound) compares with the wrapped scalar.
        for arr, s, arr_first in ((x1, x2, True), (x2, x1, False)):
            if (type(s) is int and dtype is None and out is None and where is None
                    and not config.python_int_wraparound):
                aval = get_aval(_operand(arr))
                if dtypes.kind(aval.dtype) in "iu" and not aval.weak_type:
                    info = np.iinfo(aval.dtype)
                    if not info.min <= s <= info.max:
                        above = s > info.max
                        value = prim is P.ne_p or (ordered == "<" and above == arr_first) or (
                            ordered == ">" and above != arr_first)
                        return lax.full(aval.shape, value, dtypes.bool_)
        return fn(x1, x2, out=out, dtype=dtype, where=where)

    compare.__name__ = compare.__qualname__ = fn.__name__
    compare.__doc__ = fn.__doc__
    return compare


equal = _comparison(np.equal, P.eq_p, False)
not_equal = _comparison(np.not_equal, P.ne_p, True)
less = _comparison(np.less, P.lt_p, True)
less_equal = _comparison(np.less_equal, P.le_p, True)
greater = _comparison(np.greater, P.gt_p, False)
greater_equal = _comparison(np.greater_equal, P.ge_p, False)
logical_and = _make(np.logical_and, _logical(P.and_p))
logical_or = _make(np.logical_or, _logical(P.or_p))
logical_xor = _make(np.logical_xor, _logical(P.xor_p))
bitwise_and = _make(np.bitwise_and, _binary_prim(P.and_p))
bitwise_or = _make(np.bitwise_or, _binary_prim(P.or_p))
bitwise_xor = _make(np.bitwise_xor, _binary_prim(P.xor_p))
left_shift = _make(np.left_shift, _binary_prim(P.shift_left_p))
right_shift = _make(np.right_shift, _right_shift)
bitwise_left_shift = _make(np.left_shift, _binary_prim(P.shift_left_p), "bitwise_left_shift")
bitwise_right_shift = _make(np.right_shift, _right_shift, "bitwise_right_shift")


def divmod(x1, x2, out=None):
    """``(floor_divide(x1, x2), remainder(x1, x2))``.

    >>> divmod(fnp.array([7, -7]), 2)
    (Array([ 3, -4], dtype=int64), Array([1, 1], dtype=int64))
    """
    unsupported_out("divmod", out)
    return floor_divide(x1, x2), remainder(x1, x2)


def modf(x, out=None):
    """Fractional and integral parts, both with the sign of ``x`` (NumPy's float loops:
    integers give floats).

    >>> modf(fnp.array([-2.5, 3.0]))
    (Array([-0.5,  0. ], dtype=float64), Array([-2.,  3.], dtype=float64))
    """
    check_arraylike("modf", x)
    unsupported_out("modf", out)
    (x,), _, weak = ufunc_operands("modf", np.modf, [x])
    whole = _trunc(x)
    frac = P.sub_p.bind1(x, whole)
    # inf - inf would be nan; NumPy gives a zero fraction with x's sign.
    frac = lax.select(_isinf(x), lax.full_like(x, 0), frac)
    d = get_aval(x).dtype
    return convert(copysign_float(frac, x), d, weak), convert(whole, d, weak)


_ALL += ["power", "pow", "divmod", "modf"]
__all__ = list(_ALL)
