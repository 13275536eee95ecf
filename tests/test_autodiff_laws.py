"""Composition laws of differentiation on hypothesis-generated programs (tests/programs.py).

float64 throughout; tolerances are relative 1e-9 where both sides are exact-arithmetic
identities evaluated in different orders (rounding ~1e-16 per op, programs are < 30 ops), and
check_grads' finite-difference tolerances (1e-5) where finite differences are involved.
"""
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.transforms.autodiff.check import check_grads

from programs import build, programs

# Inputs away from ties and zero: the programs use sort and where, which are smooth only there.
# Built that way rather than filtered: distinct nonzero multiples of 1/20 in [-2, 2], each moved
# by at most 0.005, so |x| >= 0.045 and entries differ by >= 0.04.
xs = st.tuples(
    st.lists(st.integers(-40, 40).filter(bool), min_size=3, max_size=3, unique=True),
    st.lists(st.floats(-0.005, 0.005), min_size=3, max_size=3),
).map(lambda kj: np.array(kj[0]) / 20 + np.array(kj[1]))
RTOL = 1e-9


def _vdot(a, b):
    return float(np.vdot(np.asarray(a), np.asarray(b)))


@given(programs, xs, xs, xs)
def test_vjp_is_transpose_of_jvp(prog, x, v, ct):
    f = build(prog)
    _, jv = ft.jvp(f, (x,), (v,))
    _, f_vjp = ft.vjp(f, x)
    (jt_ct,) = f_vjp(ct)
    lhs, rhs = _vdot(ct, jv), _vdot(jt_ct, v)
    assert abs(lhs - rhs) <= RTOL * max(1.0, abs(lhs), abs(rhs))


@given(programs, xs)
def test_grad_equals_jacrev_row_and_jacfwd(prog, x):
    f = build(prog)
    s = lambda y: fnp.sum(f(y) ** 2)  # noqa: E731
    g = ft.grad(s)(x)
    np.testing.assert_allclose(g, ft.jacrev(s)(x), rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(g, ft.jacfwd(s)(x), rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(ft.jacrev(f)(x), ft.jacfwd(f)(x), rtol=RTOL, atol=1e-12)


@given(programs, xs)
def test_hessian_is_symmetric(prog, x):
    f = build(prog)
    h = np.asarray(ft.hessian(lambda y: fnp.sum(f(y)))(x))
    np.testing.assert_allclose(h, h.T, rtol=1e-8, atol=1e-10)


@given(programs, xs, xs)
def test_linearize_equals_jvp(prog, x, v):
    f = build(prog)
    y1, jv = ft.jvp(f, (x,), (v,))
    y2, f_lin = ft.linearize(f, x)
    np.testing.assert_allclose(y1, y2, rtol=RTOL)
    np.testing.assert_allclose(jv, f_lin(v), rtol=RTOL, atol=1e-12)


@given(programs, xs)
def test_programs_match_finite_differences(prog, x):
    check_grads(build(prog), (x,), order=2)


@given(programs, xs)
def test_transformed_programs_typecheck(prog, x):
    f = build(prog)
    s = lambda y: fnp.sum(f(y))  # noqa: E731
    second = ft.grad(lambda y: fnp.sum(ft.grad(lambda z: s(z) * z[0])(y)))
    for g in (ft.grad(s), second,
              lambda y: ft.jvp(f, (y,), (y,)), lambda y: ft.vjp(f, y)[1](y)):
        ft.check_jaxpr(ft.make_jaxpr(g)(x))


@given(st.integers(1, 4), st.floats(0.1, 2.0))
def test_power_derivatives_match_analytic(n, x):
    # d^k/dx^k x^m = m!/(m-k)! x^(m-k) for m = 5
    m = 5
    f = lambda y: y ** m  # noqa: E731
    for _ in range(n):
        f = ft.grad(f)
    want = np.prod(range(m - n + 1, m + 1)) * x ** (m - n)
    np.testing.assert_allclose(float(f(x)), want, rtol=1e-12)
