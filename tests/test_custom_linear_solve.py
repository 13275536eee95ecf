"""lax.custom_linear_solve: values, implicit derivatives (jvp, grad, jacfwd, hessian) against
np.linalg.solve's and finite differences, pytrees, has_aux, jit and vmap. float64 throughout:
values and analytic derivatives to 1e-10, central finite differences (h=1e-6) to 1e-6."""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from finite_diff import fd_grad

rng = np.random.default_rng(0)
A = rng.normal(size=(4, 4)) + 4 * np.eye(4)
S = A @ A.T
B = rng.normal(size=4)


def solve_with(a, b, symmetric=False):
    """custom_linear_solve whose solve is a dense solve (its derivatives come from the rule)."""
    return lax.custom_linear_solve(
        lambda x: a @ x, b, lambda mv, r: fnp.linalg.solve(a, r),
        None if symmetric else (lambda vm, r: fnp.linalg.solve(a.T, r)), symmetric=symmetric)



def test_value_and_pytree():
    np.testing.assert_allclose(solve_with(A, B), np.linalg.solve(A, B), rtol=1e-10)
    b = {"u": B[:2], "v": B[2:]}

    def mv(x):
        y = A @ fnp.concatenate([x["u"], x["v"]])
        return {"u": y[:2], "v": y[2:]}

    def solve(matvec, r):
        y = fnp.linalg.solve(A, fnp.concatenate([r["u"], r["v"]]))
        return {"u": y[:2], "v": y[2:]}
    x = lax.custom_linear_solve(mv, b, solve)
    want = np.linalg.solve(A, B)
    np.testing.assert_allclose(np.concatenate([x["u"], x["v"]]), want, rtol=1e-10)
    def tsolve(vecmat, r):
        y = fnp.linalg.solve(A.T, fnp.concatenate([r["u"], r["v"]]))
        return {"u": y[:2], "v": y[2:]}
    g = ft.grad(lambda b: lax.custom_linear_solve(mv, b, solve, tsolve)["u"].sum())(b)
    want = np.linalg.solve(A.T, np.array([1.0, 1.0, 0.0, 0.0]))
    np.testing.assert_allclose(np.concatenate([g["u"], g["v"]]), want, rtol=1e-10)
    assert set(g) == {"u", "v"}


@pytest.mark.parametrize("symmetric", [False, True])
def test_grad_wrt_b_and_matrix(symmetric):
    a = S if symmetric else A

    def loss(a, b):
        return (solve_with(a, b, symmetric) ** 3).sum()

    def ref(a, b):
        return (fnp.linalg.solve(a, b) ** 3).sum()
    ga, gb = ft.grad(loss, argnums=(0, 1))(a, B)
    ra, rb = ft.grad(ref, argnums=(0, 1))(a, B)
    np.testing.assert_allclose(gb, rb, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ga, ra, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gb, fd_grad(lambda b: float(loss(a, b)), B), rtol=1e-6, atol=1e-8)
    if not symmetric:  # a symmetric solve assumes A = A^T: only symmetric perturbations
        np.testing.assert_allclose(ga, fd_grad(lambda m: float(loss(m, B)), a), rtol=1e-6,
                                   atol=1e-8)


def test_jvp_jacfwd_hessian():
    ref = lambda a, b: fnp.linalg.solve(a, b)  # noqa: E731
    ta, tb = rng.normal(size=(4, 4)), rng.normal(size=4)
    p, t = ft.jvp(solve_with, (A, B), (ta, tb))
    pr, tr = ft.jvp(ref, (A, B), (ta, tb))
    np.testing.assert_allclose(p, pr, rtol=1e-10)
    np.testing.assert_allclose(t, tr, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ft.jacfwd(solve_with, argnums=(0, 1))(A, B)[0],
                               ft.jacfwd(ref, argnums=(0, 1))(A, B)[0], rtol=1e-10, atol=1e-12)
    h = ft.hessian(lambda b: (solve_with(A, b) ** 3).sum())(B)
    np.testing.assert_allclose(h, ft.hessian(lambda b: (ref(A, b) ** 3).sum())(B), rtol=1e-10,
                               atol=1e-12)


def test_does_not_differentiate_through_solve():
    # solve returns a wrong answer's derivative-free "solution": the derivative still comes
    # from the implicit rule (A dx = db), so d/db of the solve-by-stop-gradient is A^{-1}
    def solve(matvec, r):
        return lax.stop_gradient(fnp.linalg.solve(A, r))
    jac = ft.jacfwd(lambda b: lax.custom_linear_solve(lambda x: A @ x, b, solve))(B)
    np.testing.assert_allclose(jac, np.linalg.inv(A), rtol=1e-10, atol=1e-12)
    jr = ft.jacrev(lambda b: lax.custom_linear_solve(
        lambda x: A @ x, b, solve, lambda vm, r: lax.stop_gradient(fnp.linalg.solve(A.T, r))))(B)
    np.testing.assert_allclose(jr, np.linalg.inv(A), rtol=1e-10, atol=1e-12)


def test_jit_and_vmap():
    loss = lambda a, b: (solve_with(a, b) ** 2).sum()  # noqa: E731
    ref = lambda a, b: (fnp.linalg.solve(a, b) ** 2).sum()  # noqa: E731
    np.testing.assert_allclose(ft.jit(solve_with)(A, B), np.linalg.solve(A, B), rtol=1e-10)
    np.testing.assert_allclose(ft.jit(ft.grad(loss))(A, B), ft.grad(ref)(A, B), rtol=1e-10)
    bs = rng.normal(size=(3, 4))
    np.testing.assert_allclose(ft.vmap(solve_with, (None, 0))(A, bs),
                               np.linalg.solve(A, bs.T).T, rtol=1e-10)
    as_ = rng.normal(size=(3, 4, 4)) + 4 * np.eye(4)
    np.testing.assert_allclose(ft.jit(ft.vmap(solve_with))(as_, bs),
                               np.linalg.solve(as_, bs[..., None])[..., 0], rtol=1e-10)
    np.testing.assert_allclose(ft.vmap(ft.grad(loss, argnums=(0, 1)))(as_, bs)[0],
                               ft.vmap(ft.grad(ref, argnums=(0, 1)))(as_, bs)[0], rtol=1e-10)


def test_has_aux():
    def solve(matvec, r):
        return fnp.linalg.solve(A, r), {"iters": fnp.array(3)}
    x, aux = lax.custom_linear_solve(lambda x: A @ x, B, solve, has_aux=True)
    np.testing.assert_allclose(x, np.linalg.solve(A, B), rtol=1e-10)
    assert int(aux["iters"]) == 3
    g = ft.grad(lambda b: lax.custom_linear_solve(lambda x: A @ x, b, solve, symmetric=False,
                                                  has_aux=True,
                                                  transpose_solve=lambda vm, r: (
                                                      fnp.linalg.solve(A.T, r),
                                                      {"iters": fnp.array(1)}))[0].sum())(B)
    np.testing.assert_allclose(g, np.linalg.solve(A.T, np.ones(4)), rtol=1e-10)


def test_reverse_mode_needs_transpose_solve():
    f = lambda b: lax.custom_linear_solve(  # noqa: E731
        lambda x: A @ x, b, lambda mv, r: fnp.linalg.solve(A, r)).sum()
    ft.jvp(f, (B,), (B,))  # forward mode needs no transpose
    with pytest.raises(TypeError, match="transpose_solve"):
        ft.grad(f)(B)


def test_structure_error():
    with pytest.raises(TypeError, match="pytree structure"):
        lax.custom_linear_solve(lambda x: A @ x, B, lambda mv, r: (r, r))
