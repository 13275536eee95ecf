"""Autodiff and vmap benchmarks (eager, no jit) against hand-written NumPy in the same process.

1. One eager sin on 1,000 floats; grad of a 1,000-element elementwise-and-reduce function.
2. value_and_grad of an MLP loss (784-512-512-10, batch 128, float32).
3. Per-example gradients of a small MLP (64-64-10, batch 256): vmap(grad) vs a Python loop of
   grad vs NumPy.
"""
from __future__ import annotations

import numpy as np

import functrans as ft
import functrans.numpy as fnp

try:
    from .timing import maybe_jax, median_time, run, table
except ImportError:  # run as a script
    from timing import maybe_jax, median_time, run, table


# ---- 1. grad of a 1,000-element function ----------------------------------------------------------
def f_small(x):
    return fnp.sum(fnp.sin(x) * x * x + fnp.tanh(x))


def f_small_grad_numpy(x):
    t = np.tanh(x)
    return np.cos(x) * x * x + 2 * x * np.sin(x) + (1 - t * t)


# ---- 2. MLP loss ------------------------------------------------------------------------------------
def init_mlp(sizes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [((rng.standard_normal((m, n)) / np.sqrt(m)).astype(dtype), np.zeros(n, dtype))
            for m, n in zip(sizes[:-1], sizes[1:])]


def make_mlp_loss(xnp, logsumexp):
    """The ReLU MLP's softmax cross-entropy written against a NumPy-like module, so the same
    code gives the functrans version and the JAX one (``make_mlp_loss(jnp, ...)``)."""
    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = xnp.maximum(h @ w + b, 0.0)
        w, b = params[-1]
        logits = h @ w + b
        logz = logsumexp(logits, axis=1, keepdims=True)
        return -xnp.mean(xnp.sum(y * (logits - logz), axis=1))
    return loss


mlp_loss = make_mlp_loss(fnp, ft.scipy.special.logsumexp)


def _relu_forward(params, x):
    """Inputs of each layer (``acts``), pre-activations of the hidden ones, last hidden."""
    acts, pre = [x], []
    h = x
    for w, b in params[:-1]:
        z = h @ w + b
        pre.append(z)
        h = np.maximum(z, 0)
        acts.append(h)
    return acts, pre, h


def mlp_value_and_grad_numpy(params, x, y):
    """Hand-written forward and backward pass (ReLU MLP + softmax cross-entropy)."""
    acts, pre, h = _relu_forward(params, x)
    w, b = params[-1]
    logits = h @ w + b
    m = logits.max(1, keepdims=True)
    e = np.exp(logits - m)
    s = e.sum(1, keepdims=True)
    logp = logits - m - np.log(s)
    n = x.shape[0]
    loss = -np.mean(np.sum(y * logp, 1))
    g = (e / s * y.sum(1, keepdims=True) - y) / n
    grads = [None] * len(params)
    grads[-1] = (acts[-1].T @ g, g.sum(0))
    g = g @ w.T
    for k in range(len(params) - 2, -1, -1):
        g = g * (pre[k] > 0)
        grads[k] = (acts[k].T @ g, g.sum(0))
        if k:
            g = g @ params[k][0].T
    return loss, grads


def per_example_grads_numpy(params, x, y):
    """Per-example gradients of a ReLU MLP, batched by hand with einsum."""
    acts, pre, h = _relu_forward(params, x)
    logits = h @ params[-1][0] + params[-1][1]
    e = np.exp(logits - logits.max(1, keepdims=True))
    g = e / e.sum(1, keepdims=True) * y.sum(1, keepdims=True) - y
    grads = [None] * len(params)
    for k in range(len(params) - 1, -1, -1):
        grads[k] = (np.einsum("bi,bj->bij", acts[k], g), g)
        if k:
            g = (g @ params[k][0].T) * (pre[k - 1] > 0)
    return grads


def example_loss(params, x, y):
    return mlp_loss(params, x[None], y[None])


def check_and_time():
    rng = np.random.default_rng(0)
    jax, jnp = maybe_jax()
    out = []

    x = rng.standard_normal(1000)
    np.testing.assert_allclose(fnp.sin(x), np.sin(x), rtol=1e-15)
    rows = [("numpy", median_time(lambda: np.sin(x))),
            ("functrans.numpy (eager)", median_time(lambda: fnp.sin(x)))]
    if jax:
        xj = jnp.asarray(x)
        rows.append(("jax.numpy (eager)", median_time(lambda: jnp.sin(xj).block_until_ready())))
    out.append(table("sin of 1,000 float64 (one eager call)", rows, "numpy"))

    g = ft.grad(f_small)
    np.testing.assert_allclose(g(x), f_small_grad_numpy(x), rtol=1e-12)
    rows = [("numpy (hand-written)", median_time(lambda: f_small_grad_numpy(x))),
            ("functrans grad (eager)", median_time(lambda: g(x)))]
    if jax:
        jg = jax.grad(lambda v: jnp.sum(jnp.sin(v) * v * v + jnp.tanh(v)))
        rows.append(("jax grad (eager)", median_time(lambda: jg(x).block_until_ready())))
    out.append(table("grad of sum(sin(x)*x*x + tanh(x)), 1,000 float64", rows,
                     "numpy (hand-written)"))

    params = init_mlp([784, 512, 512, 10], np.float32)
    xb = rng.standard_normal((128, 784)).astype(np.float32)
    yb = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)]
    vg = ft.value_and_grad(mlp_loss)
    loss, grads = vg(params, xb, yb)
    loss_np, grads_np = mlp_value_and_grad_numpy(params, xb, yb)
    np.testing.assert_allclose(loss, loss_np, rtol=1e-5)
    for (gw, gb), (nw, nb) in zip(grads, grads_np):
        np.testing.assert_allclose(gw, nw, rtol=2e-3, atol=2e-5)
        np.testing.assert_allclose(gb, nb, rtol=2e-3, atol=2e-5)
    rows = [("numpy (hand-written backprop)",
             median_time(lambda: mlp_value_and_grad_numpy(params, xb, yb))),
            ("functrans value_and_grad (eager)", median_time(lambda: vg(params, xb, yb)))]
    out.append(table("value_and_grad of MLP 784-512-512-10 loss, batch 128, float32", rows,
                     "numpy (hand-written backprop)"))

    small = init_mlp([64, 64, 10], np.float32, seed=1)
    xs = rng.standard_normal((256, 64)).astype(np.float32)
    ys = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 256)]
    per_ex = ft.vmap(ft.grad(example_loss), in_axes=(None, 0, 0))
    got = per_ex(small, xs, ys)
    want = per_example_grads_numpy(small, xs, ys)
    for (gw, gb), (nw, nb) in zip(got, want):
        np.testing.assert_allclose(gw, nw, rtol=2e-3, atol=1e-5)
        np.testing.assert_allclose(gb, nb, rtol=2e-3, atol=1e-5)
    loop_grad = ft.grad(example_loss)
    per_ex_jit = ft.jit(per_ex)
    for (gw, gb), (nw, nb) in zip(per_ex_jit(small, xs, ys), want):
        np.testing.assert_allclose(gw, nw, rtol=2e-3, atol=1e-5)
    rows = [("numpy (hand-written, einsum)",
             median_time(lambda: per_example_grads_numpy(small, xs, ys))),
            ("functrans vmap(grad) (eager)", median_time(lambda: per_ex(small, xs, ys))),
            ("functrans jit(vmap(grad))", median_time(lambda: per_ex_jit(small, xs, ys))),
            ("functrans loop of grad (eager)",
             median_time(lambda: [loop_grad(small, xs[i], ys[i]) for i in range(256)],
                         repeat=3, warmup=1))]
    out.append(table("per-example grads, MLP 64-64-10, batch 256, float32", rows,
                     "numpy (hand-written, einsum)"))
    return "\n".join(out)


if __name__ == "__main__":
    import bench_autodiff  # by name: the JAX peer process imports it so
    print(run(bench_autodiff))
