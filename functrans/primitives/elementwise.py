"""Elementwise primitives: math, comparisons, bitwise ops, select_n, convert_element_type.

All are built by two category factories, :func:`unop` and :func:`binop`, which give them the
type rule (equal shapes or rank-0 scalars; one dtype from an allowed set) and, through the
``elementwise`` trait, their batching and lowering rules for free::

    >>> sin_p.bind1(np.float32(1.0))
    Array(0.841471, dtype=float32)
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.trace import Primitive
from . import complex_order, special_impls

_KIND_NAMES = {
    "f": "a real floating-point dtype",
    "iu": "an integer dtype",
    "iub": "an integer or boolean dtype",
    "iuf": "a real numeric (integer or floating-point) dtype",
    "if": "a signed real numeric dtype",
    "iufb": "a real numeric or boolean dtype",
    "c": "a complex dtype",
    "fc": "a floating-point or complex dtype",
    "iufc": "a numeric (integer, floating-point or complex) dtype",
    "iufbc": "a numeric (possibly complex) or boolean dtype",
}


def elementwise_shape(name: str, avals) -> tuple:
    """Equal shapes, or rank-0 operands that broadcast against the rest (as in JAX)."""
    shape = None
    for a in avals:
        if a.shape:
            if shape is None:
                shape = a.shape
            elif a.shape != shape:
                got = ", ".join(x.str_short() for x in avals)
                raise TypeError(f"{name} requires operands of equal shapes (or rank-0 scalars), "
                                f"got {got}; functrans.numpy functions broadcast, lax ones do not")
    return shape if shape is not None else ()


def check_dtypes(name: str, avals, kinds: str) -> np.dtype:
    d0 = avals[0].dtype
    for a in avals[1:]:
        if a.dtype != d0:
            got = ", ".join(x.str_short() for x in avals)
            raise TypeError(f"{name} requires operands of the same dtype, got {got}")
    if dtypes.kind(d0) not in kinds:
        raise TypeError(f"{name} does not accept dtype {d0}: it requires {_KIND_NAMES[kinds]}")
    return d0


try:  # np.errstate builds its state on every entry; setting a prebuilt one is 4x cheaper
    from numpy._core._ufunc_config import _extobj_contextvar
    from numpy._core.umath import _make_extobj
    _IGNORE_ALL = _make_extobj(all="ignore")
except (ImportError, AttributeError, TypeError):  # another NumPy layout: the public API
    _extobj_contextvar = None


def _quiet(fn):
    """NumPy warns on log(0), 0/0 etc.; a primitive returns the IEEE result silently, as
    compiled code does."""
    if _extobj_contextvar is None:
        def impl(*args, **params):
            with np.errstate(all="ignore"):
                return [fn(*args, **params)]
    else:
        state, ignore = _extobj_contextvar, _IGNORE_ALL

        def impl(*args, **params):
            token = state.set(ignore)
            try:
                return [fn(*args, **params)]
            finally:
                state.reset(token)
    impl.__name__ = getattr(fn, "__name__", "impl")
    return impl


def unop(name, fn, kinds, *, out_dtype=None, traits=()) -> Primitive:
    """An elementwise unary primitive computing ``fn`` (ndarray -> ndarray)."""
    def abstract_eval(x, **params):
        d = check_dtypes(name, [x], kinds)
        return [ShapedArray(x.shape, out_dtype or d, x.weak_type and out_dtype is None)]
    return Primitive(name, impl=_quiet(fn), abstract_eval=abstract_eval,
                     traits={"elementwise", *traits})


def binop(name, fn, kinds, *, out_dtype=None, traits=()) -> Primitive:
    """An elementwise binary primitive computing ``fn(x, y)``."""
    def abstract_eval(x, y, **params):
        shape = elementwise_shape(name, [x, y])
        d = check_dtypes(name, [x, y], kinds)
        weak = x.weak_type and y.weak_type and out_dtype is None
        return [ShapedArray(shape, out_dtype or d, weak)]
    return Primitive(name, impl=_quiet(fn), abstract_eval=abstract_eval,
                     traits={"elementwise", *traits})


F, INT, INTB, NUM, SIGNED, ANY = "f", "iu", "iub", "iuf", "if", "iufb"
# Operations NumPy and JAX define for complex numbers too (no ordering, rounding or bits).
FC, NUMC, ANYC = "fc", "iufc", "iufbc"
BOOL = dtypes.bool_

# ---- unary math ------------------------------------------------------------------------------
neg_p = unop("neg", np.negative, NUMC)
sign_p = unop("sign", np.sign, NUMC)
abs_p = unop("abs", np.abs, NUMC)


def _abs_abstract_eval(x):
    # |z| of a complex z is real, as in NumPy and JAX.
    d = check_dtypes("abs", [x], NUMC)
    return [ShapedArray(x.shape, dtypes.real_dtype(d), x.weak_type)]


abs_p.abstract_eval = _abs_abstract_eval
floor_p = unop("floor", np.floor, F)
ceil_p = unop("ceil", np.ceil, F)
is_finite_p = unop("is_finite", np.isfinite, F, out_dtype=BOOL)
exp_p = unop("exp", np.exp, FC)
exp2_p = unop("exp2", np.exp2, FC)
log_p = unop("log", np.log, FC)
log1p_p = unop("log1p", np.log1p, FC)
expm1_p = unop("expm1", np.expm1, FC)
tanh_p = unop("tanh", np.tanh, FC)
sin_p = unop("sin", np.sin, FC)
cos_p = unop("cos", np.cos, FC)
tan_p = unop("tan", np.tan, FC)
asin_p = unop("asin", np.arcsin, FC)
acos_p = unop("acos", np.arccos, FC)
atan_p = unop("atan", np.arctan, FC)
sinh_p = unop("sinh", np.sinh, FC)
cosh_p = unop("cosh", np.cosh, FC)
asinh_p = unop("asinh", np.arcsinh, FC)
acosh_p = unop("acosh", np.arccosh, FC)
atanh_p = unop("atanh", np.arctanh, FC)
sqrt_p = unop("sqrt", np.sqrt, FC)
rsqrt_p = unop("rsqrt", lambda x: 1 / np.sqrt(x), FC)
cbrt_p = unop("cbrt", np.cbrt, F)
square_p = unop("square", np.square, NUMC)
erf_p = unop("erf", special_impls.erf, F)
erfc_p = unop("erfc", special_impls.erfc, F)
erf_inv_p = unop("erf_inv", special_impls.erf_inv, F)
lgamma_p = unop("lgamma", special_impls.lgamma, F)
digamma_p = unop("digamma", special_impls.digamma, F)
not_p = unop("not", np.invert, INTB)


def _logistic(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)


logistic_p = unop("logistic", _logistic, F)


def _popcount(x):
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    return np.bitwise_count(x.view(unsigned)).astype(x.dtype)


population_count_p = unop("population_count", _popcount, INT)


def _round(x, rounding_method):
    if rounding_method == 1:  # to nearest even, like np.round
        return np.rint(x)
    t = np.trunc(x)  # away from zero, like C round()
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(x.dtype)


round_p = unop("round", _round, F)


def integer_pow_steps(y: int):
    """Square-and-multiply plan for x ** |y| (shared by the NumPy impl and the compiled
    lowering, so both round identically): a list of ("mul", acc) / ("square",) steps."""
    steps, n, first = [], abs(y), True
    while n:
        if n & 1:
            steps.append("set" if first else "mul")
            first = False
        n >>= 1
        if n:
            steps.append("square")
    return steps


def _integer_pow(x, y):
    acc, base = None, x
    for step in integer_pow_steps(y):
        if step == "square":
            base = base * base
        else:
            acc = base if step == "set" else acc * base
    if acc is None:
        acc = np.ones_like(x)
    if y < 0:
        acc = 1 / acc
    return np.asarray(acc, dtype=x.dtype)


integer_pow_p = unop("integer_pow", _integer_pow, NUMC)
_integer_pow_type = integer_pow_p.abstract_eval


def _integer_pow_abstract_eval(x, *, y):
    if not isinstance(y, (int, np.integer)):
        raise TypeError(f"integer_pow requires an integer exponent y, got {y!r}")
    if y < 0 and dtypes.kind(x.dtype) not in "fc":
        raise TypeError(f"integer_pow with a negative exponent ({y}) requires a floating-point "
                        f"operand, got {x.str_short()}")
    return _integer_pow_type(x)


integer_pow_p.abstract_eval = _integer_pow_abstract_eval

# ---- binary math ------------------------------------------------------------------------------
add_p = binop("add", np.add, ANYC)
add_any_p = binop("add_any", np.add, ANYC)  # accumulation of tangents/cotangents in autodiff
sub_p = binop("sub", np.subtract, NUMC)
mul_p = binop("mul", np.multiply, ANYC)


def _max(x, y):
    return complex_order.maximum(x, y) if x.dtype.kind == "c" else np.maximum(x, y)


def _min(x, y):
    return complex_order.minimum(x, y) if x.dtype.kind == "c" else np.minimum(x, y)


# Complex operands are ordered lexicographically, as in JAX (lax.max and lax.min accept them;
# lax.lt/gt & co do not, jnp's comparisons compose them: functrans.numpy.ufuncs).
max_p = binop("max", _max, ANYC)
min_p = binop("min", _min, ANYC)
atan2_p = binop("atan2", np.arctan2, F)
nextafter_p = binop("nextafter", np.nextafter, F)
pow_p = binop("pow", np.power, FC)
zeta_p = binop("zeta", special_impls.zeta, F)
polygamma_p = binop("polygamma", special_impls.polygamma, F)


def _div(x, y):
    if dtypes.kind(x.dtype) in "fc":
        return np.true_divide(x, y)
    # C semantics: truncate toward zero; x / 0 gives 0, as NumPy's integer division does.
    q = np.floor_divide(x, y)
    fix = (np.remainder(x, y) != 0) & ((x < 0) != (y < 0))
    return np.where(fix, q + 1, q).astype(x.dtype)


def _rem(x, y):
    return np.fmod(x, y)  # sign of the dividend, as C and XLA


div_p = binop("div", _div, NUMC)
rem_p = binop("rem", _rem, NUM)

and_p = binop("and", np.bitwise_and, INTB)
or_p = binop("or", np.bitwise_or, INTB)
xor_p = binop("xor", np.bitwise_xor, INTB)


def _shift_ok(x, y):
    bits = 8 * x.dtype.itemsize
    return (y >= 0) & (y < bits), np.clip(y, 0, bits - 1)


def _static_shift(x, y):
    """The shift amount as an ``x``-typed scalar when it is a rank-0 in-range value, else None.

    Constant shifts dominate bit-twiddling code (e.g. PRNG hashes); they need no masking."""
    if np.ndim(y) == 0 and 0 <= y < 8 * x.dtype.itemsize:
        return y.astype(x.dtype) if isinstance(y, np.ndarray) else x.dtype.type(y)
    return None


def _shift_left(x, y):
    s = _static_shift(x, y)
    if s is not None:
        return np.left_shift(x, s)
    ok, s = _shift_ok(x, y)
    return np.where(ok, np.left_shift(x, s), 0).astype(x.dtype)


def _shift_right_arithmetic(x, y):
    # XLA fills with the top bit for unsigned operands too: shift the signed view.
    ok, s = _shift_ok(x, y)
    sx = x.view(np.dtype(f"i{x.dtype.itemsize}"))
    fill = np.right_shift(sx, 8 * x.dtype.itemsize - 1)
    out = np.where(ok, np.right_shift(sx, s.astype(sx.dtype)), fill)
    return out.astype(sx.dtype).view(x.dtype)


def _shift_right_logical(x, y):
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    if x.dtype == unsigned and (s := _static_shift(x, y)) is not None:
        return np.right_shift(x, s)
    ok, s = _shift_ok(x, y)
    shifted = np.right_shift(x.astype(unsigned), s.astype(unsigned))  # astype keeps the bits
    return np.where(ok, shifted, 0).astype(unsigned).astype(x.dtype)


shift_left_p = binop("shift_left", _shift_left, INT)
shift_right_arithmetic_p = binop("shift_right_arithmetic", _shift_right_arithmetic, INT)
shift_right_logical_p = binop("shift_right_logical", _shift_right_logical, INT)

# ---- comparisons --------------------------------------------------------------------------------
eq_p = binop("eq", np.equal, ANYC, out_dtype=BOOL, traits={"comparison"})
ne_p = binop("ne", np.not_equal, ANYC, out_dtype=BOOL, traits={"comparison"})
lt_p = binop("lt", np.less, ANY, out_dtype=BOOL, traits={"comparison"})
le_p = binop("le", np.less_equal, ANY, out_dtype=BOOL, traits={"comparison"})
gt_p = binop("gt", np.greater, ANY, out_dtype=BOOL, traits={"comparison"})
ge_p = binop("ge", np.greater_equal, ANY, out_dtype=BOOL, traits={"comparison"})


# ---- select_n -----------------------------------------------------------------------------------
def _select_n_abstract_eval(which, *cases):
    if not cases:
        raise TypeError("select_n requires at least one case")
    shape = elementwise_shape("select_n", [which, *cases])
    if which.dtype == BOOL:
        if len(cases) > 2:
            raise TypeError(f"select_n with a boolean selector takes 1 or 2 cases, got {len(cases)}")
    elif dtypes.kind(which.dtype) not in "iu":
        raise TypeError(f"select_n selector must be bool or integer, got {which.str_short()}")
    d = check_dtypes("select_n", cases, ANYC)
    return [ShapedArray(shape, d, all(c.weak_type for c in cases))]


_UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _select_bits(which, if_false, if_true):
    """``np.where(which, if_true, if_false)`` for a full-size boolean ``which``, without a
    branch per element: on a fresh random mask (a ReLU's) np.where mispredicts about half of
    them, ~3.7 ns per element, 4-10x this bitwise select from 4,096 elements on. Bit-exact
    (NaN payloads, signed zeros), as it moves bits."""
    uint = _UINT_OF_SIZE[if_true.dtype.itemsize]
    f = if_false.view(uint)
    m = which.astype(uint)
    np.negative(m, out=m)  # all ones where true
    np.bitwise_and(np.bitwise_xor(if_true.view(uint), f), m, out=m)
    np.bitwise_xor(m, f, out=m)
    return m.view(if_true.dtype)


def _select_n_impl(which, *cases):
    if len(cases) == 1:
        return [np.broadcast_to(cases[0], np.broadcast_shapes(which.shape, cases[0].shape))]
    if which.dtype == np.bool_:
        if which.size >= 512 and cases[1].dtype.itemsize in _UINT_OF_SIZE and \
                which.shape == np.broadcast_shapes(which.shape, *(c.shape for c in cases)):
            return [_select_bits(which, cases[0], cases[1])]
        return [np.where(which, cases[1], cases[0])]
    idx = np.clip(which, 0, len(cases) - 1).astype(np.intp)  # np.choose refuses uint64
    return [np.choose(idx, cases)]


select_n_p = Primitive("select_n", impl=_select_n_impl, abstract_eval=_select_n_abstract_eval,
                       traits={"elementwise"})


# ---- convert_element_type -----------------------------------------------------------------------
def _convert_abstract_eval(x, *, new_dtype, weak_type):
    dtypes.canonicalize_dtype(new_dtype, what="convert_element_type target")
    return [ShapedArray(x.shape, new_dtype, weak_type)]


def _convert_impl(x, *, new_dtype, weak_type):
    with np.errstate(all="ignore"):
        if new_dtype == BOOL:
            return [x != 0]
        if dtypes.kind(x.dtype) == "c" and dtypes.kind(np.dtype(new_dtype)) != "c":
            x = x.real  # complex -> real keeps the real part (NumPy warns, JAX does not)
        if dtypes.kind(x.dtype) == "f" and dtypes.kind(np.dtype(new_dtype)) in "iu":
            return [float_to_int(x, np.dtype(new_dtype))]
        return [x.astype(new_dtype)]


def float_to_int(x, dtype):
    """Floats to the integer ``dtype`` as XLA converts them: truncated toward zero, NaN to 0,
    values beyond the dtype's range to its nearest bound (negative ones to 0 for unsigned
    types). NumPy leaves those undefined: INT_MIN for all of them on x86, and int8/int16
    wrap around.

    >>> float_to_int(np.array([np.nan, np.inf, -1e20, 2.7, -2.7]), np.dtype("int32")).tolist()
    [0, 2147483647, -2147483648, 2, -2]
    """
    info = np.iinfo(dtype)
    # Compared in float64, which holds every narrower float exactly. lo (the minimum) and hi
    # (one past the maximum) are 0 or powers of two, exact too; everything in [lo, hi)
    # truncates to a value in range.
    lo, hi = float(info.min), float(info.max) + 1.0
    if x.size == 0 or lo <= float(x.min()) and float(x.max()) < hi:  # NaN fails both
        return x.astype(dtype)
    xf = x.astype(np.float64)
    big, small = xf >= hi, xf <= lo
    inside = np.where(big | small | np.isnan(xf), 0.0, xf).astype(dtype)
    return np.where(big, info.max, np.where(small, info.min, inside)).astype(dtype)


convert_element_type_p = Primitive(
    "convert_element_type", impl=_convert_impl, abstract_eval=_convert_abstract_eval,
    traits={"elementwise"})


# ---- stop_gradient ------------------------------------------------------------------------------
stop_gradient_p = Primitive("stop_gradient", impl=lambda x: [x],
                            abstract_eval=lambda x: [x], traits={"elementwise"})


# ---- bitcast_convert_type -----------------------------------------------------------------------
def _bitcast_abstract_eval(x, *, new_dtype):
    dtypes.canonicalize_dtype(new_dtype, what="bitcast_convert_type target")
    if np.dtype(new_dtype).itemsize != x.dtype.itemsize:
        raise TypeError(f"bitcast_convert_type: {x.dtype} and {new_dtype} differ in size; only "
                        "same-width bitcasts are supported")
    return [ShapedArray(x.shape, new_dtype)]


bitcast_convert_type_p = Primitive(
    "bitcast_convert_type",
    # ascontiguousarray makes 0-d arrays 1-d; the reshape restores the operand's shape.
    impl=lambda x, *, new_dtype: [np.ascontiguousarray(x).view(new_dtype).reshape(x.shape)],
    abstract_eval=_bitcast_abstract_eval, traits={"elementwise", "narrow_native"})


# ==== differentiation rules =======================================================================
from ..core.trace import get_aval  # noqa: E402
from ..transforms.autodiff.rules import (Zero, broadcast_to_aval, defjvp,  # noqa: E402
                                         defjvp_zero, deflinear, instantiate, is_undefined,
                                         is_zero, jvp_rules, transpose_rules, unbroadcast)


def _c(value, like):
    """A scalar constant of ``like``'s dtype (inlined as a literal when staged)."""
    return np.asarray(value, get_aval(like).dtype)[()]


