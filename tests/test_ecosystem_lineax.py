"""lineax (the pinned release of tests/ecosystem.py) runs unchanged on functrans: dense,
matrix-free, least-squares and tridiagonal solves, and derivatives through solves. Expected
values come from the same programs on JAX 0.10.2 (CPU, float32); every program runs in a
child process under ``python -m functrans.as_jax``."""
from __future__ import annotations

import json

import numpy as np
import pytest

from ecosystem import run_as_jax

pytestmark = pytest.mark.timeout(900)

SOLVES = """
    import json
    import jax, jax.numpy as jnp
    import lineax as lx

    res = {}
    A = (jnp.array([[4.0, 1.0, 2.0], [1.0, 5.0, 1.0], [2.0, 1.0, 6.0]])
         + jnp.arange(9.0).reshape(3, 3) * 0.1)
    b = jnp.array([1.0, 2.0, 3.0])
    sol = lx.linear_solve(lx.MatrixLinearOperator(A), b)  # AutoLinearSolver: LU
    res["lu"] = sol.value.tolist()
    res["lu_ok"] = bool(sol.result == lx.RESULTS.successful)

    # CG on a matrix-free positive-definite operator (a 1-D Laplacian plus a diagonal)
    n = 16
    main = 2.0 + jnp.linspace(0.0, 1.0, n)
    def matvec(x):
        return main * x - 0.5 * jnp.roll(x, 1) - 0.5 * jnp.roll(x, -1)
    rhs = jnp.sin(jnp.arange(n, dtype=jnp.float32))
    op = lx.FunctionLinearOperator(matvec, jax.ShapeDtypeStruct((n,), jnp.float32),
                                   lx.positive_semidefinite_tag)
    s = lx.linear_solve(op, rhs, lx.CG(rtol=1e-6, atol=1e-6, max_steps=100))
    res["cg"] = s.value.tolist()
    res["cg_steps"] = int(s.stats["num_steps"])

    # least squares (overdetermined: a quadratic fit) and minimum norm (underdetermined) by QR
    X = jnp.stack([jnp.ones(6), jnp.arange(6.0), jnp.arange(6.0) ** 2], axis=1)
    y = jnp.array([1.0, 2.9, 5.2, 9.1, 13.8, 21.2])
    res["qr"] = lx.linear_solve(lx.MatrixLinearOperator(X), y, lx.QR()).value.tolist()
    res["qr_under"] = lx.linear_solve(lx.MatrixLinearOperator(X.T), jnp.array([1.0, 2.0, 3.0]),
                                      lx.QR()).value.tolist()

    d = jnp.full(5, 4.0)
    lo, up = jnp.ones(4), jnp.array([2.0, 0.5, 1.0, 1.5])
    t = lx.linear_solve(lx.TridiagonalLinearOperator(d, lo, up), jnp.arange(1.0, 6.0),
                        lx.Tridiagonal())
    res["tri"] = t.value.tolist()
    print(json.dumps(res))
"""

GRADIENTS = """
    import json
    import jax, jax.numpy as jnp
    import lineax as lx

    res = {}
    A = (jnp.array([[4.0, 1.0, 2.0], [1.0, 5.0, 1.0], [2.0, 1.0, 6.0]])
         + jnp.arange(9.0).reshape(3, 3) * 0.1)
    b = jnp.array([1.0, 2.0, 3.0])

    def loss(A, b):
        return jnp.sum(lx.linear_solve(lx.MatrixLinearOperator(A), b).value ** 2)
    gA, gb = jax.grad(loss, argnums=(0, 1))(A, b)
    res["grad_A"], res["grad_b"] = gA.ravel().tolist(), gb.tolist()

    lo, up = jnp.ones(4), jnp.array([2.0, 0.5, 1.0, 1.5])
    def tri_loss(d):
        op = lx.TridiagonalLinearOperator(d, lo, up)
        return jnp.sum(lx.linear_solve(op, jnp.arange(1.0, 6.0), lx.Tridiagonal()).value)
    res["grad_tri"] = jax.grad(tri_loss)(jnp.full(5, 4.0)).tolist()

    X = jnp.stack([jnp.ones(6), jnp.arange(6.0), jnp.arange(6.0) ** 2], axis=1)
    def qr_loss(y):
        return jnp.sum(lx.linear_solve(lx.MatrixLinearOperator(X), y, lx.QR()).value ** 2)
    res["grad_qr"] = jax.jit(jax.grad(qr_loss))(
        jnp.array([1.0, 2.9, 5.2, 9.1, 13.8, 21.2])).tolist()

    op = lx.MatrixLinearOperator(A)
    res["vmap_lu"] = jax.vmap(lambda v: lx.linear_solve(op, v).value)(jnp.eye(3)).tolist()
    print(json.dumps(res))
"""


