"""jaxopt (the pinned release of tests/ecosystem.py) runs unchanged on functrans: LBFGS on a
logistic regression, projected gradient on a box, the box-constrained QP solver BoxCDQP and
OSQP, and implicit differentiation through solvers (a ridge regression's regularisation
gradient through gradient descent, and jaxopt.implicit_diff.custom_root around a direct
solve). Expected values come from the same programs on JAX 0.10.2 (CPU, float32); every
program runs in a child process under ``python -m functrans.as_jax``."""
from __future__ import annotations

import json

import pytest

from ecosystem import all_close, run_as_jax

pytestmark = pytest.mark.timeout(900)

DATA = """
    import json
    import jax, jax.numpy as jnp
    import jaxopt

    kx, kw = jax.random.split(jax.random.PRNGKey(0))
    X = jax.random.normal(kx, (100, 5))
    w_true = jnp.array([1.0, -2.0, 0.5, 0.0, 3.0])
    n = X.shape[0]
"""


def test_lbfgs_logistic_regression_projected_gradient_and_quadratic_programs():
    # On JAX 0.10.2: LBFGS stops after 8 iterations at w = [0.34933266, -0.69861531,
    # 0.18788461, 0.023631111, 1.1123271] with loss 0.45227957; projected gradient on the box
    # [-1, 1]^3 gives [1, -1, 0.5]; BoxCDQP on [-0.5, 0.5]^3 [0.375, -0.5, 0.5]; OSQP
    # [0.24999955, 0.74999982] (its ADMM stops at tol 1e-6; the exact solution is
    # [0.25, 0.75]). The data are the same bits (threefry), so LBFGS takes the same steps and
    # agrees to float32 rounding of its reductions (measured: 1.6e-7): held to 1e-6; OSQP's
    # stopping point differs by rounding too (measured: 1.2e-7): held to 1e-6 absolute.
    out = run_as_jax(DATA + """
    y = (X @ w_true + 0.3 * jax.random.normal(kw, (100,)) > 0).astype(jnp.float32)

    def logreg(w, X, y, l2):
        logits = X @ w
        return jnp.mean(jnp.logaddexp(0.0, logits) - y * logits) + 0.5 * l2 * jnp.sum(w ** 2)

    res = jaxopt.LBFGS(fun=logreg, maxiter=100, tol=1e-6).run(jnp.zeros(5), X=X, y=y, l2=0.1)
    out = {"w": res.params.tolist(), "iters": int(res.state.iter_num),
           "loss": float(logreg(res.params, X, y, 0.1))}

    from jaxopt.projection import projection_box
    def quad(x):
        return jnp.sum((x - jnp.array([2.0, -3.0, 0.5])) ** 2)
    pg = jaxopt.ProjectedGradient(fun=quad, projection=projection_box, maxiter=200, tol=1e-8)
    out["pg"] = pg.run(jnp.zeros(3), hyperparams_proj=(-1.0, 1.0)).params.tolist()

    Q = jnp.array([[4.0, 1.0, 0.0], [1.0, 3.0, 0.5], [0.0, 0.5, 2.0]])
    c = jnp.array([-1.0, 2.0, -3.0])
    box = (jnp.full(3, -0.5), jnp.full(3, 0.5))
    out["boxcdqp"] = jaxopt.BoxCDQP(tol=1e-7, maxiter=500).run(
        jnp.zeros(3), params_obj=(Q, c), params_ineq=box).params.tolist()

    Qo = jnp.array([[2.0, 0.5], [0.5, 1.0]])
    sol = jaxopt.OSQP(tol=1e-6).run(
        params_obj=(Qo, jnp.ones(2)), params_eq=(jnp.ones((1, 2)), jnp.ones(1)),
        params_ineq=(-jnp.eye(2), jnp.zeros(2))).params
    out["osqp"] = sol.primal.tolist()
    print(json.dumps(out))
    """)
    res = json.loads(out.strip().splitlines()[-1])
    assert res["iters"] == 8
    assert all_close(res["w"], [0.34933266, -0.69861531, 0.18788461, 0.023631111, 1.1123271],
                      1e-6, 1e-7)
    assert all_close([res["loss"]], [0.45227957], 0, 1e-6)
    assert all_close(res["pg"], [1.0, -1.0, 0.5], 0, 1e-7)
    assert all_close(res["boxcdqp"], [0.375, -0.5, 0.5], 0, 1e-6)
    assert all_close(res["osqp"], [0.24999955, 0.74999982], 0, 1e-6)


def test_implicit_differentiation_through_solvers():
    # The ridge solution w(lam) of 0.5 mean((Xw - y)^2) + 0.5 lam |w|^2 found by gradient
    # descent (500 steps at most, tol 1e-7) with implicit_diff, and d/dlam |w(lam) - w_true|^2
    # at lam = 0.5 through its optimality condition; and custom_root around a direct solve
    # (jaxopt's documented pattern), its Jacobian dw/dlam. On JAX 0.10.2: w(0.5) =
    # [0.68992472, -1.2533560, 0.42079175, 0.0020137932, 1.9569731], the gradient 4.5157161
    # (closed form through jnp.linalg.solve: 4.5156732), dw/dlam = [-0.42624718, 0.93351078,
    # -0.16826558, -0.0066586323, -1.3569998]. Gradient descent stops where its float32
    # gradient first drops under tol, which rounding moves (measured: w within 2.7e-6): held to
    # 1e-5 absolute; the implicit gradient and Jacobian are linear solves at that point
    # (measured: 4.4e-7 and 8e-7 relative): held to 1e-5 relative; both match the closed form
    # to 1e-4 relative (the solver's tolerance).
    out = run_as_jax(DATA + """
    yr = X @ w_true

    def ridge_obj(w, lam, X, y):
        return 0.5 * jnp.mean((X @ w - y) ** 2) + 0.5 * lam * jnp.sum(w ** 2)

    def ridge_solution(lam):
        gd = jaxopt.GradientDescent(fun=ridge_obj, maxiter=500, tol=1e-7, implicit_diff=True)
        return gd.run(jnp.zeros(5), lam, X, yr).params

    def closed(lam):
        return jnp.linalg.solve(X.T @ X / n + lam * jnp.eye(5), X.T @ yr / n)

    @jaxopt.implicit_diff.custom_root(jax.grad(ridge_obj))
    def ridge_direct(init_w, lam, X, y):
        return jnp.linalg.solve(X.T @ X / n + lam * jnp.eye(5), X.T @ y / n)

    dist = lambda solve: lambda lam: jnp.sum((solve(lam) - w_true) ** 2)
    print(json.dumps({
        "w": ridge_solution(0.5).tolist(),
        "dlam": float(jax.grad(dist(ridge_solution))(0.5)),
        "dlam_closed": float(jax.grad(dist(closed))(0.5)),
        "jac": jax.jacobian(lambda l: ridge_direct(None, l, X, yr))(0.5).tolist(),
        "jac_closed": jax.jacobian(closed)(0.5).tolist()}))
    """)
    res = json.loads(out.strip().splitlines()[-1])
    assert all_close(res["w"], [0.68992472, -1.2533560, 0.42079175, 0.0020137932, 1.9569731],
                      0, 1e-5)
    assert all_close([res["dlam"]], [4.5157161], 1e-5)
    assert all_close([res["dlam"]], [res["dlam_closed"]], 1e-4)
    want = [-0.42624718, 0.93351078, -0.16826558, -0.0066586323, -1.3569998]
    assert all_close(res["jac"], want, 1e-5, 1e-7)
    assert all_close(res["jac"], res["jac_closed"], 1e-4, 1e-6)