def _mul(x, y):
    return mul_p.bind1(x, y)


def _div(x, y):
    return div_p.bind1(x, y)


def _add(x, y):
    return add_p.bind1(x, y)


def _sub(x, y):
    return sub_p.bind1(x, y)


def _neg(x):
    return neg_p.bind1(x)


def _square(x):
    return mul_p.bind1(x, x)


def _select(pred, on_true, on_false):
    return select_n_p.bind1(pred, on_false, on_true)


for _p in (sign_p, floor_p, ceil_p, round_p, is_finite_p, not_p,
           population_count_p, and_p, or_p, xor_p, shift_left_p, shift_right_arithmetic_p,
           shift_right_logical_p, eq_p, ne_p, lt_p, le_p, gt_p, ge_p, bitcast_convert_type_p,
           stop_gradient_p):
    defjvp_zero(_p)

# nextafter(x, y) is x moved by one ulp: as a function of real x it follows x (finite
# differences at any step above an ulp agree), and it does not depend on y's value.
defjvp(nextafter_p, lambda g, ans, x, y: g, None)
# JAX's rule: select(x >= 0, g, -g), so abs'(0) = abs'(-0.) = 1 (not sign(0) = 0).
defjvp(abs_p, lambda g, ans, x: _select(ge_p.bind1(x, _c(0, x)), g, _neg(g)))
defjvp(exp_p, lambda g, ans, x: _mul(g, ans))
defjvp(exp2_p, lambda g, ans, x: _mul(g, _mul(ans, _c(np.log(2), ans))))
defjvp(log_p, lambda g, ans, x: _div(g, x))
defjvp(log1p_p, lambda g, ans, x: _div(g, _add(x, _c(1, x))))
defjvp(expm1_p, lambda g, ans, x: _mul(g, _add(ans, _c(1, ans))))
defjvp(tanh_p, lambda g, ans, x: _mul(g, _sub(_c(1, ans), _square(ans))))
defjvp(logistic_p, lambda g, ans, x: _mul(g, _mul(ans, _sub(_c(1, ans), ans))))
defjvp(sin_p, lambda g, ans, x: _mul(g, cos_p.bind1(x)))
defjvp(cos_p, lambda g, ans, x: _neg(_mul(g, sin_p.bind1(x))))
defjvp(tan_p, lambda g, ans, x: _mul(g, _add(_c(1, ans), _square(ans))))
defjvp(asin_p, lambda g, ans, x: _mul(g, rsqrt_p.bind1(_sub(_c(1, x), _square(x)))))
defjvp(acos_p, lambda g, ans, x: _neg(_mul(g, rsqrt_p.bind1(_sub(_c(1, x), _square(x))))))
defjvp(atan_p, lambda g, ans, x: _div(g, _add(_c(1, x), _square(x))))
defjvp(sinh_p, lambda g, ans, x: _mul(g, cosh_p.bind1(x)))
defjvp(cosh_p, lambda g, ans, x: _mul(g, sinh_p.bind1(x)))
defjvp(asinh_p, lambda g, ans, x: _mul(g, rsqrt_p.bind1(_add(_square(x), _c(1, x)))))
defjvp(acosh_p, lambda g, ans, x: _mul(g, rsqrt_p.bind1(
    _mul(_sub(x, _c(1, x)), _add(x, _c(1, x))))))
