"""First-call latency of jit, each run in a fresh process, with the time split by phase.

Modes: ``cold`` (empty kernel cache directory, ``FUNCTRANS_JIT_TIERED=0``: the first call
compiles before it returns), ``warm`` (a second such process on the same directory: Numba
loads the machine code it cached), ``tiered`` and ``tiered warm`` (the default: the first call
runs on the interpreter while the kernel compiles, or loads, in the background; "kernel ready"
is when ``block_until_ready`` on the first result returns). Programs: the MLP
``value_and_grad`` step of bench_jit.py, a one-line elementwise function, the scan RNN's
``value_and_grad`` (100 steps) of bench_control_flow.py, and with ``--large`` four
``random.normal`` draws (a PRNG-heavy kernel).
JAX's first call of the same programs (its own fresh process) is shown when it is installed.

Phases (CPU seconds of the calling process, medians over ``--repeat`` runs): trace, jit's IR
passes, native code generation and compiling (LLVM, or loading from the disk cache; a
worker process's share of the compile is not this process's CPU), and for equations left to
Numba its source generation, module import, type inference, lowering and LLVM (time under
llvmlite's lock, which native compiles take too).

    python benchmarks/bench_first_call.py [--repeat 3] [--large]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

_CHILD = textwrap.dedent("""
    import json, sys, time
    clock = time.process_time
    t0, w0 = clock(), time.perf_counter()
    import numpy as np, functrans as ft, functrans.numpy as fnp
    from functrans import random
    from numba.core import event
    from functrans.transforms.jit import api, executable
    from functrans.transforms.lowering import compile as cm
    phases = {"import functrans": clock() - t0}

    def timed(module, attr, label):
        f = getattr(module, attr)
        def g(*a, **k):
            t = clock()
            try:
                return f(*a, **k)
            finally:
                phases[label] = phases.get(label, 0.0) + clock() - t
        setattr(module, attr, g)

    timed(api, "trace_to_jaxpr", "trace")
    timed(executable, "optimize", "IR passes")
    from functrans.transforms.native import program as native_program
    timed(native_program.NativeProgram, "__init__", "native code generation")
    timed(native_program.NativeProgram, "compile", "native compile/load (LLVM)")
    timed(cm, "emit_kernel", "numba: source generation")
    timed(cm, "load_kernel", "numba: module import")
    timed(cm.Kernel, "_first_call", "numba compile/load + run")

    class Numba(event.Listener):
        starts = {}
        def on_start(self, ev):
            self.starts[(ev.kind, id(ev.data))] = clock()
        def on_end(self, ev):
            t = clock() - self.starts.pop((ev.kind, id(ev.data)), clock())
            if ev.kind == "numba:llvm_lock":
                label = "  numba: LLVM"
            elif "nopython_type_inference" in str(ev.data.get("name", "")):
                label = "  numba: type inference"
            elif "native_lowering" in str(ev.data.get("name", "")):
                label = "  numba: lowering"
            else:
                return
            phases[label] = phases.get(label, 0.0) + t
    listener = Numba()
    for kind in ("numba:llvm_lock", "numba:run_pass"):
        event.register(kind, listener)

    program = sys.argv[1]
    sys.path.insert(0, sys.argv[2])
    if program == "mlp":
        from bench_autodiff import init_mlp, mlp_loss
        rng = np.random.default_rng(0)
        params = init_mlp([784, 512, 512, 10], np.float32)
        xb = rng.standard_normal((128, 784)).astype(np.float32)
        yb = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)]
        fun, args = ft.jit(ft.value_and_grad(mlp_loss)), (params, xb, yb)
    elif program == "elementwise":
        fun, args = ft.jit(lambda x: fnp.sin(x) * 2.0 + 1.0), (np.ones(1000, np.float32),)
    elif program == "rnn":
        from bench_control_flow import rnn_loss
        rng = np.random.default_rng(0)
        params = tuple((rng.standard_normal(s) / 8).astype(np.float32)
                       for s in [(64, 64), (32, 64), (64, 32)])
        seqs = [rng.standard_normal((100, 32)).astype(np.float32) for _ in range(2)]
        fun, args = ft.jit(ft.value_and_grad(rnn_loss)), (params, *seqs)
    else:
        def normal4(key):
            return sum(random.normal(k, (100,)) for k in random.split(key, 4))
        fun, args = ft.jit(normal4), (random.PRNGKey(0),)
    t, w = clock(), time.perf_counter()
    first = fun(*args)
    phases["first call (total)"] = clock() - t
    phases["first call (wall)"] = time.perf_counter() - w
    ft.block_until_ready(first)
    phases["kernel ready (wall)"] = time.perf_counter() - w
    with ft.config.override(disable_jit=True):  # the result is checked against eager
        want = fun(*args)
    for a, b in zip(ft.tree.leaves(fun(*args)), ft.tree.leaves(want)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    print(json.dumps(phases))
""")

_JAX_CHILD = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import jax, jax.numpy as jnp
    jax.config.update("jax_platforms", "cpu")
    program = sys.argv[1]
    sys.path.insert(0, sys.argv[2])
    if program == "mlp":
        from bench_autodiff import init_mlp, make_mlp_loss
        rng = np.random.default_rng(0)
        params = [(jnp.asarray(w), jnp.asarray(b))
                  for w, b in init_mlp([784, 512, 512, 10], np.float32)]
        xb = jnp.asarray(rng.standard_normal((128, 784)).astype(np.float32))
        yb = jnp.asarray(np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)])
        loss = make_mlp_loss(jnp, jax.scipy.special.logsumexp)
        fun, args = jax.jit(jax.value_and_grad(loss)), (params, xb, yb)
    elif program == "elementwise":
        fun, args = jax.jit(lambda x: jnp.sin(x) * 2.0 + 1.0), (jnp.ones(1000, jnp.float32),)
    elif program == "rnn":
        rng = np.random.default_rng(0)
        w, u, v = (jnp.asarray((rng.standard_normal(s) / 8).astype(np.float32))
                   for s in [(64, 64), (32, 64), (64, 32)])
        xs, ys = (jnp.asarray(rng.standard_normal((100, 32)).astype(np.float32))
                  for _ in range(2))

        def loss(p, xs, ys):
            def step(h, xy):
                h = jnp.tanh(h @ p[0] + xy[0] @ p[1])
                return h, jnp.sum((h @ p[2] - xy[1]) ** 2)
            return jnp.mean(jax.lax.scan(step, jnp.zeros(64, jnp.float32), (xs, ys))[1])
        fun, args = jax.jit(jax.value_and_grad(loss)), ((w, u, v), xs, ys)
    else:
        def normal4(key):
            return sum(jax.random.normal(k, (100,)) for k in jax.random.split(key, 4))
        fun, args = jax.jit(normal4), (jax.random.PRNGKey(0),)
    t, w = time.process_time(), time.perf_counter()
    jax.block_until_ready(fun(*args))
    wall = time.perf_counter() - w
    print(json.dumps({"first call (total)": time.process_time() - t,
                      "first call (wall)": wall, "kernel ready (wall)": wall}))
""")


