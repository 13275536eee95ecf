"""A training step against the machine's peak: the MLP's ``value_and_grad`` (784-512-512-10,
batch 128, float32: 411 MFLOP) as a share of this machine's float32 product peak, and the
optax-style step (global-norm clipping and adamw over its six parameter arrays) against that
``value_and_grad`` alone. Peak, gradient and step are timed in the same run, alternating, so
drift on a shared machine touches them alike; medians and p90 over the rounds.

    python benchmarks/bench_training.py [--rounds 7] [--steps 100]

The peak is jit's 1024x1024x1024 float32 product (the same BLAS, the same threads) and, for
reference, NumPy's. FLOPs count a multiply-add as two.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from timing import cpu_name  # noqa: E402

SIZES = (784, 512, 512, 10)
BATCH = 128


def mlp_flops() -> int:
    """FLOPs of the MLP's value_and_grad: the forward products, the weight gradients (the same
    count) and the gradients of the hidden layers' inputs (not the data's)."""
    layers = list(zip(SIZES[:-1], SIZES[1:]))
    forward = sum(2 * BATCH * m * n for m, n in layers)
    inputs = sum(2 * BATCH * m * n for m, n in layers[1:])
    return 2 * forward + inputs


def _programs():
    import functrans as ft
    import functrans.numpy as fnp
    rng = np.random.default_rng(0)
    params = [((rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
               np.zeros(n, np.float32)) for m, n in zip(SIZES[:-1], SIZES[1:])]
    params = ft.device_put(params)  # Arrays, as a training loop holds them
    x = ft.device_put(rng.standard_normal((BATCH, SIZES[0])).astype(np.float32))
    y = ft.device_put(np.eye(SIZES[-1], dtype=np.float32)[np.arange(BATCH) % SIZES[-1]])

    def loss(p, x, y):
        h = x
        for w, b in p[:-1]:
            h = ft.nn.relu(h @ w + b)
        w, b = p[-1]
        return -(ft.nn.log_softmax(h @ w + b) * y).sum(-1).mean()

    def adamw(p, g, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=1e-4):
        norm = fnp.sqrt(sum((gi ** 2).sum() for gi in ft.tree_util.tree_leaves(g)))
        scale = fnp.minimum(1.0, 1.0 / norm)  # clip_by_global_norm(1.0)
        g = ft.tree_util.tree_map(lambda gi: gi * scale, g)
        m = ft.tree_util.tree_map(lambda mi, gi: b1 * mi + (1 - b1) * gi, m, g)
        v = ft.tree_util.tree_map(lambda vi, gi: b2 * vi + (1 - b2) * gi * gi, v, g)
        c1, c2 = 1 - b1 ** t, 1 - b2 ** t
        p = ft.tree_util.tree_map(
            lambda pi, mi, vi: pi - lr * ((mi / c1) / (fnp.sqrt(vi / c2) + eps) + wd * pi),
            p, m, v)
        return p, m, v

    grad = ft.jit(ft.value_and_grad(loss))
    assert all(leaf.dtype == np.float32 for leaf in ft.tree_util.tree_leaves(params))

    @ft.jit
    def step(p, m, v, t):
        value, g = ft.value_and_grad(loss)(p, x, y)
        p, m, v = adamw(p, g, m, v, t)
        return p, m, v, t + 1, value

    zeros = ft.tree_util.tree_map(fnp.zeros_like, params)
    a = rng.standard_normal((1024, 1024)).astype(np.float32)
    b = rng.standard_normal((1024, 1024)).astype(np.float32)
    fa, fb = ft.device_put(a), ft.device_put(b)
    product = ft.jit(lambda a, b: a @ b)
    state = [params, zeros, zeros, ft.device_put(np.float32(1))]

    def run_step():
        state[:4] = step(*state[:4])[:4]
        return state[0]

    return {
        "jit 1024^3 product": (lambda: product(fa, fb), 2 * 1024 ** 3),
        "NumPy 1024^3 product": (lambda: a @ b, 2 * 1024 ** 3),
        "MLP value_and_grad": (lambda: grad(params, x, y), mlp_flops()),
        "step: value_and_grad + clip + adamw": (run_step, None),
    }


def _time(fn, steps) -> list:
    out = []
    for _ in range(steps):
        t = time.perf_counter()
        r = fn()
        for leaf in (r if isinstance(r, (list, tuple)) else [r]):
            for x in (leaf if isinstance(leaf, (list, tuple)) else [leaf]):
                if hasattr(x, "block_until_ready"):
                    x.block_until_ready()
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    progs = _programs()
    for fn, _ in progs.values():  # compile and warm
        _time(fn, 5)
    medians = {k: [] for k in progs}
    p90s = {k: [] for k in progs}
    for _ in range(args.rounds):
        for name, (fn, _) in progs.items():
            ts = sorted(_time(fn, args.steps))
            medians[name].append(statistics.median(ts))
            p90s[name].append(ts[int(0.9 * (len(ts) - 1))])
    print(f"{cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{args.rounds} rounds of {args.steps} calls, alternating")
    med = {k: statistics.median(v) for k, v in medians.items()}
    peak = 2 * 1024 ** 3 / med["jit 1024^3 product"]
    print(f"{'program':<38} {'median':>10} {'p90':>10} {'GFLOP/s':>8} {'of peak':>8}")
    for name, (_, flops) in progs.items():
        rate = f"{flops / med[name] / 1e9:8.1f} {flops / med[name] / peak:8.0%}" if flops else ""
        print(f"{name:<38} {med[name] * 1e3:8.3f}ms {statistics.median(p90s[name]) * 1e3:8.3f}ms "
              f"{rate}")
    ratio = med["step: value_and_grad + clip + adamw"] / med["MLP value_and_grad"]
    print(f"peak = jit's 1024^3 product, {peak / 1e9:.1f} GFLOP/s; MLP value_and_grad "
          f"{mlp_flops() / 1e6:.1f} MFLOP; step / value_and_grad = {ratio:.2f}x")


if __name__ == "__main__":
    main()