defjvp(atanh_p, lambda g, ans, x: _div(g, _sub(_c(1, x), _square(x))))
defjvp(sqrt_p, lambda g, ans, x: _div(g, _mul(ans, _c(2, ans))))
defjvp(rsqrt_p, lambda g, ans, x: _mul(g, _mul(_div(ans, x), _c(-0.5, x))))
defjvp(cbrt_p, lambda g, ans, x: _div(g, _mul(_square(ans), _c(3, ans))))
defjvp(square_p, lambda g, ans, x: _mul(g, _mul(x, _c(2, x))))
defjvp(erf_p, lambda g, ans, x: _mul(g, _mul(_c(2 / np.sqrt(np.pi), x),
                                            exp_p.bind1(_neg(_square(x))))))
defjvp(erfc_p, lambda g, ans, x: _mul(g, _mul(_c(-2 / np.sqrt(np.pi), x),
                                             exp_p.bind1(_neg(_square(x))))))
defjvp(erf_inv_p, lambda g, ans, x: _mul(g, _mul(_c(np.sqrt(np.pi) / 2, x),
                                                exp_p.bind1(_square(ans)))))
defjvp(lgamma_p, lambda g, ans, x: _mul(g, digamma_p.bind1(x)))


defjvp(digamma_p, lambda g, ans, x: _mul(g, polygamma_p.bind1(_c(1, x), x)))


