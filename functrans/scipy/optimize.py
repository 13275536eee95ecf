"""``functrans.scipy.optimize`` (JAX's ``jax.scipy.optimize``): unconstrained minimization of
a scalar function of one vector by BFGS, as one ``while_loop`` (so it runs under jit and vmap).

    >>> r = minimize(lambda x: fnp.sum((x - 3.0) ** 2), fnp.zeros(2), method="BFGS")
    >>> bool(r.success), fnp.round(r.x, 5)
    (True, Array([3., 3.], dtype=float64))
"""
from __future__ import annotations

from typing import NamedTuple

from .. import lax
from .. import numpy as fnp
from ..transforms.autodiff import value_and_grad

__all__ = ["minimize", "OptimizeResults"]


class OptimizeResults(NamedTuple):
    """What :func:`minimize` returns. ``status``: 0 converged (gradient norm below ``gtol``),
    1 iteration limit reached, 3 the line search found no decrease."""
    x: object
    success: object
    status: object
    fun: object
    jac: object
    hess_inv: object
    nfev: object
    njev: object
    nit: object


def minimize(fun, x0, args=(), *, method, tol=None, options=None):
    """Minimize ``fun(x, *args)`` from ``x0`` (a 1-D array) by ``method="BFGS"``.

    ``tol`` is the gradient tolerance (default 1e-5, max-norm); ``options`` may set
    ``maxiter`` (default ``200 * x0.size``), ``gtol`` and ``norm``.

        >>> minimize(lambda x, a: fnp.sum((x - a) ** 2), fnp.zeros(1), (2.0,), method="BFGS").nit
        Array(1, dtype=int64, weak_type=True)
    """
    if not isinstance(method, str) or method.lower() != "bfgs":
        raise ValueError(f"scipy.optimize.minimize: method must be 'BFGS', got {method!r}")
    options = dict(options or {})
    x0 = fnp.asarray(x0)
    if x0.ndim != 1:
        raise ValueError(f"scipy.optimize.minimize: x0 must be one-dimensional, got shape "
                         f"{x0.shape}")
    if not fnp.issubdtype(x0.dtype, fnp.floating):
        x0 = x0.astype(fnp.result_type(float))
    maxiter = options.pop("maxiter", None)
    maxiter = 200 * x0.size if maxiter is None else maxiter
    gtol = options.pop("gtol", 1e-5 if tol is None else tol)
    norm = options.pop("norm", fnp.inf)
    line_search_maxiter = options.pop("line_search_maxiter", 30)
    if options:
        raise ValueError(f"scipy.optimize.minimize: unknown options {sorted(options)}")
    return _bfgs(lambda x: fun(x, *args), x0, maxiter, gtol, norm, line_search_maxiter)


def _bfgs(fun, x0, maxiter, gtol, norm, line_search_maxiter):
    f_and_g = value_and_grad(fun)
    n = x0.shape[0]
    f0, g0 = f_and_g(x0)
    eye = fnp.eye(n, dtype=x0.dtype)
    c1 = 1e-4  # Armijo's sufficient-decrease constant

    def line_search(x, f, g, p):
        # Backtracking from the full quasi-Newton step, halving until f decreases enough;
        # returns the accepted point (or x itself with ok=False).
        slope = fnp.dot(g, p)

        def cond(state):
            alpha, f_new, g_new, it, ok = state
            return (~ok) & (it < line_search_maxiter)

        def body(state):
            alpha, _, _, it, _ = state
            f_new, g_new = f_and_g(x + alpha * p)
            ok = fnp.isfinite(f_new) & (f_new <= f + c1 * alpha * slope)
            return (fnp.where(ok, alpha, alpha / 2), f_new, g_new, it + 1, ok)

        init = (fnp.asarray(1.0, x.dtype), f, g, fnp.asarray(0), fnp.asarray(False))
        alpha, f_new, g_new, it, ok = lax.while_loop(cond, body, init)
        ok = ok & (slope < 0)
        return alpha, f_new, g_new, it, ok

    def gnorm(g):
        return fnp.linalg.norm(g, ord=norm)

    def cond(state):
        x, f, g, h, k, nfev, status = state
        return status < 0

    def body(state):
        x, f, g, h, k, nfev, status = state
        p = -h @ g
        alpha, f_new, g_new, evals, ok = line_search(x, f, g, p)
        s = alpha * p
        y = g_new - g
        sy = fnp.dot(s, y)
        rho = 1.0 / fnp.where(sy > 0, sy, 1.0)
        a = eye - rho * fnp.outer(s, y)
        h_new = a @ h @ a.T + rho * fnp.outer(s, s)
        # curvature condition fails (sy <= 0): keep the old inverse Hessian, as SciPy does
        h_new = fnp.where(sy > 0, h_new, h)
        x, f, g, h = (fnp.where(ok, x + s, x), fnp.where(ok, f_new, f),
                      fnp.where(ok, g_new, g), fnp.where(ok, h_new, h))
        k = k + 1
        status = fnp.where(~ok, 3, fnp.where(gnorm(g) <= gtol, 0,
                                             fnp.where(k >= maxiter, 1, -1)))
        return x, f, g, h, k, nfev + evals, status

    # Counters and status are weakly typed default ints (int64 with x64), as JAX's, whose
    # loop state starts them from Python ints.
    start = fnp.where(gnorm(g0) <= gtol, 0, fnp.where(maxiter <= 0, 1, -1))
    init = (x0, f0, g0, eye, fnp.asarray(0), fnp.asarray(1), start)
    x, f, g, h, k, nfev, status = lax.while_loop(cond, body, init)
    return OptimizeResults(x=x, success=status == 0, status=status, fun=f, jac=g, hess_inv=h,
                           nfev=nfev, njev=nfev, nit=k)
