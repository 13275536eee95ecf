"""Step times on a quiet and on a busy machine: the 2-block transformer training step
(``models.transformer_step``: d=128, seq 64, batch 8, ``jit(value_and_grad)`` + SGD), 60
steps after warm-up, each blocked, first with nothing else running, then with a second
process spinning on one core (``while True: pass``). Prints p50, p90 and max in ms.

    python benchmarks/bench_busy.py [--steps 60] [--program transformer-2] [--framework jax]

``--framework jax`` runs the same program on JAX (run it with a Python that has JAX; in its
own process, as its idle threads slow BLAS down), so both are measured under the same load.

A notebook on a laptop, a CI runner or a shared server is a busy machine: a step made of many
short parallel regions waits for whichever thread the OS descheduled, so the tail (p90, max)
is what to watch there, not the median.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import models  # noqa: E402


def _block(tree, m):
    for leaf in m.tree_leaves(tree):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()


def _steps(prog, m, n):
    args, times = prog.args, []
    for _ in range(n):
        t = time.perf_counter()
        out = prog.fn(*args)
        _block(out, m)
        times.append(time.perf_counter() - t)
        args = prog.advance(args, out)
    return np.array(times) * 1e3


def _row(label, t):
    return (f"  {label:28s} p50 {np.percentile(t, 50):7.2f}   p90 {np.percentile(t, 90):7.2f}"
            f"   max {t.max():7.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--program", default="transformer-2")
    ap.add_argument("--framework", default="functrans", choices=("functrans", "jax"))
    a = ap.parse_args(argv)
    m = models.namespace(a.framework)
    prog = models.build(m, a.program)
    _steps(prog, m, 10)  # compile and warm up
    print(f"{a.framework}: {a.program}, {a.steps} steps, ms")
    print(_row("quiet", _steps(prog, m, a.steps)))
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        print(_row("one core busy", _steps(prog, m, a.steps)))
    finally:
        spinner.kill()
        spinner.wait()


if __name__ == "__main__":
    main()