def _polygamma_jvp_m(g, ans, m, x):
    raise NotImplementedError("polygamma is not differentiable with respect to its order m")


def _zeta_jvp_s(g, ans, s, q):
    raise NotImplementedError("zeta is only differentiable with respect to q")


defjvp(polygamma_p, _polygamma_jvp_m,
       lambda g, ans, m, x: _mul(g, polygamma_p.bind1(_add(m, _c(1, m)), x)))
# d/dq zeta(s, q) = -s zeta(s + 1, q)
defjvp(zeta_p, _zeta_jvp_s,
       lambda g, ans, s, q: _mul(g, _neg(_mul(s, zeta_p.bind1(_add(s, _c(1, s)), q)))))


def _integer_pow_jvp(g, ans, x, *, y):
    if y == 0:
        return Zero(get_aval(ans))
    if y == 1:
        return g
    deriv = _mul(_c(y, x), x if y == 2 else integer_pow_p.bind1(x, y=y - 1))
    return _mul(g, deriv)


def _integer_pow_jvp_rule(primals, tangents, *, y):
    ans = integer_pow_p.bind1(*primals, y=y)
    g = tangents[0]
    if is_zero(g) or y == 0:
        return [ans], [Zero(get_aval(ans))]
    return [ans], [_integer_pow_jvp(g, ans, primals[0], y=y)]


