"""Derivatives at special points: kinks, ties, domain boundaries, poles and infinities.

One row per (function, point, order): the first or second derivative of a scalar float64
function of one variable (the others held fixed), and the value it must have. The expected
values come from JAX's JVP rules (where a rule picks a convention at a non-differentiable point,
the rule is quoted in the row's source), from the true derivative's closed form or its limit,
or from central finite differences in float64 (``FD``: computed in the test, never typed in).

Exact rows compare exactly (IEEE values such as inf and nan included); closed forms allow
1e-12 relative; finite differences use h = 1e-4 (second order: truncation error ~h^2 f''' ~
1e-8) and allow 1e-6.
"""
import math

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax, nn
from functrans.core.trace import all_primitives
from functrans.scipy import special

from primitive_coverage import TESTED_ELSEWHERE, primitives_in

FD = "fd"  # expected value: central finite differences of the function itself
INF, NAN = np.inf, np.nan
LN2 = math.log(2)

# (label, f of one float64 scalar, point, order, expected, source)
ROWS = [
    # -- kinks: JAX's select conventions ------------------------------------------------------
    ("abs", fnp.abs, 0.0, 1, 1.0, "JAX abs_p jvp: select(x >= 0, g, -g)"),
    ("abs", fnp.abs, -0.0, 1, 1.0, "JAX abs_p jvp: -0. >= 0"),
    ("abs", fnp.abs, 0.0, 2, 0.0, "derivative of a select of constants"),
    ("abs", fnp.abs, -2.0, 1, -1.0, "closed form"),
    ("sign", fnp.sign, 0.0, 1, 0.0, "JAX: sign has a zero derivative"),
    ("relu", nn.relu, 0.0, 1, 0.0, "JAX nn.relu custom_jvp: select(x > 0, g, 0)"),
    ("relu", nn.relu, 0.0, 2, 0.0, "JAX nn.relu custom_jvp"),
    ("relu", nn.relu, 1.0, 1, 1.0, "closed form"),
    ("relu6", nn.relu6, 0.0, 1, 0.0, "JAX nn.relu6 custom_jvp: select(0 < x < 6, g, 0)"),
    ("relu6", nn.relu6, 6.0, 1, 0.0, "JAX nn.relu6 custom_jvp"),
    ("maximum(x, 1)", lambda x: fnp.maximum(x, 1.0), 1.0, 1, 0.5,
     "JAX max_p jvp: ties split evenly"),
    ("maximum(1, x)", lambda x: fnp.maximum(1.0, x), 1.0, 1, 0.5, "JAX max_p jvp"),
    ("minimum(x, 1)", lambda x: fnp.minimum(x, 1.0), 1.0, 1, 0.5, "JAX min_p jvp"),
    ("maximum(x, 1)", lambda x: fnp.maximum(x, 1.0), 1.0, 2, 0.0, "JAX max_p jvp"),
    ("maximum(x, x)", lambda x: fnp.maximum(x, x), 2.0, 1, 1.0, "JAX max_p jvp: 1/2 + 1/2"),
    ("clip lower", lambda x: fnp.clip(x, 0.0, 1.0), 0.0, 1, 0.5,
     "jnp.clip is maximum then minimum"),
    ("clamp lower", lambda x: lax.clamp(0.0, x, 1.0), 0.0, 1, 0.0,
     "JAX clamp_p jvp: select(min < x < max, g, 0)"),
    ("clamp upper", lambda x: lax.clamp(0.0, x, 1.0), 1.0, 1, 0.0, "JAX clamp_p jvp"),
    ("clamp inside", lambda x: lax.clamp(0.0, x, 1.0), 0.5, 1, 1.0, "JAX clamp_p jvp"),
    ("clamp min operand", lambda lo: lax.clamp(lo, -1.0, 1.0), 0.0, 1, 1.0,
     "JAX clamp_p jvp: select(x < min < max, g, 0)"),
    ("clamp min at x", lambda lo: lax.clamp(lo, 0.0, 1.0), 0.0, 1, 0.0, "JAX clamp_p jvp"),
    ("clamp max operand", lambda hi: lax.clamp(0.0, 2.0, hi), 1.0, 1, 1.0,
     "JAX clamp_p jvp: select(max < x, g, 0)"),
    ("where(x > 0, x, 0)", lambda x: fnp.where(x > 0, x, 0.0), 0.0, 1, 0.0,
     "select picks the constant branch"),
    ("where(x >= 0, x*x, -x)", lambda x: fnp.where(x >= 0, x * x, -x), 0.0, 2, 2.0,
     "select picks x*x"),
    ("round", fnp.round, 0.5, 1, 0.0, "JAX: rounding has a zero derivative"),
    ("floor", fnp.floor, 1.0, 1, 0.0, "JAX: rounding has a zero derivative"),
    # -- reductions and sort at ties -------------------------------------------------------
    ("max tie", lambda x: fnp.max(fnp.stack([x, 1.0, 0.0])), 1.0, 1, 0.5,
     "JAX reduce_max jvp: tangents averaged over the maximal entries"),
    ("min tie", lambda x: fnp.min(fnp.stack([x, 1.0, x])), 1.0, 1, 2 / 3,
     "JAX reduce_min jvp: 2 of 3 equal minima are x"),
    ("max tie", lambda x: fnp.max(fnp.stack([x, 1.0])), 1.0, 2, 0.0, "JAX reduce_max jvp"),
    ("sort tie first", lambda x: fnp.sort(fnp.stack([x, 1.0]))[0], 1.0, 1, 1.0,
     "JAX sort jvp: stable order, x (index 0) sorts first"),
    ("sort tie last", lambda x: fnp.sort(fnp.stack([x, 1.0]))[1], 1.0, 1, 0.0, "JAX sort jvp"),
    # -- domain boundaries and infinities: IEEE values of the closed forms ------------------
    ("sqrt", fnp.sqrt, 0.0, 1, INF, "JAX sqrt jvp: g / (2 sqrt(x))"),
    ("sqrt", fnp.sqrt, 0.0, 2, -INF, "-1/4 x^(-3/2)"),
    ("sqrt", fnp.sqrt, INF, 1, 0.0, "1 / (2 inf)"),
    ("cbrt", fnp.cbrt, 0.0, 1, INF, "1 / (3 cbrt(x)^2)"),
    ("rsqrt", lax.rsqrt, 0.0, 1, -INF, "-x^(-3/2) / 2"),
    ("log", fnp.log, 0.0, 1, INF, "1/x"),
    ("log", fnp.log, INF, 1, 0.0, "1/x"),
    ("log1p", fnp.log1p, -1.0, 1, INF, "1/(1+x)"),
    ("log1p", fnp.log1p, 0.0, 1, FD, "smooth"),
    ("log1p", fnp.log1p, 0.0, 2, -1.0, "-1/(1+x)^2"),
    ("expm1", fnp.expm1, 0.0, 1, 1.0, "exp(0)"),
    ("expm1", fnp.expm1, 0.0, 2, 1.0, "exp(0)"),
    ("expm1", fnp.expm1, -INF, 1, 0.0, "exp(-inf)"),
    ("exp", fnp.exp, -INF, 1, 0.0, "exp(-inf)"),
    ("tanh", fnp.tanh, INF, 1, 0.0, "1 - tanh^2"),
    ("tanh", fnp.tanh, 0.0, 2, 0.0, "-2 tanh sech^2"),
    ("logistic", lax.logistic, -INF, 1, 0.0, "s (1 - s)"),
    ("logistic", lax.logistic, 0.0, 2, 0.0, "s (1 - s)(1 - 2s)"),
    ("arcsin", fnp.arcsin, 1.0, 1, INF, "1/sqrt(1 - x^2)"),
    ("arccos", fnp.arccos, -1.0, 1, -INF, "-1/sqrt(1 - x^2)"),
    ("arctanh", fnp.arctanh, 1.0, 1, INF, "1/(1 - x^2)"),
    ("arccosh", fnp.arccosh, 1.0, 1, INF, "1/sqrt(x^2 - 1)"),
    ("arctan", fnp.arctan, INF, 1, 0.0, "1/(1 + x^2)"),
    ("erf", lax.erf, INF, 1, 0.0, "2/sqrt(pi) exp(-x^2)"),
    ("erf", lax.erf, 0.0, 2, 0.0, "-4x/sqrt(pi) exp(-x^2)"),
    ("erf_inv", lax.erf_inv, 1.0, 1, INF, "sqrt(pi)/2 exp(erfinv(x)^2)"),
    ("erf_inv", lax.erf_inv, -1.0, 1, INF, "sqrt(pi)/2 exp(erfinv(x)^2)"),
    ("erf_inv", lax.erf_inv, 0.0, 1, math.sqrt(math.pi) / 2, "closed form"),
    ("erf_inv", lax.erf_inv, 0.0, 2, 0.0, "odd function"),
    ("sinc", fnp.sinc, 0.0, 1, 0.0, "odd derivative of an even function"),
    ("sinc", fnp.sinc, 0.0, 2, -math.pi ** 2 / 3, "Maclaurin series (JAX's _sinc_maclaurin)"),
    ("sinc", fnp.sinc, 0.0, 4, math.pi ** 4 / 5, "Maclaurin series"),
    ("sinc", fnp.sinc, 0.5, 1, FD, "smooth"),
    ("sinh", fnp.sinh, INF, 1, INF, "cosh(inf)"),
    ("cosh", fnp.cosh, -INF, 1, -INF, "sinh(-inf)"),
    ("cos", fnp.cos, 0.0, 1, 0.0, "-sin(0)"),
    ("cos", fnp.cos, 0.0, 2, -1.0, "-cos(0)"),
    ("tan", fnp.tan, 0.0, 1, 1.0, "1 + tan^2"),
    ("tan", fnp.tan, 0.0, 2, 0.0, "2 tan (1 + tan^2)"),
    ("arcsinh", fnp.arcsinh, 0.0, 1, 1.0, "1/sqrt(1 + x^2)"),
    ("arcsinh", fnp.arcsinh, INF, 1, 0.0, "1/sqrt(1 + x^2)"),
    ("square", lax.square, 0.0, 1, 0.0, "2x"),
    ("square", lax.square, 0.0, 2, 2.0, "2"),
    ("ceil", fnp.ceil, 1.0, 1, 0.0, "JAX: rounding has a zero derivative"),
    ("fma", lambda x: lax.fma(x, 2.0, 1.0), 0.0, 1, 2.0, "y"),
    ("fma", lambda z: lax.fma(INF, 0.0, z), 1.0, 1, 1.0, "z's derivative is 1 even when x y = nan"),
    ("exp2", fnp.exp2, -INF, 1, 0.0, "ln2 2^x"),
    ("erfc", lax.erfc, 0.0, 1, -2 / math.sqrt(math.pi), "closed form"),
    ("x / 0", lambda x: x / 0.0, 1.0, 1, INF, "JAX div jvp: g / y"),
    ("1 / y", lambda y: 1.0 / y, 0.0, 1, -INF, "JAX div jvp: -g x / y^2"),
    ("prod with a zero", lambda x: fnp.prod(fnp.stack([x, 0.0, 2.0])), 1.0, 1, 0.0,
     "JAX reduce_prod jvp: product of the others"),
    ("prod at zero", lambda x: fnp.prod(fnp.stack([x, 3.0])), 0.0, 1, 3.0, "product of others"),
    ("hypot(x, 0)", lambda x: fnp.hypot(x, 0.0), 0.0, 1, 0.5,
     "jnp.hypot: abs'(0) = 1 through maximum's tie (1/2)"),
    ("nextafter", lambda x: lax.nextafter(x, 2.0), 1.0, 1, 1.0, "follows x"),
    # -- powers at 0 ---------------------------------------------------------------------
    ("x**2", lambda x: x ** 2, 0.0, 1, 0.0, "JAX integer_pow jvp: 2 x"),
    ("x**2", lambda x: x ** 2, 0.0, 2, 2.0, "closed form"),
    ("x**3", lambda x: x ** 3, 0.0, 2, 0.0, "6 x"),
    ("x**-1", lambda x: x ** -1, 0.0, 1, -INF, "JAX integer_pow jvp: -x^-2"),
    ("pow(x, 2.0)", lambda x: lax.pow(x, 2.0), 0.0, 1, 0.0, "JAX pow jvp: y x^(y-1)"),
    ("pow(x, 0.5)", lambda x: lax.pow(x, 0.5), 0.0, 1, INF, "0.5 x^-0.5"),
    ("pow(x, 0.0)", lambda x: lax.pow(x, 0.0), 0.0, 1, 0.0,
     "JAX pow jvp: select(y == 0, 0, y x^(y-1))"),
    ("pow(x, 1.0)", lambda x: lax.pow(x, 1.0), 0.0, 1, 1.0, "1 * 0^0"),
    ("pow(0, y)", lambda y: lax.pow(0.0, y), 2.0, 1, 0.0,
     "JAX pow jvp: log(_replace_zero(x)) x^y"),
    ("pow(2, y)", lambda y: lax.pow(2.0, y), 0.0, 1, LN2, "log(2) 2^y"),
    # -- logaddexp at ties and infinities ---------------------------------------------------
    ("logaddexp tie", lambda x: fnp.logaddexp(x, 1.0), 1.0, 1, 0.5, "exp(x - out)"),
    ("logaddexp tie", lambda x: fnp.logaddexp(x, 1.0), 1.0, 2, 0.25, "w (1 - w), w = 1/2"),
    ("logaddexp tie", lambda x: fnp.logaddexp(x, 1.0), 1.0, 2, FD, "smooth at ties"),
    ("logaddexp2 tie", lambda x: fnp.logaddexp2(x, 1.0), 1.0, 1, 0.5, "2^(x - out)"),
    ("logaddexp2 tie", lambda x: fnp.logaddexp2(x, 1.0), 1.0, 2, LN2 / 4,
     "ln2 w (1 - w) (the issue's value; JAX's)"),
    ("logaddexp2 tie", lambda x: fnp.logaddexp2(x, 1.0), 1.0, 2, FD, "smooth at ties"),
    ("logaddexp", lambda x: fnp.logaddexp(x, 0.0), 2.0, 2, FD, "softplus''"),
    ("logaddexp(x, x)", lambda x: fnp.logaddexp(x, x), 0.5, 1, 1.0, "x + log 2"),
    ("logaddexp(x, -inf)", lambda x: fnp.logaddexp(x, -INF), 1.0, 1, 1.0,
     "limit: exp(x - x)"),
    ("logaddexp(inf, y)", lambda y: fnp.logaddexp(INF, y), 1.0, 1, 0.0,
     "limit of exp(y - out) (JAX's _replace_inf gives exp(y))"),
    ("logaddexp(x, 1) at inf", lambda x: fnp.logaddexp(x, 1.0), INF, 1, 1.0, "limit"),
    ("logaddexp(x, inf) tie", lambda x: fnp.logaddexp(x, INF), INF, 1, 0.5,
     "limit along the diagonal (JAX: exp(0) = 1 after _replace_inf)"),
    ("logaddexp(x, -inf) tie", lambda x: fnp.logaddexp(x, -INF), -INF, 1, 0.5,
     "limit along the diagonal (JAX: nan)"),
    ("logaddexp2(x, -inf)", lambda x: fnp.logaddexp2(x, -INF), 3.0, 2, 0.0, "x's second"),
    # -- two-argument special points ---------------------------------------------------
    ("atan2(0, x)", lambda x: fnp.arctan2(0.0, x), 0.0, 1, NAN,
     "JAX atan2 jvp: -y / (x^2 + y^2) = 0/0"),
    ("atan2(y, 1)", lambda y: fnp.arctan2(y, 1.0), 0.0, 1, 1.0, "x / (x^2 + y^2)"),
    ("xlogy(x, 2)", lambda x: special.xlogy(x, 2.0), 0.0, 1, LN2,
     "JAX xlogy custom_jvp: x_dot log(y)"),
    ("xlogy(x, 0)", lambda x: special.xlogy(x, 0.0), 0.0, 1, -INF, "JAX: log(0)"),
    ("xlogy(0, y)", lambda y: special.xlogy(0.0, y), 2.0, 1, 0.0, "JAX: y_dot x / y"),
    ("xlogy(0, y)", lambda y: special.xlogy(0.0, y), 0.0, 1, NAN, "JAX: y_dot x / y = 0/0"),
    ("xlog1py(x, 1)", lambda x: special.xlog1py(x, 1.0), 0.0, 1, LN2,
     "JAX xlog1py custom_jvp: x_dot log1p(y)"),
    ("xlog1py(x, -1)", lambda x: special.xlog1py(x, -1.0), 0.0, 1, -INF, "JAX: log1p(-1)"),
    ("xlog1py(2, y)", lambda y: special.xlog1py(2.0, y), 0.0, 1, 2.0, "x / (1 + y)"),
    ("rem(x, 1)", lambda x: lax.rem(x, 1.0), 0.5, 1, 1.0, "JAX rem jvp"),
    # -- gamma family at poles and infinities ------------------------------------------
    ("lgamma", lax.lgamma, 0.0, 1, NAN, "digamma(0): XLA gives nan at non-positive integers"),
    ("lgamma", lax.lgamma, -2.0, 1, NAN, "digamma(-2)"),
    ("lgamma", lax.lgamma, 1.0, 1, -0.5772156649015329, "digamma(1) = -gamma"),
    ("lgamma", lax.lgamma, 1.0, 2, math.pi ** 2 / 6, "polygamma(1, 1) = zeta(2)"),
    ("digamma", lax.digamma, 1.0, 1, math.pi ** 2 / 6, "polygamma(1, 1)"),
    ("digamma", lax.digamma, -1.0, 1, NAN,
     "polygamma(1, -1): JAX gives nan at negative-integer poles (test_numpy_lax)"),
    ("digamma", lax.digamma, INF, 1, 0.0, "polygamma(1, inf)"),
    ("digamma", lax.digamma, -INF, 0, NAN, "JAX: no limit at -inf"),
    ("polygamma(1, x)", lambda x: lax.polygamma(1.0, x), -INF, 0, NAN,
     "poles accumulate at -inf: no limit; nan as at JAX's negative-integer poles"),
    ("polygamma(2, x)", lambda x: lax.polygamma(2.0, x), -INF, 0, NAN, "as above"),
    ("polygamma(1, x)", lambda x: lax.polygamma(1.0, x), -INF, 1, NAN, "polygamma(2, -inf)"),
    ("polygamma(1, x)", lambda x: lax.polygamma(1.0, x), INF, 1, 0.0, "-2 zeta(3, inf)"),
    ("polygamma(1, x)", lambda x: lax.polygamma(1.0, x), 0.0, 0, INF, "JAX: zeta(2, 0) = inf"),
    ("polygamma(1, x)", lambda x: lax.polygamma(1.0, x), -3.0, 0, NAN,
     "JAX: nan at negative-integer poles"),
    ("polygamma(2, x)", lambda x: lax.polygamma(2.0, x), 0.5, 1, FD, "smooth"),
    ("zeta(2, q)", lambda q: lax.zeta(2.0, q), -INF, 0, NAN, "as polygamma at -inf"),
    ("zeta(3, q)", lambda q: lax.zeta(3.0, q), 0.0, 0, INF, "pole"),
    ("zeta(2, q)", lambda q: lax.zeta(2.0, q), 1.5, 1, FD, "-s zeta(s+1, q)"),
    # -- complex parts: linear maps (real -> complex -> real), and |z| at z = 0 ----------------
    ("real(complex(x, 2))", lambda x: lax.real(lax.complex(x, 2.0)), 0.0, 1, 1.0,
     "complex_p and real_p are linear"),
    ("real(complex(x, 2))", lambda x: lax.real(lax.complex(x, 2.0)), 0.0, 2, 0.0, "linear"),
    ("imag(complex(1, x))", lambda x: lax.imag(lax.complex(1.0, x)), 0.0, 1, 1.0,
     "complex_p and imag_p are linear"),
    ("imag(conj(complex(1, x)))", lambda x: lax.imag(lax.conj(lax.complex(1.0, x))), 0.0, 1,
     -1.0, "conj negates the imaginary part"),
    ("abs(complex(x, 0))", lambda x: fnp.abs(lax.complex(x, 0.0)), 0.0, 1, 0.0,
     "JAX abs_p jvp for complex: real(g * conj(x) / replace_zero(|x|)) = 0 at 0"),
    ("abs(complex(x, 0))", lambda x: fnp.abs(lax.complex(x, 0.0)), 0.0, 2, 1.0,
     "JAX: 1 / replace_zero(|x|) at 0"),
    ("abs(complex(0, x))", lambda x: fnp.abs(lax.complex(0.0, x)), 1.0, 1, 1.0, "closed form"),
    ("angle(complex(x, 0))", lambda x: fnp.angle(lax.complex(x, 0.0)), 0.0, 1, NAN,
     "JAX atan2 jvp at (0, 0): 0 / 0"),
    ("angle(complex(-1, x))", lambda x: fnp.angle(lax.complex(-1.0, x)), 0.0, 1, -1.0,
     "closed form: d atan2(x, -1) = -1 / (1 + x^2)"),
]


