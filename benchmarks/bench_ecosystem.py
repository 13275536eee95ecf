"""JAX's libraries' programs, unchanged, on functrans (``python -m functrans.as_jax``) against
JAX, each framework in its own fresh process.

Each program is one JAX script: a jitted training step of a library's model, called until
its first compiled result (``block_until_ready``), then timed at steady state (median of
blocked steps). functrans runs it with the pinned libraries the tests install
(tests/ecosystem.py); JAX runs it with ``--jax-python`` (default: the
``FUNCTRANS_BENCH_JAX_PYTHON`` environment variable), whose environment must have the same
libraries installed. Programs whose library a framework cannot import show the error.

    python benchmarks/bench_ecosystem.py [--programs optax_mlp,equinox_mlp,flax_cnn,nnx_mlp]
        [--steps 50] [--rounds 1] [--busy] [--jax-python PATH]

With ``--rounds R`` the two frameworks alternate R times per program (a shared machine's
speed drifts over minutes) and each column is the median of the rounds' figures, with the
rounds' range of step medians after the ratio. The ratio is the median of the rounds' own
ratios (each functrans process over the JAX process that ran right after it): a slow spell
of the machine then slows both sides of a pair, where the ratio of the two columns' medians
can set one framework's slow round against the other's fast one. ``--busy`` times the steps again with a second
process spinning on one core (a notebook on a laptop, a CI runner) and adds a table of p50,
p90 and max under that load.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
sys.path.insert(0, HERE)
from timing import cpu_name  # noqa: E402

_MARK = "BENCH-ECOSYSTEM-RESULT "

# The flax.nnx MLP step, sized by {inputs}, {hidden} and {batch}.
_NNX = """
        import jax, jax.numpy as jnp, optax
        from flax import nnx

        class MLP(nnx.Module):
            def __init__(self, rngs):
                self.l1 = nnx.Linear({inputs}, {hidden}, rngs=rngs)
                self.l2 = nnx.Linear({hidden}, {hidden}, rngs=rngs)
                self.l3 = nnx.Linear({hidden}, 10, rngs=rngs)

            def __call__(self, x):
                return self.l3(nnx.relu(self.l2(nnx.relu(self.l1(x)))))

        model = MLP(nnx.Rngs(0))
        opt = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
        x = jax.random.normal(jax.random.key(1), ({batch}, {inputs}))
        y = jnp.arange({batch}) % 10

        @nnx.jit
        def train(model, opt):
            def loss_fn(m):
                return optax.softmax_cross_entropy_with_integer_labels(m(x), y).mean()
            loss, g = nnx.value_and_grad(loss_fn)(model)
            opt.update(model, g)
            return loss

        def step(state):
            return state, train(*state)

        state = (model, opt)
    """

# Each program defines `step(state) -> (state, loss)` and `state`; the harness below times it.
PROGRAMS = {
    "optax_mlp": """
        import jax, jax.numpy as jnp, optax
        sizes = [784, 512, 512, 10]
        keys = jax.random.split(jax.random.PRNGKey(0), len(sizes))
        params = [(jax.random.normal(k, (m, n)) * (1 / m) ** 0.5, jnp.zeros(n))
                  for k, m, n in zip(keys, sizes[:-1], sizes[1:])]
        x = jax.random.normal(keys[-1], (128, 784))
        y = jax.nn.one_hot(jnp.arange(128) % 10, 10)

        def loss_fn(p):
            h = x
            for w, b in p[:-1]:
                h = jax.nn.relu(h @ w + b)
            w, b = p[-1]
            return optax.softmax_cross_entropy(h @ w + b, y).mean()

        opt = optax.chain(optax.clip_by_global_norm(1.0),
                          optax.adamw(optax.warmup_cosine_decay_schedule(0.0, 1e-3, 10, 1000)))

        @jax.jit
        def step(state):
            p, s = state
            loss, g = jax.value_and_grad(loss_fn)(p)
            updates, s = opt.update(g, s, p)
            return (optax.apply_updates(p, updates), s), loss

        state = (params, opt.init(params))
    """,
    "equinox_mlp": """
        import jax, jax.numpy as jnp, equinox as eqx, optax
        key = jax.random.PRNGKey(0)
        model = eqx.nn.MLP(64, 10, 256, 3, key=key)
        x = jax.random.normal(key, (128, 64))
        y = jnp.arange(128) % 10
        opt = optax.adam(1e-3)

        @eqx.filter_jit
        def step(state):
            m, s = state
            def loss_fn(m):
                logits = jax.vmap(m)(x)
                return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
            loss, g = eqx.filter_value_and_grad(loss_fn)(m)
            updates, s = opt.update(g, s, eqx.filter(m, eqx.is_array))
            return (eqx.apply_updates(m, updates), s), loss

        state = (model, opt.init(eqx.filter(model, eqx.is_array)))
    """,
    "flax_cnn": """
        import jax, jax.numpy as jnp, flax.linen as nn, optax

        class CNN(nn.Module):
            @nn.compact
            def __call__(self, x):
                x = nn.relu(nn.Conv(16, (3, 3))(x))
                x = nn.avg_pool(x, (2, 2), (2, 2))
                x = nn.relu(nn.Conv(32, (3, 3))(x))
                x = nn.avg_pool(x, (2, 2), (2, 2))
                return nn.Dense(10)(x.reshape(x.shape[0], -1))

        model = CNN()
        x = jax.random.normal(jax.random.PRNGKey(1), (32, 28, 28, 1))
        y = jnp.arange(32) % 10
        params = model.init(jax.random.PRNGKey(0), x)
        opt = optax.sgd(0.05, momentum=0.9)

        @jax.jit
        def step(state):
            p, s = state
            def loss_fn(p):
                logits = model.apply(p, x)
                return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
            loss, g = jax.value_and_grad(loss_fn)(p)
            updates, s = opt.update(g, s, p)
            return (optax.apply_updates(p, updates), s), loss

        state = (params, opt.init(params))
    """,
    "nnx_mlp": _NNX.format(inputs=784, hidden=512, batch=128),
    # The nnx step at sizes where compute is negligible: its time is the per-call overhead
    # (nnx's graph traversal, the framework's dispatch and pytree work), not in the default set.
    "nnx_overhead": _NNX.format(inputs=4, hidden=4, batch=2),
}
DEFAULT = ("optax_mlp", "equinox_mlp", "flax_cnn", "nnx_mlp")

HARNESS = """
import json, statistics, subprocess, sys, time
t0 = time.perf_counter()
{program}
state, loss = step(state)
jax.block_until_ready((state, loss))
first = time.perf_counter() - t0
for _ in range(3):
    state, loss = step(state)