jvp_rules[integer_pow_p] = _integer_pow_jvp_rule


def _pow_jvp_x(g, ans, x, y):
    # d/dx x**y = y * x**(y-1); written to be exact at y == 0 (derivative 0, not nan).
    ym1 = _sub(y, _c(1, y))
    safe = _select(eq_p.bind1(y, _c(0, y)), _c(0, ans), _mul(y, pow_p.bind1(x, ym1)))
    return _mul(g, safe)


def _pow_jvp_y(g, ans, x, y):
    # d/dy x**y = log(x) * x**y; at x == 0 the limit is 0 (log(1) stands in for log(0)).
    safe_x = _select(eq_p.bind1(x, _c(0, x)), _c(1, x), x)
    return _mul(g, _mul(log_p.bind1(safe_x), ans))


defjvp(pow_p, _pow_jvp_x, _pow_jvp_y)
defjvp(atan2_p, lambda g, ans, x, y: _mul(g, _div(y, _add(_square(x), _square(y)))),
       lambda g, ans, x, y: _neg(_mul(g, _div(x, _add(_square(x), _square(y))))))


def _balanced_eq(x, ans, y):
    # JAX's weight for complex max/min (its rule for every dtype): 1 where x is the result,
    # 0.5 where y is too.
    return _select(eq_p.bind1(x, ans), _select(eq_p.bind1(y, ans), _c(0.5, ans), _c(1, ans)),
                   _c(0, ans))


