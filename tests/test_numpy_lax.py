"""The elementwise functions of functrans.lax against NumPy (SciPy for the special functions),
eagerly and traced, for every dtype: those in the primitive's dtype class must match, the
others must be refused with a TypeError naming the primitive and the dtype.

Tolerances (in ulps of the result dtype) for functions that are not NumPy's own kernel:
* erf, erfc: the C library's versions (via Numba, ~1 ulp) against 60-digit arithmetic
  (SciPy's Cephes erfc is itself off by hundreds of ulps in the far tail): 2 ulps.
* lgamma: the C library against SciPy's Cephes gammaln, each within ~1 ulp: 4 ulps. Near its
  zeros (1, 2, and the negative ones) both are only
  accurate absolutely: the rounding of x propagates as ``eps * |x * digamma(x)|`` and the
  evaluation adds about eps, so ``2 * eps * (1 + |x * digamma(x)|)`` absolutely.
* digamma: reflection, recurrence and an asymptotic series (~10 roundings): 16 ulps, plus
  ``2 * eps * (1 + |x * polygamma(1, x)|)`` absolutely near its zero and poles.
* erf_inv: an approximation polished by two Newton steps: 8 ulps, plus the conditioning
  ``eps * |y * d erfinv/dy|`` (it diverges near +-1).
* zeta, polygamma: series implementations against Cephes: 64 ulps, plus the conditioning
  ``2 * eps * |q * s * zeta(s + 1, q)|`` (resp. ``|x * polygamma(m + 1, x)|``) from the
  rounding of the arguments.
* logistic = 1 / (1 + exp(-|x|)) (or its mirror): 3 ulps against SciPy's expit.
* integer_pow may multiply repeatedly (as under jit), so |n| + 1 ulps against NumPy's pow.
Float16 versions compute in float32 and round once: the same counts of float16 ulps hold.
"""
from __future__ import annotations

import math
import warnings
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest
import scipy.special as sp
from hypothesis import given, strategies as st

import functrans as ft
from functrans import lax
from functrans import testing as T

F, INT, INTB, NUM, ANY = "f", "iu", "iub", "iuf", "iufb"


getcontext().prec = 60
_SQRT_PI = None


def _decimal_sqrt_pi():
    global _SQRT_PI
    if _SQRT_PI is None:
        def arctan_inv(n):  # Machin's formula for pi
            x2, t, total, k, sign = Decimal(n * n), 1 / Decimal(n), Decimal(0), 1, 1
            while t > Decimal(10) ** -58:
                total += sign * t / k
                t, k, sign = t / x2, k + 2, -sign
            return total
        _SQRT_PI = (16 * arctan_inv(5) - 4 * arctan_inv(239)).sqrt()
    return _SQRT_PI


def _erfc_exact(v):
    """erfc to ~50 digits: the Taylor series of erf for |x| < 2, the continued fraction
    exp(-x^2) / sqrt(pi) / (x + (1/2) / (x + 1 / (x + (3/2) / ...))) beyond."""
    if not math.isfinite(v):
        return v if math.isnan(v) else (0.0 if v > 0 else 2.0)
    x = Decimal(float(v))
    if abs(x) < 2:
        return 1 - _erf_series(x) if x else Decimal(1)
    ax = abs(x)
    t = ax
    for k in range(400, 0, -1):
        t = ax + Decimal(k) / 2 / t
    tail = (-ax * ax).exp() / _decimal_sqrt_pi() / t
    return tail if x > 0 else 2 - tail


def _erf_exact(v):
    if not math.isfinite(v):
        return v if math.isnan(v) else math.copysign(1.0, v)
    if abs(v) < 2:  # the series directly: 1 - erfc would lose tiny arguments
        return v if v == 0 else float(_erf_series(Decimal(v)))  # erf(-0.0) is -0.0
    return 1 - _erfc_exact(v)