# Elementwise primitives with no derivative to test at special points: integer/boolean-only
# operations, comparisons and predicates (zero tangents), and bit reinterpretation.
NOT_DIFFERENTIABLE = {"bitcast_convert_type", "is_finite", "population_count", "shift_left",
                      "shift_right_arithmetic", "shift_right_logical", "xor", "and", "or", "not",
                      "eq", "ne", "lt", "le", "gt", "ge", "convert_element_type",
                      "stop_gradient", "add_any"}


def test_the_table_reaches_every_differentiable_elementwise_primitive():
    seen = primitives_in([(r[1], (np.float64(r[2]),)) for r in ROWS])
    elementwise = {n for n, p in all_primitives().items() if "elementwise" in p.traits}
    assert NOT_DIFFERENTIABLE <= elementwise
    # Users' scalar kernels (numba_vectorize) have the derivatives their users give: tested
    # in their own module.
    missing = elementwise - seen - NOT_DIFFERENTIABLE - set(TESTED_ELSEWHERE)
    assert not missing, f"no special-point rows for: {sorted(missing)}"


def _derivative(f, order):
    for _ in range(order):
        f = ft.grad(f)
    return f


def _fd(f, x, order, h=1e-4):
    f64 = lambda v: float(f(np.float64(v)))  # noqa: E731
    if order == 1:
        return (f64(x + h) - f64(x - h)) / (2 * h)
    return (f64(x + h) - 2 * f64(x) + f64(x - h)) / h ** 2


