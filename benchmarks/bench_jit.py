"""jit benchmarks: functrans vs NumPy eager (same process), and vs JAX's jit when installed.

1. fused sum(tanh(x)*sin(x) + x*x*0.5), 4M float32
2. maximum(A @ B + 1, 0), 512x512 float32
3. jit(value_and_grad(loss)) MLP step 784-512-512-10, batch 128, float32
4. dispatch of jit(lambda x: x + 1) on a Python float, NumPy scalars, 0-d arrays, and of a
   small function on a mixed pytree vs the same leaves passed positionally
5. cold first call of the MLP step (trace + compile) in a fresh process, then a second
   process with a warm disk cache
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np

import functrans as ft
import functrans.numpy as fnp
from functrans.transforms.lowering import blas_library

try:
    from .bench_autodiff import init_mlp, make_mlp_loss, mlp_loss, mlp_value_and_grad_numpy
    from .timing import fmt, maybe_jax, median_time, run, table
except ImportError:  # run as a script
    from bench_autodiff import init_mlp, make_mlp_loss, mlp_loss, mlp_value_and_grad_numpy
    from timing import fmt, maybe_jax, median_time, run, table


def fused(x):
    return fnp.sum(fnp.tanh(x) * fnp.sin(x) + x * x * 0.5)


def relu_matmul(a, b):
    return fnp.maximum(a @ b + 1.0, 0.0)


def check_and_time():
    rng = np.random.default_rng(0)
    jax, jnp = maybe_jax()
    out = []

    x = rng.standard_normal(4 * 1024 * 1024).astype(np.float32)
    f = ft.jit(fused)
    want = np.sum(np.tanh(x) * np.sin(x) + x * x * np.float32(0.5), dtype=np.float64)
    assert abs(float(f(x)) - want) <= 1e-5 * abs(want)
    rows = [("numpy eager", median_time(lambda: np.sum(np.tanh(x) * np.sin(x) + x * x * 0.5))),
            ("functrans jit", median_time(lambda: f(x)))]
    if jax:
        jf = jax.jit(lambda v: jnp.sum(jnp.tanh(v) * jnp.sin(v) + v * v * 0.5))
        xj = jnp.asarray(x)
        rows.append(("jax jit", median_time(lambda: jf(xj).block_until_ready())))
    out.append(table("sum(tanh(x)*sin(x) + x*x*0.5), 4M float32", rows, "numpy eager"))

    a = rng.standard_normal((512, 512)).astype(np.float32)
    b = rng.standard_normal((512, 512)).astype(np.float32)
    g = ft.jit(relu_matmul)
    np.testing.assert_allclose(g(a, b), np.maximum(a @ b + 1, 0), rtol=1e-4, atol=1e-3)
    rows = [("numpy eager", median_time(lambda: np.maximum(a @ b + 1.0, 0.0))),
            ("functrans jit", median_time(lambda: g(a, b)))]
    if jax:
        jg = jax.jit(lambda p, q: jnp.maximum(p @ q + 1.0, 0.0))
        aj, bj = jnp.asarray(a), jnp.asarray(b)
        rows.append(("jax jit", median_time(lambda: jg(aj, bj).block_until_ready())))
    out.append(table("maximum(A @ B + 1, 0), 512x512 float32", rows, "numpy eager"))
    mm = ft.jit(lambda p, q: p @ q)
    flops = 2 * 512 ** 3 / 1e9
    t_np, t_jit = median_time(lambda: a @ b), median_time(lambda: mm(a, b))
    core = blas_library.info().get("float32_core")
    out.append(f"\nsgemm 512x512 float32, GFLOP/s (jit's float32 BLAS core: {core}; NumPy's: "
               f"{blas_library.NUMPY.core() if blas_library.NUMPY else None})\n"
               f"  numpy  {flops / t_np:8.0f}\n  jit    {flops / t_jit:8.0f}   "
               f"{t_jit / t_np:.2f}x of numpy's time")

    params = init_mlp([784, 512, 512, 10], np.float32)
    xb = rng.standard_normal((128, 784)).astype(np.float32)
    yb = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)]
    step = ft.jit(ft.value_and_grad(mlp_loss))
    loss, grads = step(params, xb, yb)
    loss_np, _ = mlp_value_and_grad_numpy(params, xb, yb)
    np.testing.assert_allclose(loss, loss_np, rtol=1e-4)
    pa = [(fnp.asarray(w), fnp.asarray(b)) for w, b in params]
    rows = [("numpy (hand-written backprop)",
             median_time(lambda: mlp_value_and_grad_numpy(params, xb, yb))),
            ("functrans jit(value_and_grad)", median_time(lambda: step(pa, xb, yb)))]
    if jax:
        jloss = make_mlp_loss(jnp, jax.scipy.special.logsumexp)
        jstep = jax.jit(jax.value_and_grad(jloss))
        pj = [(jnp.asarray(w), jnp.asarray(bb)) for w, bb in params]
        xj, yj = jnp.asarray(xb), jnp.asarray(yb)
        rows.append(("jax jit(value_and_grad)",
                     median_time(lambda: jax.block_until_ready(jstep(pj, xj, yj)))))
    out.append(table("MLP 784-512-512-10 training step (loss + grads), batch 128, float32",
                     rows, "numpy (hand-written backprop)"))

    inc = ft.jit(lambda v: v + 1)
    inc(1.0)
    rows = [("python (lambda)", median_time(lambda: (lambda v: v + 1)(1.0))),
            ("functrans jit", median_time(lambda: inc(1.0)))]
    if jax:
        jinc = jax.jit(lambda v: v + 1)
        jinc(1.0)
        rows.append(("jax jit", median_time(lambda: jinc(1.0).block_until_ready())))
    out.append(table("dispatch of jit(lambda x: x + 1) on a Python float", rows,
                     "functrans jit"))
    out.append(dispatch_rows(inc, jax, jnp))

    cold, warm = cold_and_warm_start()
    out.append(f"\nMLP training step in a new process: first result / kernel ready\n"
               f"  cold (empty disk cache)  {fmt(cold[0]):>10} / {fmt(cold[1]):>10}\n"
               f"  warm (disk cache)        {fmt(warm[0]):>10} / {fmt(warm[1]):>10}")
    return "\n".join(out)


def dispatch_rows(inc, jax, jnp):
    """Dispatch of the same jitted function on other argument kinds (ratios to the Python
    float), and of a pytree against the same leaves passed positionally."""
    args = {"Python float": 1.0, "NumPy float32 scalar": np.float32(1.0),
            "NumPy float64 scalar (a reduction's result)": np.sum(np.ones(3)),
            "0-d functrans Array": fnp.asarray(1.0), "0-d NumPy array": np.array(1.0)}
    rows = []
    for label, a in args.items():
        np.testing.assert_array_equal(inc(a), np.asarray(a) + 1)
        rows.append((f"functrans jit, {label}", median_time(lambda a=a: inc(a))))
    if jax:
        jinc = jax.jit(lambda v: v + 1)
        for label, a in [("0-d jax Array", jnp.asarray(1.0)),
                         ("NumPy float32 scalar", np.float32(1.0))]:
            jinc(a)
            rows.append((f"jax jit, {label}",
                         median_time(lambda a=a: jinc(a).block_until_ready())))
    lines = [table("dispatch of jit(lambda x: x + 1) by argument kind", rows,
                   "functrans jit, Python float")]

    tree = {"w": fnp.ones(3), "b": (np.float32(2.0), 1.0)}
    on_tree = ft.jit(lambda t: t["w"] * t["b"][0] + t["b"][1])
    positional = ft.jit(lambda w, s, c: w * s + c)
    np.testing.assert_array_equal(on_tree(tree), positional(tree["w"], *tree["b"]))
    rows = [("functrans jit, positional leaves",
             median_time(lambda: positional(tree["w"], *tree["b"]))),
            ("functrans jit, dict/tuple pytree", median_time(lambda: on_tree(tree)))]
    if jax:
        jtree = {"w": jnp.ones(3), "b": (jnp.float32(2.0), 1.0)}
        jon_tree = jax.jit(lambda t: t["w"] * t["b"][0] + t["b"][1])
        jon_tree(jtree)
        rows.append(("jax jit, dict/tuple pytree",
                     median_time(lambda: jon_tree(jtree).block_until_ready())))
    lines.append(table("dispatch of w * s + c on a mixed pytree {w: f64[3], b: (f32, float)}",
                       rows, "functrans jit, positional leaves"))
    return "\n".join(lines)


_CHILD = textwrap.dedent("""
    import time
    t0 = time.perf_counter()
    import numpy as np, functrans as ft
    import sys; sys.path.insert(0, {here!r})
    from bench_autodiff import init_mlp, mlp_loss
    rng = np.random.default_rng(0)
    params = init_mlp([784, 512, 512, 10], np.float32)
    xb = rng.standard_normal((128, 784)).astype(np.float32)
    yb = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)]
    t1 = time.perf_counter()
    first = ft.jit(ft.value_and_grad(mlp_loss))(params, xb, yb)
    t2 = time.perf_counter()
    ft.block_until_ready(first)
    print(t2 - t1, time.perf_counter() - t1)
""")


def cold_and_warm_start():
    """Seconds for the first MLP step in a fresh process, with an empty then a warm cache:
    ``[(first result, kernel ready), ...]`` (tiered jit, the default: the first result comes
    from the interpreter while the kernel compiles or loads)."""
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, FUNCTRANS_CACHE_DIR=cache)
        times = []
        for _ in range(2):
            r = subprocess.run([sys.executable, "-c", _CHILD.format(here=here)], env=env,
                               capture_output=True, text=True, check=True)
            times.append(tuple(map(float, r.stdout.strip().splitlines()[-1].split())))
    return times[0], times[1]


if __name__ == "__main__":
    import bench_jit  # by name: the JAX peer process imports it so
    print(run(bench_jit))