def _erf_series(x):
    total, term, n = Decimal(0), x, 0
    while True:
        t = term / (2 * n + 1)
        total += t
        if abs(t) < abs(x) * Decimal(10) ** -55:
            break
        n += 1
        term = -term * x * x / n
    return 2 * total / _decimal_sqrt_pi()


def _erf_oracle(complement):
    """erf/erfc from 60-digit arithmetic, rounded to the input's dtype (SciPy's Cephes erfc
    is off by hundreds of ulps far in the tail, so it cannot be the reference there)."""
    def oracle(x):
        def one(v):
            v = float(v)
            return float(_erfc_exact(v) if complement else _erf_exact(v))
        out = np.array([one(v) for v in np.asarray(x, np.float64).ravel()], np.float64)
        return out.reshape(np.shape(x)).astype(x.dtype)
    return oracle


def _same_dtype(fn):
    """SciPy upcasts float16 (and may return float64): compute there, round to x's dtype."""
    def oracle(*args):
        with np.errstate(all="ignore"):
            return np.asarray(fn(*[np.asarray(a, np.float64) for a in args])).astype(
                np.result_type(*args))
    return oracle


def _gammaln(x):
    """SciPy's gammaln, except for subnormal x where it overflows to inf: there lgamma(x) =
    -log|x| - euler_gamma * x + O(x^2), i.e. -log|x| to double precision."""
    with np.errstate(all="ignore"):
        return np.where(np.abs(x) < 1e-300, -np.log(np.abs(x)), sp.gammaln(x))


def _erfinv_deriv(y):
    return np.sqrt(np.pi) / 2 * np.exp(sp.erfinv(y) ** 2)


def _trunc_div(x, y):
    """C's truncating integer division by exact Python arithmetic (x / 0 is 0 in functrans,
    as NumPy's integer division); the quotient wraps around the dtype like C."""
    def one(a, b):
        a, b = int(a), int(b)
        if b == 0:
            return 0
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q
    return _wrap(np.vectorize(one, otypes=[object])(x, y), x.dtype)


def _wrap(obj, dtype):
    bits = 8 * dtype.itemsize
    vals = np.vectorize(lambda v: v % (1 << bits), otypes=[object])(obj)
    return vals.astype(np.uint64).astype(np.dtype(f"u{dtype.itemsize}")).view(dtype) \
        if obj.size else np.zeros(obj.shape, dtype)


def _shift(kind):
    """Shifts by counts outside [0, bits) give 0 (left, logical right) or the sign fill
    (arithmetic right), as in XLA."""
    def one(x, s, bits, signed):
        x, s = int(x), int(s)
        if kind == "left":
            return x << s if 0 <= s < bits else 0
        if kind == "arith":  # on the two's-complement value, also for unsigned dtypes
            x = x - (1 << bits) if x >= 1 << (bits - 1) else x
            return x >> s if 0 <= s < bits else (-1 if x < 0 else 0)
        ux = x % (1 << bits)
        return ux >> s if 0 <= s < bits else 0

    def oracle(x, s):
        bits = 8 * x.dtype.itemsize
        return _wrap(np.vectorize(lambda a, b: one(a, b, bits, x.dtype.kind == "i"),
                                  otypes=[object])(x, s), x.dtype)
    return oracle


def _round_away(x):
    def one(v):
        if not math.isfinite(v):
            return v
        f = Fraction(float(v))
        r = math.floor(abs(f) + Fraction(1, 2))
        return math.copysign(float(r), v)
    return np.vectorize(one, otypes=[x.dtype])(x) if x.size else x.copy()


