"""Micro benchmark of the fast-math layer used by jit lowering.

Prints median wall times (ms) side by side: NumPy eager, a Numba loop with Numba's own math,
and Numba loops with the fast-math functions on the libmvec and portable routes (and with
``prange``), for

- the fused ``sum(tanh(x) * sin(x) + x * x * 0.5)`` over float32,
- each function alone (``out[i] = f(x[i])``) over float32 and float64,
- the compile time of a generated 20-operation kernel using these functions.

Run: ``python benchmarks/bench_fastmath.py [--size N] [--repeat R]``.
"""
from __future__ import annotations

import argparse
import math
import time

import numba
import numpy as np

from functrans.transforms.lowering import fastmath as fm

try:
    from scipy import special as _sps
except ImportError:  # scipy is a test dependency only
    _sps = None

FUNCS = ("exp", "log", "log1p", "expm1", "tanh", "sin", "cos", "logistic", "erf")
ROUTES = [r for r in ("libmvec", "portable") if r != "libmvec" or fm.libmvec_available()]
BLOCK = 4096


def median_ms(fn, repeat):
    """Median wall time in ms; also kept in LAST_MIN, which is steadier on a shared machine."""
    global LAST_MIN
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    LAST_MIN = 1e3 * min(times)
    return 1e3 * float(np.median(times))


LAST_MIN = math.nan


# -- fused reduction ---------------------------------------------------------------------------

def fused_kernel(tanh, sin, parallel):
    """Blocked reduction: float32 partial sums over full blocks of a fixed length (a known trip
    count lets LLVM interleave the vector loop: about 1.4x faster than a variable bound),
    float64 across blocks, then the remainder."""
    rng = numba.prange if parallel else range

    def fused(x):
        nfull = x.size // BLOCK
        total = 0.0
        for b in rng(nfull):
            xb = x[b * BLOCK:(b + 1) * BLOCK]
            s = np.float32(0)
            for i in range(BLOCK):
                v = xb[i]
                s += tanh(v) * sin(v) + v * v * np.float32(0.5)
            total += np.float64(s)
        s = np.float32(0)
        for i in range(nfull * BLOCK, x.size):
            v = x[i]
            s += tanh(v) * sin(v) + v * v * np.float32(0.5)
        return total + np.float64(s)
    return numba.njit(**fm.kernel_options(parallel=parallel))(fused)


def bench_fused(size, repeat):
    x = np.random.default_rng(0).standard_normal(size).astype(np.float32)
    half = np.float32(0.5)
    rows = [("NumPy eager", lambda: np.sum(np.tanh(x) * np.sin(x) + x * x * half))]
    stock = fused_kernel(fm.get("tanh", "off"), fm.get("sin", "off"), False)
    rows.append(("Numba loop, stock math", lambda: stock(x)))
    for route in ROUTES:
        for par in (False, True):
            k = fused_kernel(fm.get("tanh", route), fm.get("sin", route), par)
            rows.append((f"fastmath {route}{' + prange' if par else ''}", lambda k=k: k(x)))
    xd = x.astype(np.float64)
    ref = np.sum(np.tanh(xd) * np.sin(xd) + xd * xd * 0.5)
    print(f"\nsum(tanh(x)*sin(x) + x*x*0.5), {size} float32, median of {repeat}")
    print(f"  {'variant':32s} {'median':>8s} {'min':>8s} {'rel. error':>11s}")
    for label, fn in rows:
        t = median_ms(fn, repeat)
        err = abs(float(fn()) - ref) / abs(ref)
        print(f"  {label:32s} {t:8.2f} {LAST_MIN:8.2f} {err:11.1e}")


# -- single functions --------------------------------------------------------------------------

def map_kernel(f):
    def apply(x, out):
        for i in range(x.size):
            out[i] = f(x[i])
    return numba.njit(**fm.kernel_options())(apply)


def numpy_eager(name):
    if name == "logistic":
        return _sps.expit if _sps else (lambda x, out: np.divide(1, 1 + np.exp(-x), out=out))
    if name == "erf":
        if _sps is None:
            return None
        return _sps.erf
    return getattr(np, name)


def bench_functions(size, repeat):
    cols = ["NumPy", "stock"] + ROUTES
    for dtype in (np.float32, np.float64):
        x = np.random.default_rng(1).uniform(0.1, 3.0, size).astype(dtype)
        out = np.empty_like(x)
        print(f"\nout[i] = f(x[i]), {size} {np.dtype(dtype).name}, x in [0.1, 3], ms: median"
              f" (min) of {repeat}")
        print("  " + f"{'function':10s}" + "".join(f"{c:>16s}" for c in cols))
        for name in FUNCS:
            row = []
            npf = numpy_eager(name)
            row.append((median_ms(lambda: npf(x, out=out), repeat), LAST_MIN) if npf
                       else (math.nan, math.nan))
            for route in ["off"] + ROUTES:
                k = map_kernel(fm.get(name, route))
                row.append((median_ms(lambda: k(x, out), repeat), LAST_MIN))
            print("  " + f"{name:10s}" + "".join(f"{m:8.2f} ({n:5.2f})" for m, n in row))


# -- compile time ------------------------------------------------------------------------------

def twenty_op_source(seed):
    """A generated-looking kernel: 20 operations, 8 of them fast-math calls."""
    ops = ["exp", "tanh", "sin", "log1p", "erf", "logistic", "cos", "expm1"]
    lines = [f"def kernel_{seed}(x, y, out):", "    for i in range(x.size):",
             "        a = x[i]", "        b = y[i]"]
    names = ["a", "b"]
    for j in range(20):
        u, v = names[-1], names[-2]
        if j % 5 in (0, 2) or j % 5 == 4:
            expr = f"{ops[(j + seed) % len(ops)]}({u} * np.float32(0.25))"
        elif j % 5 == 1:
            expr = f"{u} * {v} + np.float32({0.5 + j})"
        else:
            expr = f"{u} - {v} * np.float32(0.125)"
        lines.append(f"        t{j} = {expr}")
        names.append(f"t{j}")
    lines.append(f"        out[i] = {names[-1]}")
    return "\n".join(lines), f"kernel_{seed}"


def bench_compile():
    print("\ncompile time of a generated 20-op kernel (8 fast-math calls), seconds")
    print(f"  {'route':10s} {'first kernel':>13s} {'next kernels':>13s}")
    x = np.linspace(0.1, 1, 64).astype(np.float32)
    seed = 0
    for route in ["off"] + ROUTES:
        times = []
        for _ in range(3):
            src, name = twenty_op_source(seed)
            seed += 1
            env = dict(fm.functions(route), np=np)
            exec(src, env)
            t0 = time.perf_counter()
            k = numba.njit(**fm.kernel_options())(env[name])
            k(x, x, np.empty_like(x))
            times.append(time.perf_counter() - t0)
        print(f"  {route:10s} {times[0]:13.3f} {np.median(times[1:]):13.3f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=4_000_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    print(f"fast-math routes: libmvec {'found' if fm.libmvec_available() else 'missing'}, "
          f"vector width hint {fm.preferred_vector_width() or 'none'}, "
          f"numba threads {numba.get_num_threads()}")
    bench_compile()  # first, while the helpers are not compiled yet
    bench_fused(args.size, args.repeat)
    bench_functions(args.size, args.repeat)


if __name__ == "__main__":
    main()