def _max_min_jvp(pick_x_prim):
    # Ties split the tangent evenly, as in JAX (a subgradient that keeps symmetry).
    def deriv_x(g, ans, x, y):
        if dtypes.kind(get_aval(x).dtype) == "c":
            return _mul(g, _balanced_eq(x, ans, y))
        w = _select(pick_x_prim.bind1(x, y), _c(1, g), _select(eq_p.bind1(x, y), _c(0.5, g),
                                                                _c(0, g)))
        return _mul(g, w)

    def deriv_y(g, ans, x, y):
        if dtypes.kind(get_aval(x).dtype) == "c":
            return _mul(g, _balanced_eq(y, ans, x))
        w = _select(pick_x_prim.bind1(y, x), _c(1, g), _select(eq_p.bind1(x, y), _c(0.5, g),
                                                                _c(0, g)))
        return _mul(g, w)
    return deriv_x, deriv_y


defjvp(max_p, *_max_min_jvp(gt_p))
defjvp(min_p, *_max_min_jvp(lt_p))
defjvp(mul_p, lambda g, ans, x, y: _mul(g, y), lambda g, ans, x, y: _mul(x, g))
defjvp(div_p, lambda g, ans, x, y: _div(g, y),
       lambda g, ans, x, y: _neg(_mul(g, _div(ans, y))))