# name -> (oracle, dtype class, ulps, atol(x...) in eps units or None)
UNARY = {
    "neg": (np.negative, NUM), "sign": (np.sign, NUM), "floor": (np.floor, F),
    "ceil": (np.ceil, F), "is_finite": (np.isfinite, F), "exp": (np.exp, F),
    "exp2": (np.exp2, F), "log": (np.log, F), "log1p": (np.log1p, F), "expm1": (np.expm1, F),
    "tanh": (np.tanh, F), "sin": (np.sin, F), "cos": (np.cos, F), "tan": (np.tan, F),
    "asin": (np.arcsin, F), "acos": (np.arccos, F), "atan": (np.arctan, F),
    "sinh": (np.sinh, F), "cosh": (np.cosh, F), "asinh": (np.arcsinh, F),
    "acosh": (np.arccosh, F), "atanh": (np.arctanh, F), "sqrt": (np.sqrt, F),
    "rsqrt": (lambda x: 1 / np.sqrt(x), F), "cbrt": (np.cbrt, F), "square": (np.square, NUM),
    "abs": (np.abs, NUM), "bitwise_not": (np.invert, INTB),
    # The bits of the two's-complement value, as XLA (NumPy counts those of |x|).
    "population_count": (lambda x: np.bitwise_count(
        x.view(np.dtype(f"u{x.dtype.itemsize}"))).astype(x.dtype), INT),
    "logistic": (_same_dtype(sp.expit), F, 3),
    "erf": (_erf_oracle(False), F, 2), "erfc": (_erf_oracle(True), F, 2),
    "lgamma": (_same_dtype(_gammaln), F, 4, lambda x: 1 + np.abs(x * sp.psi(x))),
    "digamma": (_same_dtype(sp.psi), F, 16, lambda x: 1 + np.abs(x * sp.polygamma(1, x))),
    "erf_inv": (_same_dtype(sp.erfinv), F, 8, lambda y: np.abs(y * _erfinv_deriv(y))),
}
BINARY = {
    "add": (np.add, ANY), "sub": (np.subtract, NUM), "mul": (np.multiply, ANY),
    "div": (lambda x, y: np.true_divide(x, y) if x.dtype.kind == "f" else _trunc_div(x, y),
            NUM),
    "rem": (np.fmod, NUM), "max": (np.maximum, ANY), "min": (np.minimum, ANY),
    "pow": (np.power, F), "atan2": (np.arctan2, F), "nextafter": (np.nextafter, F),
    "bitwise_and": (np.bitwise_and, INTB), "bitwise_or": (np.bitwise_or, INTB),
    "bitwise_xor": (np.bitwise_xor, INTB), "shift_left": (_shift("left"), INT),
    "shift_right_arithmetic": (_shift("arith"), INT),
    "shift_right_logical": (_shift("logical"), INT),
    "eq": (np.equal, ANY), "ne": (np.not_equal, ANY), "lt": (np.less, ANY),
    "le": (np.less_equal, ANY), "gt": (np.greater, ANY), "ge": (np.greater_equal, ANY),
}
# Their own domains (test_zeta_polygamma); the sweeps only check which dtypes they accept.
SPECIAL_BINARY = {
    "zeta": (_same_dtype(sp.zeta), F, 64, lambda s, q: np.abs(q * s * sp.zeta(s + 1, q))),
    "polygamma": (_same_dtype(sp.polygamma), F, 64,
                  lambda m, x: np.abs(x * sp.polygamma(m + 1, x))),
}
# SciPy and JAX disagree at the poles and infinities of the special functions; functrans
# follows JAX there (test_special_function_conventions), so SciPy is compared elsewhere.
POLES = {"lgamma": lambda x: (x <= 0) & (x == np.trunc(x)) | np.isinf(x),
         "digamma": lambda x: (x <= 0) & (x == np.trunc(x)) | np.isinf(x),
}


def _spec(table, name):
    oracle, kinds, *rest = table[name]
    ulps = rest[0] if rest else 0
    cond = rest[1] if len(rest) > 1 else None
    return oracle, kinds, ulps, cond