jax.block_until_ready(state)
jax.effects_barrier()  # functrans: compiles still running in the background are done

def timed(state):
    times = []
    for _ in range({steps}):
        t = time.perf_counter()
        state, loss = step(state)
        jax.block_until_ready((state, loss))
        times.append(time.perf_counter() - t)
    times.sort()
    return state, loss, times

state, loss, times = timed(state)
result = {{"first": first, "step": statistics.median(times),
           "p90": times[int(0.9 * (len(times) - 1))], "loss": float(loss)}}
if {busy}:  # again, with a second process spinning on one core
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        state, loss, busy = timed(state)
    finally:
        spinner.kill()
        spinner.wait()
    result["busy"] = [statistics.median(busy), busy[int(0.9 * (len(busy) - 1))], busy[-1]]
print("{mark}" + json.dumps(result))
"""


def run_program(name: str, framework: str, steps: int, jax_python: str | None,
                busy: bool = False) -> dict:
    """Time ``name`` in a fresh process of ``framework`` ("functrans" or "jax"); with
    ``busy``, also under a second process spinning on one core."""
    code = HARNESS.format(program=textwrap.dedent(PROGRAMS[name]), steps=steps, mark=_MARK,
                          busy=busy)
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "program.py")
        with open(script, "w") as f:
            f.write(code)
        env = dict(os.environ)
        if framework == "functrans":
            from ecosystem import library_dir
            env["PYTHONPATH"] = os.pathsep.join([library_dir()] + sys.path)
            env["FUNCTRANS_CACHE_DIR"] = os.path.join(tmp, "cache")  # cold: an empty cache
            cmd = [sys.executable, "-m", "functrans.as_jax", script]
        else:
            cmd = [jax_python, script]
        run = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True,
                             timeout=900)
    for line in run.stdout.splitlines():
        if line.startswith(_MARK):
            return json.loads(line[len(_MARK):])
    last = (run.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": last[:100]}


def _busy(rows) -> str:
    """The rounds' medians of p50 / p90 / max under load, in ms."""
    return " / ".join(f"{statistics.median(r['busy'][i] for r in rows) * 1e3:.2f}"
                      for i in range(3))