def _rem_jvp_y(g, ans, x, y):
    q = div_p.bind1(x, y)
    trunc = _mul(sign_p.bind1(q), floor_p.bind1(abs_p.bind1(q)))
    return _neg(_mul(g, trunc))


defjvp(rem_p, lambda g, ans, x, y: g, _rem_jvp_y)


# ---- transposes of the linear ones ---------------------------------------------------------------
def _add_transpose(cts, x, y):
    ct = cts[0]
    return [unbroadcast(ct, x.aval) if is_undefined(x) else None,
            unbroadcast(ct, y.aval) if is_undefined(y) else None]


def _sub_transpose(cts, x, y):
    ct = cts[0]
    neg_ct = Zero(y.aval) if is_zero(ct) else _neg(ct)
    return [unbroadcast(ct, x.aval) if is_undefined(x) else None,
            unbroadcast(neg_ct, y.aval) if is_undefined(y) else None]


deflinear(add_p, _add_transpose)
deflinear(add_any_p, _add_transpose)
deflinear(sub_p, _sub_transpose)
deflinear(neg_p, lambda cts, x: [Zero(x.aval) if is_zero(cts[0]) else _neg(cts[0])])


def _mul_transpose(cts, x, y):
    ct = cts[0]
    if is_undefined(x) and is_undefined(y):
        raise TypeError("mul is not linear in both operands at once")
    if is_undefined(x):
        return [unbroadcast(_mul(ct, y), x.aval), None]
    return [None, unbroadcast(_mul(x, ct), y.aval)]


def _div_transpose(cts, x, y):
    if is_undefined(y):
        raise TypeError("div is not linear in its divisor")
    return [unbroadcast(_div(cts[0], y), x.aval), None]


transpose_rules[mul_p] = _mul_transpose
transpose_rules[div_p] = _div_transpose


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    out = select_n_p.bind1(which, *cases)
    aval = get_aval(out)
    if all(is_zero(t) for t in tangents[1:]):
        return [out], [Zero(aval)]
    ts = [broadcast_to_aval(instantiate(t), aval) for t in tangents[1:]]
    return [out], [select_n_p.bind1(which, *ts)]