def _values(dtype, n_special=True):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return np.array([False, True, True, False])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        v = [info.min, info.max, 0, 1, 2, 7, 100 % (int(info.max) + 1)]
        return np.array(v + ([-1, -7] if dtype.kind == "i" else [3, 9]), dtype)
    v = [0.0, -0.0, 0.5, -0.75, 1.5, -2.5, 3.0, 0.1, 10.0, -30.0, 1e-3, 0.999]
    if n_special:
        v += [np.nan, np.inf, -np.inf]
    return np.array(v, dtype)


def _away_from_poles(name, *args):
    """Replace pole/infinity arguments of the special functions by 0.5 (see POLES)."""
    if name not in POLES:
        return args
    with np.errstate(all="ignore"):
        bad = np.broadcast_to(POLES[name](*[np.asarray(a, np.float64) for a in args]),
                              np.broadcast_shapes(*[np.shape(a) for a in args]))
    return tuple(np.where(bad, np.asarray(0.5, a.dtype), a) for a in args)


def _check(fn, oracle, ulps, cond, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = np.asarray(oracle(*args))
    atol = 0
    if cond is not None and want.dtype.kind == "f":
        with np.errstate(all="ignore"):
            c = np.nan_to_num(cond(*[np.asarray(a, np.float64) for a in args]), nan=0.0,
                              posinf=0.0)
        atol = 2 * T.eps(want.dtype) * c
        # Where the conditioning is infinite (at a pole) only non-finite results are allowed.
    T.check_against(fn, lambda *a: want, *args, ulps=ulps, atol=atol)


def test_every_elementwise_function_is_tested():
    elementwise = {"round", "integer_pow", "convert_element_type", "bitcast_convert_type",
                   "select_n", "select", "clamp", "stop_gradient", "RoundingMethod", "fma"}
    names = set(UNARY) | set(BINARY) | set(SPECIAL_BINARY) | elementwise
    first_structural = lax.__all__.index("broadcast_in_dim")
    assert sorted(names) == sorted(lax.__all__[:first_structural])


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_every_dtype(name):
    oracle, kinds, ulps, cond = _spec(UNARY, name)
    fn = getattr(lax, name)
    for dt in T.ALL_DTYPES:
        x = _values(dt)
        if np.dtype(dt).kind not in kinds:
            with pytest.raises(TypeError, match=f"{fn.__name__} does not accept dtype {dt}"):
                fn(x)
            continue
        _check(fn, oracle, ulps, cond, *_away_from_poles(name, x))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_every_dtype(name):
    oracle, kinds, ulps, cond = _spec(BINARY, name)
    fn = getattr(lax, name)
    for dt in T.ALL_DTYPES:
        x = _values(dt)
        y = np.roll(x, 3)
        if np.dtype(dt).kind not in kinds:
            with pytest.raises(TypeError, match=f"does not accept dtype {dt}"):
                fn(x, y)
            continue
        # Every pair of sample values (lax needs equal shapes: no broadcasting).
        xx, yy = np.meshgrid(x, y, indexing="ij")
        _check(fn, oracle, ulps, cond, xx, yy)


@pytest.mark.parametrize("name", sorted(SPECIAL_BINARY))
def test_special_binary_dtypes(name):
    fn = getattr(lax, name)
    for dt in T.ALL_DTYPES:
        if np.dtype(dt).kind != "f":
            with pytest.raises(TypeError, match=f"does not accept dtype {dt}"):
                fn(_values(dt), _values(dt))


@given(T.float_dtypes(), T.shapes(), st.data())
def test_zeta_polygamma(dtype, shape, data):
    # Away from poles: zeta(s, q) for s > 1 and q > 0; polygamma(m, x) for integer m in [0, 3]
    # and x > 0 or negative non-integers.
    s = data.draw(T.arrays(dtype, shape, elements=st.floats(1.5, 8, width=8 * dtype.itemsize)))
    q = data.draw(T.arrays(dtype, shape, elements=st.floats(0.125, 10, width=8 * dtype.itemsize)))
    oracle, _, ulps, cond = _spec(SPECIAL_BINARY, "zeta")
    _check(lax.zeta, oracle, ulps, cond, s, q)
    m = data.draw(T.arrays(dtype, shape, elements=st.sampled_from([0.0, 1.0, 2.0, 3.0])))
    x = data.draw(T.arrays(dtype, shape, elements=st.one_of(
        st.floats(0.125, 10, width=8 * dtype.itemsize),
        st.floats(-4.875, -0.125, width=8 * dtype.itemsize).filter(
            lambda v: abs(v - round(v)) > 0.1))))
    oracle, _, ulps, cond = _spec(SPECIAL_BINARY, "polygamma")
    _check(lax.polygamma, oracle, ulps, cond, m, x)


@pytest.mark.parametrize("name", sorted(UNARY))
@given(data=st.data())
def test_unary_hypothesis(name, data):
    oracle, kinds, ulps, cond = _spec(UNARY, name)
    dtype = data.draw(T.dtypes_from([d for d in T.ALL_DTYPES if np.dtype(d).kind in kinds]))
    x = data.draw(T.arrays(dtype, T.shapes(), specials=True, bound=50))
    _check(getattr(lax, name), oracle, ulps, cond, *_away_from_poles(name, x))


@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data())
def test_binary_hypothesis(name, data):
    oracle, kinds, ulps, cond = _spec(BINARY, name)
    dtype = data.draw(T.dtypes_from([d for d in T.ALL_DTYPES if np.dtype(d).kind in kinds]))
    shape = data.draw(T.shapes())
    # lax broadcasts only rank-0 operands.
    shapes = data.draw(st.sampled_from([(shape, shape), ((), shape), (shape, ())]))
    x, y = (data.draw(T.arrays(dtype, s, specials=True, bound=50)) for s in shapes)
    _check(getattr(lax, name), oracle, ulps, cond, x, y)