def _label(row):
    return f"{row[0]}@{row[2]}^{row[3]}"


@pytest.mark.parametrize("row", ROWS, ids=[_label(r) for r in ROWS])
def test_derivative_at_special_point(row):
    _, f, x, order, want, _source = row
    got = float(_derivative(f, order)(np.float64(x)))
    if want is FD:
        np.testing.assert_allclose(got, _fd(f, x, order), rtol=1e-6, atol=1e-6)
    elif isinstance(want, float) and (math.isinf(want) or math.isnan(want) or want == 0.0):
        assert got == want or (math.isnan(want) and math.isnan(got)), (got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("row", [r for r in ROWS if r[3] >= 1 and r[4] is not FD][::4],
                         ids=lambda r: _label(r))
def test_same_derivative_under_jit_and_vmap(row):
    # The conventions live in the rules, so compiled and batched derivatives agree with eager.
    _, f, x, order, want, _ = row
    d = _derivative(f, order)
    eager = float(d(np.float64(x)))
    jitted = float(ft.jit(d)(np.float64(x)))
    batched = np.asarray(ft.vmap(d)(fnp.full(3, x)))
    np.testing.assert_array_equal(np.float64(jitted), np.float64(eager))
    np.testing.assert_array_equal(batched, np.full(3, eager))
