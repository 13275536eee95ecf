"""Users' Numba kernels inside jit (``numba_call``, ``numba_vectorize``): functrans vs plain
Numba, and vs JAX (``jax.pure_callback`` / ``jnp``) in its own process when installed.

1. call overhead of a tiny kernel (16-element float32 add) inside jit: per call, from a
   program of K = 50 chained kernel steps minus the same program with K = 1, divided by 49;
   against the kernel's own time (the same njit kernel called in an njit loop, measured the
   same way), ``ft.pure_callback`` of it inside jit, and ``jax.pure_callback`` in ``jax.jit``
2. weighted pair counts (jax#3002): N = 20,000 3-D points with weights, 30 distance bins up
   to r_max; one ``prange`` kernel (a histogram per chunk of rows, reduced at the end; a
   per-thread one needs ``numba.get_num_threads()``, see the README) under jit vs
   the same dispatcher called from Python, vs JAX's blocked distances under ``lax.map`` and
   ``segment_sum``
3. a scalar kernel fused into an elementwise chain: ``tanh(k(x) * 2 + 1)``, 1e6 float32,
   ``k`` (softplus; a piecewise huber) a ``numba_vectorize`` function vs the same math in
   ``functrans.numpy`` and in ``jax.numpy``
4. compile: first compiled result of a program with the pair-count kernel in a fresh process
   (empty functrans and Numba caches) vs Numba alone compiling the kernel in a fresh process
   plus the program without the kernel's step

Timings are sampled alternately (the rows of a table timed in one process take turns
sample by sample), so that a busy machine's load spreads over every row; each row gives the
median and the 90th percentile of its samples.
"""
from __future__ import annotations

import gc
import inspect
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numba
import numpy as np
from numba import prange

try:
    from .timing import fmt, maybe_jax, run, table
except ImportError:  # run as a script
    from timing import fmt, maybe_jax, run, table

K_CALLS = 50          # chained kernel steps in the long program
SMALL = 16            # elements of the tiny kernel's arrays
N_POINTS = 20_000
N_BINS = 30
R_MAX = 0.15          # points uniform in the unit cube: about 1.4% of pairs within r_max
JAX_BLOCK = 1000      # rows of the distance matrix per lax.map step
N_VEC = 1_000_000


# --- kernels: plain Python, compiled by Numba (the same dispatchers on every side) --------

def add16(x, y, out):
    for i in range(x.shape[0]):
        out[i] = x[i] + y[i]


def pair_count(pos, w, counts, nbins, rmax):
    n = pos.shape[0]
    chunks = 64  # i strided over the chunks (balances the triangle); a histogram per chunk
    local = np.zeros((chunks, nbins))
    r2max = rmax * rmax
    scale = nbins / rmax
    for c in prange(chunks):
        for i in range(c, n, chunks):
            xi, yi, zi, wi = pos[i, 0], pos[i, 1], pos[i, 2], w[i]
            for j in range(i + 1, n):
                dx = xi - pos[j, 0]
                dy = yi - pos[j, 1]
                dz = zi - pos[j, 2]
                d2 = dx * dx + dy * dy + dz * dz
                if d2 < r2max:
                    b = int(math.sqrt(d2) * scale)
                    if b < nbins:
                        local[c, b] += wi * w[j]
    for c in range(chunks):
        for b in range(nbins):
            counts[b] += local[c, b]


def softplus(x):
    return math.log1p(math.exp(-abs(x))) + max(x, 0.0)


add16_nb = numba.njit(add16)
pair_count_nb = numba.njit(parallel=True)(pair_count)


@numba.njit
def add16_loop(x, y, a, b, k):
    """``k`` chained calls of the tiny kernel, in compiled code (its own time)."""
    a[:] = x
    for _ in range(k):
        add16_nb(a, y, b)
        a, b = b, a
    return a


def host_add16(x, y):
    """The tiny kernel as a host callback (NumPy in, NumPy out; JAX passes buffers that
    Numba types as read-only buffers, not arrays, hence ``np.asarray``)."""
    x, y = np.asarray(x), np.asarray(y)
    out = np.empty_like(x)
    add16_nb(x, y, out)
    return out