def _round_exact(fr, dtype):
    """The float of ``dtype`` nearest to the rational ``fr`` (ties to even)."""
    c = np.asarray(float(fr)).astype(dtype)
    cands = [c, np.nextafter(c, dtype.type(np.inf)), np.nextafter(c, dtype.type(-np.inf))]
    cands = [v for v in cands if np.isfinite(v)]
    if not cands:
        return c
    best = min(cands, key=lambda v: (abs(Fraction(float(v)) - fr),
                                     int(v.view(np.dtype(f"u{dtype.itemsize}"))) & 1))
    if abs(fr) > Fraction(float(np.finfo(dtype).max)):
        return c  # beyond the largest finite value: the cast already rounded to +-inf
    return best


def _fma_oracle(x, y, z):
    def one(a, b, c):
        if not (np.isfinite(a) and np.isfinite(b)):
            return a * b + c  # IEEE rules of the product decide
        if not np.isfinite(c):
            return c
        if (a == 0 or b == 0) and c == 0:
            return a * b + c  # IEEE signs of zero sums
        return _round_exact(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)),
                            x.dtype)
    x, y, z = np.broadcast_arrays(x, y, z)
    with np.errstate(all="ignore"):
        out = [one(a, b, c) for a, b, c in zip(x.ravel(), y.ravel(), z.ravel())]
    return np.array(out, x.dtype).reshape(x.shape)


