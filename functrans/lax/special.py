"""The regularized incomplete gamma functions with ``jax.lax``'s names: ``igamma`` (``P(a, x)``),
``igammac`` (``Q(a, x) = 1 - P``), ``igamma_grad_a`` (``dP/da``) and ``random_gamma_grad``
(``dx/da`` of a Gamma(a) sample ``x``), composed of lax operations and ``while_loop``s.

Why in lax: functrans.random's gamma sampler (its implicit reparameterization derivative) and
functrans.scipy.special's ``gammainc``/``gammaincc`` both need them, and random is below scipy;
JAX keeps them in lax too. The loop helpers (``converge``, ``d_da``, ``jvp_tangent``) also serve
scipy's incomplete beta function.

Values: the power series / continued fractions of Numerical Recipes (series for the lower
function below ``x = a + 1``, Lentz's continued fraction above), iterated until every element
has converged to the dtype's epsilon. Derivatives (``custom_jvp``): with respect to ``x`` the
density; with respect to ``a``, forward-mode differentiation *through* the iterations on the
primal values only, so the tangent is linear in ``a``'s tangent and reverse mode works too.

    >>> lax.igamma(fnp.array([1.0]), fnp.array([1.0]))
    Array([0.63212056], dtype=float64)
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.trace import get_aval
from ..transforms.autodiff import custom_jvp, jvp
from ..transforms.autodiff.jvp import is_zero
from .control_flow import while_loop
from .ops import (abs, add, bitwise_and, bitwise_or, broadcast_in_dim, convert_element_type,
                  div, eq, exp, full_like, gt, le, lgamma, log, lt, match_weak, min, mul, ne, neg,
                  reduce_and, select, sub)

__all__ = ["igamma", "igammac", "igamma_grad_a", "random_gamma_grad"]

_MAX_ITER = 20000


def consts(x):
    """``x``'s dtype, its epsilon and a tiny value (Lentz's guard against division by 0)."""
    dt = get_aval(x).dtype
    info = np.finfo(dt)
    return dt, dt.type(info.eps), dt.type(info.tiny * 1e3)


def where(c, x, y):
    """``x`` where ``c`` else ``y``, a Python scalar taking the other operand's shape."""
    if isinstance(x, (int, float, np.number)):
        x = full_like(y, x)
    if isinstance(y, (int, float, np.number)):
        y = full_like(x, y)
    return select(c, x, y)


def converge(state0, step, done):
    """Iterate ``step`` on a tuple of same-shape arrays until ``done`` holds everywhere, then
    as many iterations again (capped): the value has converged by then, but its derivative
    with respect to the parameters (forward mode through the loop) converges a little later.
    Finished elements keep iterating harmlessly: their updates are factors of 1 or terms
    below the epsilon."""
    def cond(c):
        return lt(c[0], c[1])

    def body(c):
        n, stop, *s = c
        n1 = add(n, 1)
        s = tuple(step(n1, tuple(s)))
        finished = done(s)
        first = bitwise_and(eq(stop, _MAX_ITER),
                            reduce_and(finished, tuple(range(get_aval(finished).ndim))))
        return (n1, select(first, min(add(mul(2, n), 8), _MAX_ITER), stop)) + s

    return while_loop(cond, body, (0, _MAX_ITER) + tuple(state0))[2:]


def _lower_series(a, x):
    """P(a, x) by its power series: x**a e**-x / gamma(a+1) * sum x**n / ((a+1)...(a+n))."""
    dt, eps, _ = consts(x)
    one = full_like(x, 1)

    def step(n, s):
        term, total = s
        term = div(mul(term, x), add(a, convert_element_type(n, dt)))
        return term, add(total, term)

    _, total = converge((one, one), step, lambda s: le(abs(s[0]), mul(eps, abs(s[1]))))
    return mul(exp(sub(sub(mul(a, log(x)), x), lgamma(add(a, 1.0)))), total)


def _upper_cf(a, x):
    """Q(a, x) by Legendre's continued fraction, evaluated with modified Lentz."""
    dt, eps, tiny = consts(x)

    def guard(v):
        return where(lt(abs(v), tiny), tiny, v)

    b0 = sub(add(x, 1.0), a)
    d0 = div(1.0, guard(b0))

    def step(i, s):
        b, c, d, h, _ = s
        i = convert_element_type(i, dt)
        an = mul(neg(i), sub(i, a))
        b = add(b, 2.0)
        d = div(1.0, guard(add(mul(an, d), b)))
        c = guard(add(b, div(an, c)))
        delta = mul(d, c)
        return b, c, d, mul(h, delta), delta

    state = (b0, full_like(x, 1 / tiny), d0, d0, full_like(x, 0))
    *_, h, _ = converge(state, step, lambda s: le(abs(sub(s[4], 1.0)), eps))
    return mul(exp(sub(sub(mul(a, log(x)), x), lgamma(a))), h)


