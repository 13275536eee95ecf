"""A training step against the machine's peak: the MLP's ``value_and_grad`` (784-512-512-10,
batch 128, float32: 411 MFLOP) as a share of the float32 product peak, and the step with
global-norm clipping and adamw over its six parameter arrays against that ``value_and_grad``
alone.

One JAX program, run by functrans (``python -m functrans.as_jax``) and, with
``--jax-python``, by JAX, each in its own fresh process. In each, the 1024^3 product, the
gradient and the step are timed alternating over the rounds (drift on a shared machine
touches them alike); each figure is the median of the rounds' medians, with the median of
their p90s. The peak is each framework's own 1024^3 product; "of best peak" divides by the
larger of the two frameworks' peaks (the machine's, as far as either reaches it).

    python benchmarks/bench_training.py [--rounds 7] [--steps 100] [--jax-python PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from timing import cpu_name  # noqa: E402

_MARK = "BENCH-TRAINING-RESULT "
SIZES = (784, 512, 512, 10)
BATCH = 128


def mlp_flops() -> int:
    """FLOPs of the MLP's value_and_grad (a multiply-add counts two): the forward products,
    the weight gradients (as many) and the gradients of the hidden layers' inputs."""
    layers = list(zip(SIZES[:-1], SIZES[1:]))
    forward = sum(2 * BATCH * m * n for m, n in layers)
    return 2 * forward + sum(2 * BATCH * m * n for m, n in layers[1:])


PROGRAM = """
import json, statistics, time
import numpy as np
import jax, jax.numpy as jnp

SIZES, BATCH = {sizes}, {batch}
rng = np.random.default_rng(0)
params = jax.device_put([((rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
                          np.zeros(n, np.float32)) for m, n in zip(SIZES[:-1], SIZES[1:])])
x = jnp.asarray(rng.standard_normal((BATCH, SIZES[0])).astype(np.float32))
y = jnp.asarray(np.eye(SIZES[-1], dtype=np.float32)[np.arange(BATCH) % SIZES[-1]])

def loss(p, x, y):
    h = x
    for w, b in p[:-1]:
        h = jax.nn.relu(h @ w + b)
    w, b = p[-1]
    return -(jax.nn.log_softmax(h @ w + b) * y).sum(-1).mean()

def adamw(p, g, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=1e-4):
    leaves = jax.tree_util.tree_leaves(g)
    scale = jnp.minimum(1.0, 1.0 / jnp.sqrt(sum((gi ** 2).sum() for gi in leaves)))
    g = jax.tree_util.tree_map(lambda gi: gi * scale, g)  # clip_by_global_norm(1.0)
    m = jax.tree_util.tree_map(lambda mi, gi: b1 * mi + (1 - b1) * gi, m, g)
    v = jax.tree_util.tree_map(lambda vi, gi: b2 * vi + (1 - b2) * gi * gi, v, g)
    c1, c2 = 1 - b1 ** t, 1 - b2 ** t
    p = jax.tree_util.tree_map(
        lambda pi, mi, vi: pi - lr * ((mi / c1) / (jnp.sqrt(vi / c2) + eps) + wd * pi), p, m, v)
    return p, m, v

grad = jax.jit(jax.value_and_grad(loss))

@jax.jit
def step(p, m, v, t):
    value, g = jax.value_and_grad(loss)(p, x, y)
    p, m, v = adamw(p, g, m, v, t)
    return p, m, v, t + 1, value

zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
state = [params, zeros, zeros, jnp.float32(1)]
a = jnp.asarray(rng.standard_normal((1024, 1024)).astype(np.float32))
b = jnp.asarray(rng.standard_normal((1024, 1024)).astype(np.float32))
product = jax.jit(lambda a, b: a @ b)

def run_step():
    state[:] = step(*state)[:4]
    return state

programs = {{"product": lambda: product(a, b), "grad": lambda: grad(params, x, y),
             "step": run_step}}
medians = {{k: [] for k in programs}}
p90s = {{k: [] for k in programs}}
for fn in programs.values():
    for _ in range(5):
        jax.block_until_ready(fn())
jax.effects_barrier()  # functrans: compiles still running in the background are done
for _ in range({rounds}):
    for name, fn in programs.items():
        ts = []
        for _ in range({steps}):
            t = time.perf_counter()
            jax.block_until_ready(fn())
            ts.append(time.perf_counter() - t)
        ts.sort()
        medians[name].append(statistics.median(ts))
        p90s[name].append(ts[int(0.9 * (len(ts) - 1))])
print("{mark}" + json.dumps({{k: [statistics.median(medians[k]), statistics.median(p90s[k]),
                                 min(medians[k]), max(medians[k])] for k in programs}}))
"""


def run(framework: str, rounds: int, steps: int, jax_python: str | None) -> dict:
    """The program's figures in a fresh process of ``framework`` ("functrans" or "jax")."""
    code = PROGRAM.format(sizes=SIZES, batch=BATCH, rounds=rounds, steps=steps, mark=_MARK)
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "program.py")
        with open(script, "w") as f:
            f.write(code)
        cmd = ([sys.executable, "-m", "functrans.as_jax", script] if framework == "functrans"
               else [jax_python, script])
        out = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=1800)
    for line in out.stdout.splitlines():
        if line.startswith(_MARK):
            return json.loads(line[len(_MARK):])
    return {"error": (out.stderr.strip().splitlines() or ["no output"])[-1][:120]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--jax-python", default=os.environ.get("FUNCTRANS_BENCH_JAX_PYTHON"))
    args = parser.parse_args()
    results = {"functrans": run("functrans", args.rounds, args.steps, None)}
    if args.jax_python:
        results["JAX"] = run("jax", args.rounds, args.steps, args.jax_python)
    print(f"{cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"{args.rounds} rounds of {args.steps} calls, alternating within each process")
    ok = {k: r for k, r in results.items() if "error" not in r}
    for k, r in results.items():
        if "error" in r:
            print(f"{k}: {r['error']}")
    if not ok:
        return
    best = max(2 * 1024 ** 3 / r["product"][0] for r in ok.values())
    flops = mlp_flops()
    print(f"{'':<10} {'1024^3 product':>22} {'MLP value_and_grad':>30} {'step':>18} "
          f"{'step/grad':>9}")
    for k, r in ok.items():
        peak = 2 * 1024 ** 3 / r["product"][0]
        grad, step = r["grad"], r["step"]
        rate = flops / grad[0]
        print(f"{k:<10} {r['product'][0] * 1e3:7.2f}ms {peak / 1e9:6.1f} GFLOP/s "
              f"{grad[0] * 1e3:6.3f}ms p90 {grad[1] * 1e3:6.3f} {rate / 1e9:5.1f} GF/s "
              f"{rate / peak:4.0%} own {rate / best:4.0%} best  "
              f"{step[0] * 1e3:6.3f}ms p90 {step[1] * 1e3:6.3f} {step[0] / grad[0]:8.2f}x")
    print(f"value_and_grad: {flops / 1e6:.1f} MFLOP; best peak {best / 1e9:.1f} GFLOP/s")
    if len(ok) == 2:
        f, j = ok["functrans"], ok["JAX"]
        print(f"functrans / JAX: grad {f['grad'][0] / j['grad'][0]:.2f}x, "
              f"step {f['step'][0] / j['step'][0]:.2f}x")


if __name__ == "__main__":
    main()