@given(T.float_dtypes(), T.shapes(), st.data())
def test_fma_rounds_once(dtype, shape, data):
    shapes = data.draw(st.permutations([shape, shape, ()]))
    x, y, z = (data.draw(T.arrays(dtype, s, specials=True)) for s in shapes)
    T.check_against(lax.fma, _fma_oracle, x, y, z)
    # The classic case where the separate product rounds away the answer.
    e = 2.0 ** -(np.finfo(dtype).nmant // 2 + 1)
    one = np.array(1 + e, dtype)
    T.check_against(lax.fma, _fma_oracle, one, one, np.array(-1, dtype))


def test_fma_rejects_integers():
    with pytest.raises(TypeError, match="fma does not accept dtype int32"):
        lax.fma(np.ones(2, np.int32), np.ones(2, np.int32), np.ones(2, np.int32))


def test_special_function_conventions():
    # At poles and infinities functrans follows JAX (values from jax.lax with x64), where
    # SciPy sometimes gives signed infinities instead.
    x = np.array([-np.inf, np.inf, np.nan, 0.0, -0.0, -1.0])
    T.assert_close(lax.digamma(x), np.array([np.nan, np.inf, np.nan, np.nan, np.nan, np.nan]))
    T.assert_close(lax.lgamma(x), np.array([np.inf, np.inf, np.nan, np.inf, np.inf, np.inf]))
    T.assert_close(lax.erf_inv(np.array([1.0, -1.0, 1.5, np.nan])),
                   np.array([np.inf, -np.inf, np.nan, np.nan]))
    T.assert_close(lax.polygamma(np.array([0.0, 1.0, 2.0]), np.array([0.0, 0.0, -1.0])),
                   np.array([np.nan, np.inf, np.nan]))
    T.assert_close(lax.zeta(np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, -1.0])),
                   np.array([np.inf, np.inf, np.nan]))


# ---- the rest of the elementwise API ----------------------------------------------------------------
@given(T.arrays(T.float_dtypes(), T.shapes(), specials=True))
def test_round(x):
    T.check_against(lambda a: lax.round(a, lax.RoundingMethod.TO_NEAREST_EVEN), np.rint, x)
    T.check_against(lambda a: lax.round(a, lax.RoundingMethod.AWAY_FROM_ZERO), _round_away, x)
    T.check_against(lax.round, _round_away, np.array([0.5, -0.5, 2.5, 0.49999999999999994]))


@given(T.arrays(T.numeric_dtypes(), T.shapes(), bound=10, int_range=(-10, 10)),
       st.integers(-4, 5))
def test_integer_pow(x, n):
    if n < 0 and x.dtype.kind != "f":
        with pytest.raises(TypeError, match="negative exponent"):
            lax.integer_pow(x, n)
        return
    ulps = abs(n) + 1 if x.dtype.kind == "f" else 0
    tiny = np.finfo(x.dtype).smallest_subnormal * 2 if x.dtype.kind == "f" else 0
    T.check_against(lambda a: lax.integer_pow(a, n), lambda a: np.power(a, n).astype(a.dtype), x,
                    ulps=ulps, atol=tiny)


@given(T.all_dtypes(), T.all_dtypes(), st.data())
def test_convert_element_type(src, dst, data):
    if src.kind == "f" and dst.kind in "iu":
        # Float to integer is undefined for nan, inf and values out of range.
        lo = 0 if dst.kind == "u" else max(-100, int(np.iinfo(dst).min))
        x = data.draw(T.arrays(src, T.shapes(), elements=st.floats(
            lo, 100, width=8 * src.itemsize)))
    else:
        x = data.draw(T.arrays(src, T.shapes(), specials=True))
    T.check_against(lambda a: lax.convert_element_type(a, dst),
                    lambda a: (a != 0) if dst == np.bool_ else a.astype(dst), x)


@given(T.all_dtypes(), T.all_dtypes(), st.data())
def test_bitcast_convert_type(src, dst, data):
    x = data.draw(T.arrays(src, T.shapes(), specials=True))
    if src.itemsize != dst.itemsize:
        with pytest.raises(TypeError, match="differ in size"):
            lax.bitcast_convert_type(x, dst)
        return
    if src == np.bool_ or dst == np.bool_:
        return  # a bool is not an arbitrary byte
    T.check_against(lambda a: lax.bitcast_convert_type(a, dst), lambda a: a.view(dst), x)