def _select_n_transpose(cts, which, *cases):
    ct = cts[0]
    if is_undefined(which):
        raise TypeError("select_n is not linear in its selector")
    out = [None]
    for i, c in enumerate(cases):
        if not is_undefined(c):
            out.append(None)
            continue
        if is_zero(ct):
            out.append(Zero(c.aval))
            continue
        zeros = instantiate(Zero(get_aval(ct)))
        picks = [ct if j == i else zeros for j in range(len(cases))]
        out.append(unbroadcast(select_n_p.bind1(which, *picks), c.aval))
    return out


jvp_rules[select_n_p] = _select_n_jvp
transpose_rules[select_n_p] = _select_n_transpose


def _convert_jvp(primals, tangents, *, new_dtype, weak_type):
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind1(x, new_dtype=new_dtype, weak_type=weak_type)
    # Tangents flow between float and complex dtypes (complex -> real keeps the real part).
    if (is_zero(t) or dtypes.kind(np.dtype(new_dtype)) not in "fc"
            or dtypes.kind(get_aval(x).dtype) not in "fc"):
        return [out], [Zero(get_aval(out))]
    return [out], [convert_element_type_p.bind1(t, new_dtype=new_dtype, weak_type=False)]


def _convert_transpose(cts, x, *, new_dtype, weak_type):
    ct = cts[0]
    if is_zero(ct):
        return [Zero(x.aval)]
    return [convert_element_type_p.bind1(ct, new_dtype=x.aval.dtype, weak_type=False)]


jvp_rules[convert_element_type_p] = _convert_jvp
transpose_rules[convert_element_type_p] = _convert_transpose


# ---- fma ------------------------------------------------------------------------------------------
def _fma_exact64(x, y, z):
    """x * y + z rounded once, in float64, from error-free pieces (Veltkamp-Dekker product,
    Knuth sum) and a round-to-odd final addition."""
    def two_sum(a, b):
        s = a + b
        bb = s - a
        return s, (a - (s - bb)) + (b - bb)

    def split(a):
        c = 134217729.0 * a  # 2**27 + 1
        hi = c - (c - a)
        return hi, a - hi

    p = x * y
    (xh, xl), (yh, yl) = split(x), split(y)
    pl = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl
    th, tl = two_sum(z, p)
    s, e = two_sum(tl, pl)
    odd = s.view(np.uint64) & np.uint64(1)
    nudged = np.where((e != 0) & (odd == 0), np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)
    fused = th + nudged
    # A zero result takes IEEE's sign from p + z (the error terms above are +0 and would turn
    # fma(-0.0, 0.0, -0.0) into +0.0).
    fused = np.where(fused == 0, p + z, fused)
    return np.where(np.isfinite(fused), fused, p + z)


def _fma_impl(x, y, z):
    with np.errstate(all="ignore"):
        if x.dtype == np.float64:
            return [_fma_exact64(*np.broadcast_arrays(x, y, z)).astype(np.float64)]
        # float32/float16: the float64 product is exact; a round-to-odd float64 sum then
        # rounds to the narrow type correctly (float64 has more than 2 extra bits).
        x64, y64, z64 = (np.asarray(v, np.float64) for v in np.broadcast_arrays(x, y, z))
        p = x64 * y64
        s = p + z64
        bb = s - p
        e = (p - (s - bb)) + (z64 - bb)
        odd = s.view(np.uint64) & np.uint64(1)
        s = np.where((e != 0) & (odd == 0), np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)
        return [s.astype(x.dtype)]


def _fma_abstract_eval(x, y, z):
    shape = elementwise_shape("fma", [x, y, z])
    d = check_dtypes("fma", [x, y, z], F)
    return [ShapedArray(shape, d, x.weak_type and y.weak_type and z.weak_type)]


fma_p = Primitive("fma", impl=_fma_impl, abstract_eval=_fma_abstract_eval,
                  traits={"elementwise"})
defjvp(fma_p, lambda g, ans, x, y, z: _mul(g, y), lambda g, ans, x, y, z: _mul(x, g),
       lambda g, ans, x, y, z: g)