# --- timing -------------------------------------------------------------------------------

def _number(fn, target=0.005):
    fn()
    t0 = time.perf_counter()
    fn()
    return max(1, int(target / max(time.perf_counter() - t0, 1e-7)))


def _stats(samples):
    s = sorted(samples)
    return statistics.median(s), s[min(len(s) - 1, math.ceil(0.9 * len(s)) - 1)]


def interleaved(fns: dict, repeat: int = 21, target: float = 0.005) -> dict:
    """Seconds per call of each ``fns[label]()`` as (median, p90), sampled in turns (each
    sample a batch of calls lasting about ``target`` seconds)."""
    numbers = {k: _number(f, target) for k, f in fns.items()}
    samples = {k: [] for k in fns}
    gc.disable()
    try:
        for _ in range(repeat):
            for k, f in fns.items():
                n = numbers[k]
                t0 = time.perf_counter()
                for _ in range(n):
                    f()
                samples[k].append((time.perf_counter() - t0) / n)
    finally:
        gc.enable()
    return {k: _stats(v) for k, v in samples.items()}


def per_call(pairs: dict, k: int, programs: dict, repeat: int = 41,
             target: float = 0.004) -> dict:
    """Per-step cost of each ``pairs[label] = (program with k steps, with 1 step)``: in each
    sample both are timed back to back and (t_k - t_1) / (k - 1) kept; (median, p90).
    ``programs[label]`` receives the two programs' median times (1 step, k steps)."""
    numbers = {lab: _number(many, target) for lab, (many, _) in pairs.items()}
    samples = {lab: [] for lab in pairs}
    raw = {lab: {"many": [], "one": []} for lab in pairs}
    gc.disable()
    try:
        for s in range(repeat):
            for lab, (many, one) in pairs.items():
                n = numbers[lab]
                times = {}
                order = (("many", many), ("one", one))
                for which, f in (order if s % 2 else order[::-1]):
                    t0 = time.perf_counter()
                    for _ in range(n):
                        f()
                    times[which] = (time.perf_counter() - t0) / n
                    raw[lab][which].append(times[which])
                samples[lab].append((times["many"] - times["one"]) / (k - 1))
    finally:
        gc.enable()
    programs.update({lab: (statistics.median(r["one"]), statistics.median(r["many"]))
                     for lab, r in raw.items()})
    return {lab: _stats(v) for lab, v in samples.items()}


def _jax_block(jax, f):
    return lambda: jax.block_until_ready(f())


# --- 1. call overhead ---------------------------------------------------------------------