@given(T.all_dtypes(), T.shapes(), st.integers(1, 3), st.data())
def test_select_n_and_select(dtype, shape, n, data):
    cases = [data.draw(T.arrays(dtype, shape, specials=True)) for _ in range(n)]
    if n <= 2 and data.draw(st.booleans()):
        which = data.draw(T.arrays(np.dtype(bool), st.sampled_from([shape, ()])))
        oracle = (lambda w, *c: np.where(w, c[-1], c[0]))
    else:
        which = data.draw(T.arrays(T.int_dtypes(), st.sampled_from([shape, ()]),
                                   int_range=(0, n - 1)))
        oracle = (lambda w, *c: np.choose(w.astype(np.int64), np.broadcast_arrays(*c)))
    T.check_against(lax.select_n, oracle, which, *cases)
    if n == 2 and which.dtype == np.bool_:
        T.check_against(lax.select, lambda p, t, f: np.where(p, t, f), which, cases[1],
                        cases[0])


@given(T.numeric_dtypes(), T.shapes(), st.data())
def test_clamp(dtype, shape, data):
    x = data.draw(T.arrays(dtype, shape, specials=True))
    lo = data.draw(T.arrays(dtype, st.sampled_from([shape, ()]), bound=5, int_range=(-5, 5)))
    hi = data.draw(T.arrays(dtype, st.sampled_from([shape, ()]), bound=5, int_range=(-5, 5)))
    T.check_against(lax.clamp, lambda a, b, c: np.minimum(np.maximum(b, a), c), lo, x, hi,
                    signed_zeros=False)


def test_stop_gradient_is_identity():
    x = np.array([1.0, -2.0])
    T.check_against(lax.stop_gradient, lambda a: a, x)
    assert ft.grad(lambda v: v * lax.stop_gradient(v))(3.0) == 3.0


def test_python_scalars_take_the_array_dtype():
    T.check_against(lambda a: lax.add(a, 2), lambda a: a + np.int8(2), np.array([1, 2], np.int8))
    T.check_against(lambda a: lax.mul(1.5, a), lambda a: np.float32(1.5) * a,
                    np.array([2.0], np.float32))


# ---- clear errors -----------------------------------------------------------------------------------
def test_lax_does_not_promote_or_broadcast():
    with pytest.raises(TypeError, match="same dtype"):
        lax.add(np.ones(2, np.float32), np.ones(2, np.float64))
    with pytest.raises(TypeError, match="equal shapes.*lax ones do not"):
        lax.mul(np.ones((2, 3)), np.ones(3))


def test_lax_rejects_unsupported_dtypes():
    with pytest.raises(TypeError, match="complex256|supported"):
        lax.sin(np.ones(2, np.clongdouble))
    with pytest.raises(TypeError, match="floor does not accept dtype complex64"):
        lax.floor(np.ones(2, np.complex64))
    with pytest.raises(TypeError, match="convert_element_type target"):
        lax.convert_element_type(np.ones(2), "U2")


def test_operations_that_change_nothing_still_return_arrays():
    """Identity permutations, reshapes, broadcasts, casts, squeezes and reversals of NumPy
    input return a new functrans Array of the traced type (as JAX returns its own arrays),
    not the caller's ndarray; functrans values pass through unchanged."""
    x = np.arange(6.0).reshape(2, 3)
    ops = [lambda v: lax.transpose(v, (0, 1)), lambda v: lax.reshape(v, (2, 3)),
           lambda v: lax.broadcast_in_dim(v, (2, 3), (0, 1)), lambda v: lax.squeeze(v, ()),
           lambda v: lax.convert_element_type(v, np.float64), lambda v: lax.rev(v, ()),
           lambda v: lax.expand_dims(v, ())]
    for op in ops:
        got = op(x)
        assert type(got) is ft.Array and got.dtype == np.float64
        np.testing.assert_array_equal(got, x)
        x[0, 0] += 1.0  # the result is not a view of the caller's buffer
        assert float(got[0, 0]) == x[0, 0] - 1.0
        a = ft.numpy.asarray(x)
        assert op(a) is a
    with ft.config.override(enable_x64=False):
        assert lax.transpose(np.ones(2), (0,)).dtype == np.float32
    assert lax.reshape(2.0, ()).weak_type
