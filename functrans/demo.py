"""The functrans demo: ``python -m functrans.demo``.

A small model written with functrans.numpy: its jaxpr, its value, its gradient (checked
against finite differences), per-example gradients with vmap, and the same training step
compiled with jit (with the speedup measured).
"""
from __future__ import annotations

import time

import numpy as np

import functrans as ft
import functrans.numpy as fnp
from functrans import lax


def predict(params, x):
    """A two-layer tanh network."""
    (w1, b1), (w2, b2) = params
    return fnp.tanh(x @ w1 + b1) @ w2 + b2


def loss(params, x, y):
    return fnp.mean((predict(params, x) - y) ** 2)


def train(params, x, y, steps, lr=0.1):
    """Gradient descent as one staged loop (a scan over the steps)."""
    def step(p, _):
        value, grads = ft.value_and_grad(loss)(p, x, y)
        return ft.tree_util.tree_map(lambda a, g: a - lr * g, p, grads), value
    return lax.scan(step, params, None, length=steps)


def main() -> None:
    rng = np.random.default_rng(0)
    params = [(rng.standard_normal((4, 8)).astype("float32") * 0.5, np.zeros(8, "float32")),
              (rng.standard_normal((8, 1)).astype("float32") * 0.5, np.zeros(1, "float32"))]
    x = rng.standard_normal((64, 4)).astype("float32")
    y = np.sin(x.sum(1, keepdims=True)).astype("float32")

    print("def loss(params, x, y):\n    return fnp.mean((predict(params, x) - y) ** 2)\n")
    print("jaxpr of loss:")
    print(ft.make_jaxpr(loss)(params, x, y))
    print("\nloss:", loss(params, x, y))

    grads = ft.grad(loss)(params, x, y)
    print("grad w.r.t. the first bias:", np.round(np.asarray(grads[0][1]), 4))
    ft.testing.check_grads(lambda b: loss([(params[0][0], b), params[1]], x, y),
                           (params[0][1],), order=2)
    print("  (checked against finite differences, up to second order)")

    per_example = ft.vmap(ft.grad(loss), in_axes=(None, 0, 0))(params, x[:, None], y[:, None])
    print("per-example gradient shapes (vmap of grad):",
          [tuple(g.shape) for g in ft.tree_util.tree_leaves(per_example)])

    fast_train = ft.jit(train, static_argnums=3)
    t0 = time.perf_counter()
    trained, losses = fast_train(params, x, y, 200)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    fast_train(params, x, y, 200)
    jit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    train(params, x, y, 200)
    eager_s = time.perf_counter() - t0
    print(f"\n200 training steps: loss {float(losses[0]):.4f} -> {float(losses[-1]):.4f}")
    print(f"  eager {eager_s * 1e3:.1f} ms, jit {jit_s * 1e3:.2f} ms "
          f"({eager_s / jit_s:.0f}x faster; first call incl. compile {compile_s:.2f} s)")


if __name__ == "__main__":
    main()
