"""Control-flow benchmarks: a Lorenz-system RK4 integrator (jit of fori_loop, 20,000 steps on
a 3-vector) and a scan-based RNN forward + backward pass, vs NumPy eager (and JAX)."""
from __future__ import annotations

import numpy as np

import functrans as ft
import functrans.numpy as fnp
from functrans import lax

try:
    from .timing import maybe_jax, median_time, run, table
except ImportError:  # run as a script
    from timing import maybe_jax, median_time, run, table

SIGMA, RHO, BETA, DT, STEPS = 10.0, 28.0, 8.0 / 3.0, 0.001, 20_000


def lorenz(s, xp):
    x, y, z = s[0], s[1], s[2]
    return xp.stack([SIGMA * (y - x), x * (RHO - z) - y, x * y - BETA * z])


def rk4_step(s, xp):
    k1 = lorenz(s, xp)
    k2 = lorenz(s + 0.5 * DT * k1, xp)
    k3 = lorenz(s + 0.5 * DT * k2, xp)
    k4 = lorenz(s + DT * k3, xp)
    return s + DT / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)


def integrate_numpy(s):
    for _ in range(STEPS):
        s = rk4_step(s, np)
    return s


@ft.jit
def integrate(s):
    return lax.fori_loop(0, STEPS, lambda i, v: rk4_step(v, fnp), s)


def rnn_loss(params, xs, ys):
    w, u, v = params

    def step(h, xy):
        x, y = xy
        h = fnp.tanh(h @ w + x @ u)
        return h, fnp.sum((h @ v - y) ** 2)

    _, losses = lax.scan(step, fnp.zeros(w.shape[0], w.dtype), (xs, ys))
    return fnp.mean(losses)


def rnn_grad_numpy(params, xs, ys):
    """Hand-written backpropagation through time for rnn_loss."""
    w, u, v = params
    T = xs.shape[0]
    hs = [np.zeros(w.shape[0], w.dtype)]
    for t in range(T):
        hs.append(np.tanh(hs[-1] @ w + xs[t] @ u))
    gw, gu, gv = np.zeros_like(w), np.zeros_like(u), np.zeros_like(v)
    gh = np.zeros_like(hs[0])
    for t in range(T - 1, -1, -1):
        h, hp = hs[t + 1], hs[t]
        r = h @ v - ys[t]
        gv += np.outer(h, 2 * r) / T
        gh = gh + (2 * r) @ v.T / T
        gz = gh * (1 - h * h)
        gw += np.outer(hp, gz)
        gu += np.outer(xs[t], gz)
        gh = gz @ w.T
    return gw, gu, gv


def check_and_time():
    jax, jnp = maybe_jax()
    out = []
    s0 = np.array([1.0, 1.0, 1.0])
    want = integrate_numpy(s0)
    np.testing.assert_allclose(integrate(s0), want, rtol=1e-9)
    rows = [("numpy eager (python loop)", median_time(lambda: integrate_numpy(s0), repeat=3,
                                                        warmup=1)),
            ("functrans jit(fori_loop)", median_time(lambda: integrate(s0)))]
    if jax:
        jax.config.update("jax_enable_x64", True)
        jint = jax.jit(lambda s: jax.lax.fori_loop(0, STEPS, lambda i, v: rk4_step(v, jnp), s))
        sj = jnp.asarray(s0)
        rows.append(("jax jit(fori_loop)", median_time(lambda: jint(sj).block_until_ready())))
    out.append(table("Lorenz RK4, 20,000 steps, float64 3-vector", rows,
                     "functrans jit(fori_loop)"))

    rng = np.random.default_rng(0)
    H, D, T = 64, 32, 100
    params = tuple((rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32)
                   for s in [(H, H), (D, H), (H, D)])
    xs = rng.standard_normal((T, D)).astype(np.float32)
    ys = rng.standard_normal((T, D)).astype(np.float32)
    step = ft.jit(ft.value_and_grad(rnn_loss))
    _, g = step(params, xs, ys)
    for a, b in zip(g, rnn_grad_numpy(params, xs, ys)):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-5)
    rows = [("numpy (hand-written BPTT)", median_time(lambda: rnn_grad_numpy(params, xs, ys))),
            ("functrans jit(value_and_grad(scan))", median_time(lambda: step(params, xs, ys)))]
    if jax:
        def jloss(p, x, y):
            w, u, v = p

            def stp(h, xy):
                h = jnp.tanh(h @ w + xy[0] @ u)
                return h, jnp.sum((h @ v - xy[1]) ** 2)
            _, losses = jax.lax.scan(stp, jnp.zeros(H, jnp.float32), (x, y))
            return jnp.mean(losses)
        jstep = jax.jit(jax.value_and_grad(jloss))
        pj = tuple(jnp.asarray(p) for p in params)
        rows.append(("jax jit(value_and_grad(scan))",
                     median_time(lambda: jax.block_until_ready(jstep(pj, xs, ys)))))
    out.append(table(f"scan RNN forward+backward, hidden {H}, input {D}, {T} steps, float32",
                     rows, "numpy (hand-written BPTT)"))
    return "\n".join(out)


if __name__ == "__main__":
    import bench_control_flow  # by name: the JAX peer process imports it so
    print(run(bench_control_flow))