def igamma_pq(a, x):
    """(P, Q) of same-shape, same-dtype float arrays, each computed where it is accurate and
    the other as its complement (no custom derivative: the loops are differentiated)."""
    series = lt(x, add(a, 1.0))
    # Each method sees harmless inputs where the other is used, so no lane runs long.
    xs = select(series, x, mul(0.5, a))
    xc = select(series, add(a, 2.0), x)
    positive = gt(xs, 0.0)
    p_series = where(positive, _lower_series(a, where(positive, xs, 1.0)), 0.0)
    q_cf = _upper_cf(a, xc)
    p = select(series, p_series, sub(1.0, q_cf))
    q = select(series, sub(1.0, p_series), q_cf)
    bad = bitwise_or(bitwise_or(bitwise_or(lt(a, 0.0), lt(x, 0.0)), bitwise_or(ne(a, a), ne(x, x))),
                     bitwise_and(eq(a, 0.0), eq(x, 0.0)))
    x_inf, a_zero = eq(x, np.inf), eq(a, 0.0)
    p = where(x_inf, 1.0, where(a_zero, 1.0, p))
    q = where(x_inf, 0.0, where(a_zero, 0.0, q))
    return where(bad, np.nan, p), where(bad, np.nan, q)


def _gamma_density(a, x):
    return exp(sub(sub(mul(sub(a, 1.0), log(x)), x), lgamma(a)))


def d_da(f, a, *rest):
    """The derivative of ``f(a, *rest)`` in ``a`` by forward mode (through its loops)."""
    return jvp(lambda a_: f(a_, *rest), (a,), (full_like(a, 1),))[1]


def jvp_tangent(out, terms):
    """Sum of ``coefficient() * tangent`` over the tangents that are not symbolic zeros. The
    shape-parameter coefficients come from loops that reverse mode cannot transpose, so they
    are computed only when that parameter is actually differentiated (which keeps ``x``
    derivatives of any order available)."""
    total = None
    for coef, t in terms:
        if not is_zero(t):
            term = mul(coef(), t)
            total = term if total is None else add(total, term)
    return full_like(out, 0) if total is None else total


def _gamma_density_at(a, x):
    positive = gt(x, 0.0)
    return where(positive, _gamma_density(a, where(positive, x, 1.0)), 0.0)


def _p(a, x):
    return igamma_pq(a, x)[0]


def _q(a, x):
    return igamma_pq(a, x)[1]


@custom_jvp
def _igamma(a, x):
    return _p(a, x)


def _igamma_jvp(primals, tangents):
    a, x = primals
    p = _igamma(a, x)
    return p, jvp_tangent(p, [(lambda: d_da(_p, a, x), tangents[0]),
                              (lambda: _gamma_density_at(a, x), tangents[1])])


_igamma.defjvp(_igamma_jvp, symbolic_zeros=True)


@custom_jvp
def _igammac(a, x):
    return _q(a, x)


def _igammac_jvp(primals, tangents):
    a, x = primals
    q = _igammac(a, x)
    return q, jvp_tangent(q, [(lambda: d_da(_q, a, x), tangents[0]),
                              (lambda: neg(_gamma_density_at(a, x)), tangents[1])])


_igammac.defjvp(_igammac_jvp, symbolic_zeros=True)


def _operands(name, a, x):
    """``a`` and ``x`` as float arrays of one dtype and shape (lax does not promote; as in
    JAX's lax, a rank-0 operand broadcasts to the other's shape, and Python scalars take
    the other operand's dtype)."""
    a, x = match_weak(a, x, name=name)
    a, x = (np.asarray(v, dtypes.python_scalar_dtype(v)) if isinstance(v, (int, float)) else v
            for v in (a, x))
    dt = get_aval(a).dtype
    if dtypes.kind(dt) != "f":
        raise TypeError(f"lax.{name} requires floating-point arguments, got {dt}")
    sa, sx = get_aval(a).shape, get_aval(x).shape
    if sa != sx and sa == ():
        a = broadcast_in_dim(a, sx, ())
    elif sa != sx and sx == ():
        x = broadcast_in_dim(x, sa, ())
    elif sa != sx:
        raise TypeError(f"lax.{name} requires arguments of one shape (or a scalar), got "
                        f"{sa} and {sx}")
    return a, x


def igamma(a, x):
    """The regularized lower incomplete gamma function ``P(a, x)`` (NaN for ``a < 0`` or
    ``x < 0``); differentiable in both arguments (``functrans.scipy.special.gammainc`` is
    this with NumPy broadcasting and promotion).

    >>> lax.igamma(fnp.array([0.5, 2.0]), fnp.array([0.5, 2.0]))
    Array([0.68268949, 0.59399415], dtype=float64)
    """
    return _igamma(*_operands("igamma", a, x))


def igammac(a, x):
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``, accurate
    in the upper tail.

    >>> lax.igammac(fnp.array([1.0, 3.0]), fnp.array([30.0, 1.0]))
    Array([9.35762297e-14, 9.19698603e-01], dtype=float64)
    """
    return _igammac(*_operands("igammac", a, x))


def igamma_grad_a(a, x):
    """``d igamma(a, x) / da`` (forward mode through the series and fraction).

    >>> lax.igamma_grad_a(fnp.array([1.0]), fnp.array([1.0]))
    Array([-0.43172971], dtype=float64)
    """
    return d_da(_p, *_operands("igamma_grad_a", a, x))


def random_gamma_grad(a, x):
    """``dx/da`` of a sample ``x`` of Gamma(a, 1) (its implicit reparameterization
    derivative: ``-(dP/da) / (dP/dx)``).

    >>> lax.random_gamma_grad(fnp.array([1.0]), fnp.array([1.0]))
    Array([1.17356303], dtype=float64)
    """
    a, x = _operands("random_gamma_grad", a, x)
    return neg(div(d_da(_p, a, x), _gamma_density(a, x)))