def _run(program):
    return json.loads(run_as_jax(program).strip().splitlines()[-1])


def test_dense_matrix_free_least_squares_and_tridiagonal_solves():
    # On JAX 0.10.2 (float32). LU and the tridiagonal solve call the same LAPACK routines as
    # JAX's (functrans: identical results; 2e-6 relative allows a few ulp). QR: functrans's
    # Householder QR is a loop of lax operations, JAX's LAPACK's ?geqrf, so they differ by
    # rounding, amplified by the least-squares problem's condition number (cond(X) = 38:
    # ~38 * 6e-8 = 2.3e-6 relative; functrans: 1.2464277 for JAX's 1.2464308), held to 2e-5.
    # CG takes the same 11 iterations (its residual falls by orders of magnitude per step,
    # never near the tolerance at a test), and its solution agrees to 2e-6.
    res = _run(SOLVES)
    assert res["lu_ok"]
    np.testing.assert_allclose(res["lu"], [-0.038015589, 0.271811426, 0.387758970], rtol=2e-6)
    assert res["cg_steps"] == 11
    np.testing.assert_allclose(res["cg"][:4], [0.233281150, 0.606860042, 0.592131674,
                                               0.100973740], rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(res["qr"], [1.246430755, 0.618927479, 0.662500203], rtol=2e-5)
    np.testing.assert_allclose(res["qr_under"], [-0.089285880, 0.275000304, 0.442857057,
                                                 0.414285630, 0.189285591, -0.232142761],
                               rtol=2e-5)
    np.testing.assert_allclose(res["tri"], [0.038170561, 0.423658878, 0.534387887,
                                            0.438789546, 1.140302658], rtol=2e-6)


def test_gradients_through_solves_and_vmap():
    # On JAX 0.10.2 (float32): lineax differentiates a solve implicitly (another solve with
    # the same operator or its transpose), so the LU and tridiagonal gradients agree to
    # float32 rounding (1e-5). The least-squares one (through QR's transpose, under jit)
    # carries QR's rounding times cond(X) = 38 on a gradient of scale 1.4: ~3e-6 absolute
    # (functrans: 1.4365546 and 0.0266941 for JAX's 1.4365617 and 0.0266922), held to 2e-5
    # relative plus 5e-6 absolute.
    res = _run(GRADIENTS)
    np.testing.assert_allclose(res["grad_A"], [
        -0.005223570, 0.037348520, 0.053280406, 0.003217645, -0.023006156, -0.032819971,
        0.005315758, -0.038007665, -0.054220729], rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(res["grad_b"], [-0.137405992, 0.084640138, 0.139831007],
                               rtol=1e-5)
    np.testing.assert_allclose(res["grad_tri"], [-0.008728825, -0.036130469, -0.107686132,
                                                 -0.066391818, -0.220374852], rtol=1e-5)
    np.testing.assert_allclose(res["grad_qr"], [1.436561704, 0.782036841, 0.312080741,
                                                0.026692228, -0.074128434, 0.009618597],
                               rtol=2e-5, atol=5e-6)
    np.testing.assert_allclose(np.ravel(res["vmap_lu"]), [
        0.324748158, -0.046949245, -0.112431087, -0.035544578, 0.204143703, -0.037445351,
        -0.097224861, -0.029842233, 0.191693589], rtol=1e-5)