def call_overhead(ft, jax, jnp):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SMALL).astype(np.float32)
    y = rng.standard_normal(SMALL).astype(np.float32)
    want = x + K_CALLS * y
    pairs, programs = {}, {}
    if ft is not None:
        import functrans.numpy as fnp

        def chain(k, step):
            def f(a, b):
                for _ in range(k):
                    a = step(a, b)
                return a
            return ft.jit(f)

        spec = ft.ShapeDtypeStruct((SMALL,), np.float32)
        steps = {
            "functrans numba_call in jit": lambda a, b: ft.numba_call(
                add16_nb, spec, a, b, zero_outputs=False),
            "functrans numba_call in jit, zero_outputs=True": lambda a, b: ft.numba_call(
                add16_nb, spec, a, b),
            "functrans pure_callback in jit": lambda a, b: ft.pure_callback(
                host_add16, spec, a, b),
        }
        xa, ya = fnp.asarray(x), fnp.asarray(y)
        a0, b0 = np.empty_like(x), np.empty_like(x)
        np.testing.assert_allclose(add16_loop(x, y, a0, b0, K_CALLS), want, rtol=1e-5)
        pairs["numba: the kernel in an njit loop"] = (
            lambda: add16_loop(x, y, a0, b0, K_CALLS), lambda: add16_loop(x, y, a0, b0, 1))
        for label, step in steps.items():
            many, one = chain(K_CALLS, step), chain(1, step)
            np.testing.assert_allclose(np.asarray(many(xa, ya)), want, rtol=1e-5)
            np.testing.assert_allclose(np.asarray(one(xa, ya)), x + y, rtol=1e-5)
            ft.block_until_ready(many(xa, ya))
            ft.block_until_ready(one(xa, ya))
            pairs[label] = (lambda m=many: m(xa, ya), lambda o=one: o(xa, ya))
        rows = per_call(pairs, K_CALLS, programs)
    else:
        rows = {"numba: the kernel in an njit loop": None}
    if jax:
        jspec = jax.ShapeDtypeStruct((SMALL,), jnp.float32)

        def jchain(k):
            def f(a, b):
                for _ in range(k):
                    a = jax.pure_callback(host_add16, jspec, a, b)
                return a
            return jax.jit(f)

        xj, yj = jnp.asarray(x), jnp.asarray(y)
        jm, j1 = jchain(K_CALLS), jchain(1)
        np.testing.assert_allclose(np.asarray(jm(xj, yj)), want, rtol=1e-5)
        rows.update(per_call({"jax pure_callback in jax.jit": (
            _jax_block(jax, lambda: jm(xj, yj)), _jax_block(jax, lambda: j1(xj, yj)))},
            K_CALLS, programs, repeat=21))
    title = (f"1. per-call cost of a {SMALL}-element float32 add kernel: (K={K_CALLS} chained "
             f"steps - 1 step) / {K_CALLS - 1}")
    out = [table(title, list(rows.items()), "numba: the kernel in an njit loop")]
    own = rows["numba: the kernel in an njit loop"]
    if own is not None:
        for label in ("functrans numba_call in jit",
                      "functrans numba_call in jit, zero_outputs=True"):
            m = rows[label][0] - own[0]
            out.append(f"  {label}: {fmt(m)} per call beyond the kernel's own time "
                       f"(target <= 1 us: {'met' if m <= 1e-6 else 'NOT met'})")
        out.append("  whole program, 1 step / 50 steps (medians): " + "; ".join(
            f"{label} {fmt(one)} / {fmt(many)}" for label, (one, many) in programs.items()))
    return "\n".join(out)


# --- 2. weighted pair counts --------------------------------------------------------------

def pair_data():
    rng = np.random.default_rng(1)
    return rng.random((N_POINTS, 3)), rng.random(N_POINTS)


def reference_counts(pos, w):
    counts = np.zeros(N_BINS)
    pair_count_nb(pos, w, counts, N_BINS, R_MAX)
    return counts


