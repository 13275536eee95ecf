"""jax.scipy.sparse.linalg's cg, bicgstab, gmres: solutions against np.linalg.solve (float64,
solver tol 1e-10 -> rtol 1e-7), pytree b, preconditioners, jit, vmap, implicit derivatives
against np.linalg.solve's and central finite differences (h=1e-6, rtol 1e-5), and the
``jax.scipy.sparse.linalg`` import under functrans.as_jax."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.scipy.sparse import linalg as sl
from finite_diff import fd_grad

N = 6
rng = np.random.default_rng(0)
A = rng.normal(size=(N, N)) + 4 * np.eye(N)
SPD = A @ A.T + np.eye(N)
B = rng.normal(size=N)
TOL = dict(rtol=1e-7, atol=1e-9)

SOLVERS = {
    "cg": (sl.cg, SPD),
    "bicgstab": (sl.bicgstab, A),
    "gmres": (sl.gmres, A),
    "gmres_incremental": (lambda *a, **k: sl.gmres(*a, solve_method="incremental", **k), A),
    "gmres_restart3": (lambda *a, **k: sl.gmres(*a, restart=3, **k), A),
}


@pytest.fixture(params=list(SOLVERS))
def solver(request):
    return SOLVERS[request.param]


def test_solves_matrix_and_function(solver):
    f, m = solver
    x, info = f(m, B, tol=1e-10)
    assert info is None
    np.testing.assert_allclose(x, np.linalg.solve(m, B), **TOL)
    x, _ = f(lambda v: fnp.dot(m, v), B, tol=1e-10)
    np.testing.assert_allclose(x, np.linalg.solve(m, B), **TOL)
    x, _ = f(m, B, x0=np.ones(N), tol=1e-10)
    np.testing.assert_allclose(x, np.linalg.solve(m, B), **TOL)


def test_pytree_b(solver):
    f, m = solver

    def mv(t):
        y = m @ fnp.concatenate([t["a"], t["b"].ravel()])
        return {"a": y[:2], "b": y[2:].reshape(2, 2)}
    b = {"a": B[:2], "b": B[2:].reshape(2, 2)}
    x, _ = f(mv, b, tol=1e-10)
    want = np.linalg.solve(m, B)
    np.testing.assert_allclose(np.concatenate([x["a"], x["b"].ravel()]), want, **TOL)


def test_preconditioner(solver):
    f, m = solver
    jacobi = np.diag(1 / np.diag(m))
    x, _ = f(m, B, tol=1e-10, M=jacobi)
    np.testing.assert_allclose(x, np.linalg.solve(m, B), **TOL)
    x, _ = f(m, B, tol=1e-10, M=lambda r: r / fnp.diag(m))
    np.testing.assert_allclose(x, np.linalg.solve(m, B), **TOL)


def test_jit_and_vmap(solver):
    f, m = solver
    x = ft.jit(lambda b: f(m, b, tol=1e-10)[0])(B)
    np.testing.assert_allclose(x, np.linalg.solve(m, B), **TOL)
    bs = rng.normal(size=(3, N))
    xs = ft.vmap(lambda b: f(lambda v: m @ v, b, tol=1e-10)[0])(bs)
    np.testing.assert_allclose(xs, np.linalg.solve(m, bs.T).T, **TOL)



def test_grad_wrt_b(solver):
    f, m = solver

    def loss(b):
        return (f(m, b, tol=1e-12)[0] ** 2).sum()
    g = ft.grad(loss)(B)
    want = ft.grad(lambda b: (fnp.linalg.solve(m, b) ** 2).sum())(B)
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(g, fd_grad(lambda b: float(loss(b)), B), rtol=1e-5, atol=1e-8)


def test_grad_wrt_parameter_in_matvec(solver):
    f, m = solver
    d = rng.uniform(1.0, 2.0, size=N)

    def loss(theta):
        # A(theta) = m + diag(theta^2): stays SPD for cg
        x, _ = f(lambda v: m @ v + theta ** 2 * v, B, tol=1e-12)
        return (x ** 3).sum()

    def ref(theta):
        return (fnp.linalg.solve(m + fnp.diag(theta ** 2), B) ** 3).sum()
    g = ft.grad(loss)(d)
    np.testing.assert_allclose(g, ft.grad(ref)(d), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(g, fd_grad(lambda t: float(loss(t)), d), rtol=1e-5, atol=1e-8)
    _, t = ft.jvp(lambda th: f(lambda v: m @ v + th ** 2 * v, B, tol=1e-12)[0], (d,), (d,))
    _, tr = ft.jvp(lambda th: fnp.linalg.solve(m + fnp.diag(th ** 2), B), (d,), (d,))
    np.testing.assert_allclose(t, tr, rtol=1e-6, atol=1e-9)


def test_jit_grad_and_jacfwd():
    jac = ft.jit(ft.jacfwd(lambda b: sl.gmres(A, b, tol=1e-12)[0]))(B)
    np.testing.assert_allclose(jac, np.linalg.inv(A), rtol=1e-6, atol=1e-9)
    g = ft.jit(ft.grad(lambda b: sl.cg(SPD, b, tol=1e-12)[0].sum()))(B)
    np.testing.assert_allclose(g, np.linalg.solve(SPD, np.ones(N)), rtol=1e-6, atol=1e-9)


def test_errors():
    with pytest.raises(ValueError, match="square"):
        sl.cg(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match="tree structure"):
        sl.cg(SPD, B, x0=(B,))
    with pytest.raises(ValueError, match="shapes"):
        sl.bicgstab(A, B, x0=B[:2])
    with pytest.raises(ValueError, match="solve_method"):
        sl.gmres(A, B, solve_method="qr")


def test_import_under_as_jax(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import jax
        import jax.numpy as jnp
        import jax.scipy.sparse.linalg as sl
        from jax.scipy.sparse.linalg import gmres
        a = jnp.array([[4.0, 1.0], [1.0, 3.0]])
        x, info = sl.cg(lambda v: a @ v, jnp.array([1.0, 2.0]))
        y, _ = gmres(a, jnp.array([1.0, 2.0]))
        assert info is None
        print(round(float(x[0]), 6), round(float(y[1]), 6), jax.scipy.sparse.linalg is sl)
    """))
    out = subprocess.run([sys.executable, "-m", "functrans.as_jax", str(script)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0.090909", "0.636364", "True"]