def _median(rows, key):
    return statistics.median(r[key] for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", default=",".join(DEFAULT),
                        help=f"any of {', '.join(PROGRAMS)}")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--busy", action="store_true")
    parser.add_argument("--jax-python", default=os.environ.get("FUNCTRANS_BENCH_JAX_PYTHON"))
    args = parser.parse_args()
    print(f"{cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{args.rounds} round(s) alternating")
    print(f"{'program':<14} {'functrans first':>16} {'JAX first':>10} {'functrans step':>15} "
          f"{'p90':>7} {'JAX step':>10} {'p90':>7} {'step ratio':>11}")
    for name in args.programs.split(","):
        fts, jxs = [], []
        for _ in range(args.rounds):
            fts.append(run_program(name, "functrans", args.steps, None, args.busy))
            jxs.append(run_program(name, "jax", args.steps, args.jax_python, args.busy)
                       if args.jax_python else {"error": "no --jax-python"})
        bad = [r for r in fts if "error" in r]
        if bad:
            print(f"{name:<14} functrans: {bad[0]['error']}")
            continue
        ft = {k: _median(fts, k) for k in ("first", "step", "p90")}
        spread = (f"functrans {min(r['step'] for r in fts) * 1e3:.2f}-"
                  f"{max(r['step'] for r in fts) * 1e3:.2f}ms")
        row = f"{name:<14} {ft['first']:>15.2f}s "
        bad = [r for r in jxs if "error" in r]
        if bad:
            print(row + f"{'-':>10} {ft['step'] * 1e3:>13.2f}ms {ft['p90'] * 1e3:>6.2f}   "
                        f"(JAX: {bad[0]['error']})")
            if args.busy:
                print(f"{'':<14} one core busy, p50 / p90 / max ms: functrans {_busy(fts)}")
            continue
        jx = {k: _median(jxs, k) for k in ("first", "step", "p90")}
        spread += (f", JAX {min(r['step'] for r in jxs) * 1e3:.2f}-"
                   f"{max(r['step'] for r in jxs) * 1e3:.2f}ms")
        ratios = [f["step"] / j["step"] for f, j in zip(fts, jxs)]
        if len(ratios) > 1:
            spread += f"; pair ratios {min(ratios):.2f}-{max(ratios):.2f}"
        print(row + f"{jx['first']:>9.2f}s {ft['step'] * 1e3:>13.2f}ms {ft['p90'] * 1e3:>6.2f} "
              f"{jx['step'] * 1e3:>8.2f}ms {jx['p90'] * 1e3:>6.2f} "
              f"{statistics.median(ratios):>10.2f}x   (loss {fts[-1]['loss']:.4f} / "
              f"{jxs[-1]['loss']:.4f}; rounds: {spread})")
        if args.busy:
            print(f"{'':<14} one core busy, p50 / p90 / max ms: functrans {_busy(fts)}, "
                  f"JAX {_busy(jxs)}")


if __name__ == "__main__":
    main()