def jax_pair_counts(jax, jnp):
    """JAX's formulation: rows of the distance matrix in blocks under ``lax.map``, each
    block's weighted histogram by ``segment_sum`` (out-of-range pairs to an extra bin), the
    full symmetric matrix halved and the diagonal's i == j terms taken out."""
    n, blk = N_POINTS, JAX_BLOCK
    scale = N_BINS / R_MAX

    def counts(pos, w):
        def block(args):
            p, wi = args
            d2 = ((p[:, None, 0] - pos[None, :, 0]) ** 2 + (p[:, None, 1] - pos[None, :, 1]) ** 2
                  + (p[:, None, 2] - pos[None, :, 2]) ** 2)
            idx = jnp.where(d2 < R_MAX * R_MAX, (jnp.sqrt(d2) * scale).astype(jnp.int32),
                            N_BINS)
            idx = jnp.minimum(idx, N_BINS)
            ww = wi[:, None] * w[None, :]
            return jax.ops.segment_sum(ww.ravel(), idx.ravel(), num_segments=N_BINS + 1)
        h = jax.lax.map(block, (pos.reshape(n // blk, blk, 3), w.reshape(n // blk, blk)))
        h = h.sum(0)[:N_BINS].at[0].add(-jnp.sum(w * w))
        return h / 2
    return jax.jit(counts)


def pair_counts(ft, jax, jnp):
    pos, w = pair_data()
    want = reference_counts(pos, w)
    if ft is not None:
        import functrans.numpy as fnp
        spec = ft.ShapeDtypeStruct((N_BINS,), np.float64)
        f = ft.jit(lambda p, q: ft.numba_call(pair_count_nb, spec, p, q, nbins=N_BINS,
                                              rmax=R_MAX))
        pa, wa = fnp.asarray(pos), fnp.asarray(w)
        got = np.asarray(ft.block_until_ready(f(pa, wa)))
        np.testing.assert_allclose(got, want, rtol=1e-9)

        def plain():
            c = np.zeros(N_BINS)
            pair_count_nb(pos, w, c, N_BINS, R_MAX)
            return c
        rows = interleaved({"numba njit(parallel=True), called from Python": plain,
                            "functrans numba_call in jit": lambda: f(pa, wa)},
                           repeat=9, target=0)
    else:
        rows = {"numba njit(parallel=True), called from Python": None}
    if jax:
        jax.config.update("jax_enable_x64", True)
        jf = jax_pair_counts(jax, jnp)
        pj, wj = jnp.asarray(pos), jnp.asarray(w)
        np.testing.assert_allclose(np.asarray(jf(pj, wj)), want, rtol=1e-9)
        rows.update(interleaved({f"jax jit, lax.map blocks of {JAX_BLOCK} + segment_sum":
                                 _jax_block(jax, lambda: jf(pj, wj))}, repeat=5, target=0))
        jax.config.update("jax_enable_x64", False)
    title = (f"2. weighted pair counts, N = {N_POINTS:,} float64 3-D points, {N_BINS} bins "
             f"to r_max = {R_MAX}, {numba.get_num_threads()} Numba threads")
    return table(title, list(rows.items()), "numba njit(parallel=True), called from Python")


# --- 3. a scalar kernel in an elementwise chain -------------------------------------------

def huber(x):
    return 0.5 * x * x if abs(x) <= 1.0 else abs(x) - 0.5


CHAINS = {  # name: (scalar kernel, the same math in a numpy-like module m, NumPy reference)
    "softplus": (softplus,
                 lambda m, v: m.log1p(m.exp(-m.abs(v))) + m.maximum(v, 0.0),
                 lambda v: np.log1p(np.exp(-np.abs(v))) + np.maximum(v, 0)),
    "huber (piecewise)": (huber,
                          lambda m, v: m.where(m.abs(v) <= 1.0, 0.5 * v * v, m.abs(v) - 0.5),
                          lambda v: np.where(np.abs(v) <= 1, 0.5 * v * v, np.abs(v) - 0.5)),
}


def fused_chain(ft, jax, jnp):
    x = np.random.default_rng(2).standard_normal(N_VEC).astype(np.float32) * 2
    out = []
    for name, (scalar, math_in, ref) in CHAINS.items():
        want = np.tanh(ref(x.astype(np.float64)) * 2 + 1)
        if ft is not None:
            import functrans.numpy as fnp
            k = ft.numba_vectorize(scalar)
            f_vec = ft.jit(lambda v, k=k: fnp.tanh(k(v) * 2.0 + 1.0))
            f_np = ft.jit(lambda v, g=math_in: fnp.tanh(g(fnp, v) * 2.0 + 1.0))
            xa = fnp.asarray(x)
            for f in (f_vec, f_np):
                got = ft.block_until_ready(f(xa))
                assert got.dtype == np.float32, got.dtype
                np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
            rows = interleaved({"functrans jit, functrans.numpy": lambda: f_np(xa),
                                f"functrans jit, numba_vectorize {name.split()[0]}":
                                    lambda: f_vec(xa)})
        else:
            rows = {"functrans jit, functrans.numpy": None}
        if jax:
            jf = jax.jit(lambda v, g=math_in: jnp.tanh(g(jnp, v) * 2.0 + 1.0))
            xj = jnp.asarray(x)
            np.testing.assert_allclose(np.asarray(jf(xj)), want, rtol=1e-5, atol=1e-6)
            rows.update(interleaved({"jax jit, jnp": _jax_block(jax, lambda: jf(xj))}))
        title = f"3. tanh(k(x) * 2 + 1), k = {name}, {N_VEC:,} float32"
        out.append(table(title, list(rows.items()), "functrans jit, functrans.numpy"))
    return "\n".join(out)


# --- 4. compile ---------------------------------------------------------------------------

_PRELUDE = """
import math, time, numpy as np, numba
from numba import prange
{source}
rng = np.random.default_rng(0)
pos, w = rng.random((1000, 3)), rng.random(1000)
"""

_CHILD_FT = """
import functrans as ft, functrans.numpy as fnp
spec = ft.ShapeDtypeStruct(({nbins},), np.float64)
t0 = time.perf_counter()
kernel = numba.njit(parallel=True)(pair_count)
if {with_kernel}:
    f = ft.jit(lambda p, q: ft.numba_call(kernel, spec, p * 0.5, q, nbins={nbins}, rmax={rmax})
               / fnp.sum(q))
else:
    f = ft.jit(lambda p, q: (fnp.sum(p * 0.5) + fnp.zeros({nbins})) / fnp.sum(q))
r = ft.block_until_ready(f(pos, w))
print("SECONDS", time.perf_counter() - t0, float(np.asarray(r).sum()))
"""

_CHILD_NUMBA = """
t0 = time.perf_counter()
kernel = numba.njit(parallel=True)(pair_count)
c = np.zeros({nbins})
kernel(pos * 0.5, w, c, {nbins}, {rmax})
print("SECONDS", time.perf_counter() - t0, float(c.sum()))
"""


def _child_seconds(code, **env_extra):
    with tempfile.TemporaryDirectory() as ft_cache, tempfile.TemporaryDirectory() as nb_cache:
        env = dict(os.environ, FUNCTRANS_CACHE_DIR=ft_cache, NUMBA_CACHE_DIR=nb_cache,
                   **env_extra)
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"compile child failed:\n{r.stderr[-3000:]}")
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("SECONDS")][-1]
    return float(line.split()[1])


def compile_times(repeat=3):
    prelude = _PRELUDE.format(source=inspect.getsource(pair_count))
    fill = dict(nbins=N_BINS, rmax=R_MAX)
    codes = {
        "numba alone: njit(parallel=True) kernel, first result":
            prelude + _CHILD_NUMBA.format(**fill),
        "functrans jit, program without the kernel step":
            prelude + _CHILD_FT.format(with_kernel=False, **fill),
        "functrans jit, program with the kernel (numba_call)":
            prelude + _CHILD_FT.format(with_kernel=True, **fill),
        "same, FUNCTRANS_JIT_TIERED=0 (compiled before the first call returns)":
            prelude + _CHILD_FT.format(with_kernel=True, **fill),
    }
    samples = {k: [] for k in codes}
    for _ in range(repeat):  # in turns, each in a fresh process with empty caches
        for k, code in codes.items():
            extra = {"FUNCTRANS_JIT_TIERED": "0"} if "TIERED=0" in k else {}
            samples[k].append(_child_seconds(code, **extra))
    med = {k: _stats(v) for k, v in samples.items()}
    labels = list(codes)
    base = (med[labels[0]][0] + med[labels[1]][0], med[labels[0]][1] + med[labels[1]][1])
    rows = [(labels[0], med[labels[0]]), (labels[1], med[labels[1]]),
            ("sum of the two above", base), (labels[2], med[labels[2]]),
            (labels[3], med[labels[3]])]
    title = (f"4. first compiled result in a fresh process (empty caches; imports excluded; "
             f"{repeat} processes each), pair-count kernel on 1,000 points")
    out = table(title, rows, "sum of the two above")
    ratio = med[labels[2]][0] / base[0]
    return out + (f"\n  with the kernel / (Numba alone + without the kernel): {ratio:.2f}x "
                  f"(target <= 1.5x: {'met' if ratio <= 1.5 else 'NOT met'})")


def check_and_time():
    jax, jnp = maybe_jax()
    ft = None
    if jax is None:  # the JAX peer process times JAX's rows only
        import functrans as ft
    out = [call_overhead(ft, jax, jnp), pair_counts(ft, jax, jnp), fused_chain(ft, jax, jnp)]
    if jax is None:
        out.append(compile_times())
    return "\n".join(out)


if __name__ == "__main__":
    import bench_kernels  # by name: the JAX peer process imports it so
    print(run(bench_kernels))
