"""Linear algebra under jit: a program ``2*a -> cholesky -> +1`` (LAPACK called inside the
kernel) and the same with ``qr`` (a host step between compiled segments), against NumPy doing
the same work eagerly, at a small size (where per-step overheads show) and a larger one (where
LAPACK's time dominates); and a solve + slogdet loss with its gradient (eager, jit)."""
from __future__ import annotations

import numpy as np

import functrans as ft
import functrans.numpy as fnp

try:
    from .timing import median_time, table
except ImportError:  # run as a script
    from timing import median_time, table


def chol_program(xp, chol):
    def f(a):
        return chol(a * 2.0 + 0.0) + 1.0
    return f


def loss(a, b):
    n = a.shape[-1]
    m = a @ a.T + n * fnp.eye(n)
    return fnp.sum(fnp.linalg.solve(m, b) ** 2) + fnp.linalg.slogdet(m)[1]


def loss_numpy(a, b):
    n = a.shape[-1]
    m = a @ a.T + n * np.eye(n)
    return np.sum(np.linalg.solve(m, b) ** 2) + np.linalg.slogdet(m)[1]


def check_and_time() -> str:
    out = []
    rng = np.random.default_rng(0)
    for n in (8, 256):
        a = rng.normal(size=(n, n))
        s = a @ a.T + n * np.eye(n)
        b = rng.normal(size=(n, 4))
        np_prog = chol_program(np, np.linalg.cholesky)
        jit_prog = ft.jit(chol_program(fnp, lambda m: fnp.linalg.cholesky(
            m, symmetrize_input=False)))
        np_qr = chol_program(np, lambda m: np.linalg.qr(m)[1])
        jit_qr = ft.jit(chol_program(fnp, lambda m: fnp.linalg.qr(m)[1]))
        want_qr = np_qr(s)
        np.testing.assert_allclose(jit_qr(s), want_qr, rtol=1e-12,
                                   atol=1e-12 * abs(want_qr).max())
        want = np_prog(s)  # LAPACK's blocked order may differ: a few ulp of the matrix scale
        np.testing.assert_allclose(jit_prog(s), want, rtol=1e-12, atol=1e-12 * abs(want).max())
        jit_loss = ft.jit(loss)
        jit_grad = ft.jit(ft.grad(loss))
        np.testing.assert_allclose(jit_loss(a, b), loss_numpy(a, b), rtol=1e-10)
        np.testing.assert_allclose(jit_grad(a, b), ft.grad(loss)(a, b), rtol=1e-10)
        rows = [
            ("NumPy: 2*a -> cholesky -> +1", median_time(lambda: np_prog(s))),
            ("jit: one kernel calling LAPACK potrf", median_time(lambda: jit_prog(s))),
            ("NumPy: 2*a -> qr -> +1", median_time(lambda: np_qr(s))),
            ("jit: kernel -> qr (host step) -> kernel", median_time(lambda: jit_qr(s))),
            ("NumPy: solve + slogdet loss", median_time(lambda: loss_numpy(a, b))),
            ("functrans eager: same loss", median_time(lambda: loss(a, b))),
            ("jit: same loss", median_time(lambda: jit_loss(a, b))),
            ("jit(grad): loss and its gradient", median_time(lambda: jit_grad(a, b))),
        ]
        out.append(table(f"n = {n} (float64)", rows, "NumPy: 2*a -> cholesky -> +1"))
    return "\n".join(out)


if __name__ == "__main__":
    print(check_and_time())