def _run(code, program, env):
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run([sys.executable, "-c", code, program, here], env=env,
                       capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{program}: child process failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def measure(program, repeat):
    """{mode: {phase: median seconds}} for one program."""
    runs = {"cold": [], "warm": [], "tiered": [], "tiered warm": [], "jax": []}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, FUNCTRANS_CACHE_DIR=cache, FUNCTRANS_JIT_TIERED="0")
            runs["cold"].append(_run(_CHILD, program, env))
            runs["warm"].append(_run(_CHILD, program, env))
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, FUNCTRANS_CACHE_DIR=cache, FUNCTRANS_JIT_TIERED="1")
            runs["tiered"].append(_run(_CHILD, program, env))
            runs["tiered warm"].append(_run(_CHILD, program, env))
        try:
            runs["jax"].append(_run(_JAX_CHILD, program, dict(os.environ)))
        except RuntimeError:  # JAX not installed
            pass
    return {mode: {k: statistics.median(r.get(k, 0.0) for r in rs) for k in rs[0]}
            for mode, rs in runs.items() if rs}


def report(program, result):
    modes = list(result)
    phases = []
    for mode in modes:
        phases += [k for k in result[mode] if k not in phases]
    lines = [f"\n{program}: first call in a fresh process (seconds, CPU unless wall; medians)",
             f"  {'phase':28}" + "".join(f"{m:>12}" for m in modes)]
    for k in phases:
        lines.append(f"  {k:28}" + "".join(
            f"{result[m][k]:12.3f}" if k in result[m] else f"{'-':>12}" for m in modes))
    total = result["cold"]["first call (wall)"]
    lines.append("  first call (wall), ratios to cold: " + ", ".join(
        f"{m} {result[m]['first call (wall)'] / total:.2f}x" for m in modes if m != "cold"))
    return "\n".join(lines)


def check_and_time(repeat=3, large=False):
    programs = ["mlp", "elementwise", "rnn"] + (["normal4"] if large else [])
    return "\n".join(report(p, measure(p, repeat)) for p in programs)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--large", action="store_true")
    opts = parser.parse_args()
    print(check_and_time(opts.repeat, opts.large))
