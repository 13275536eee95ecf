"""The cuda backend on a real GPU: correctness against the cpu backend, then timings.

    python benchmarks/cuda_check.py          # on a machine with an NVIDIA GPU (pip install -e ".[cuda]")
    NUMBA_ENABLE_CUDASIM=1 python benchmarks/cuda_check.py --tiny   # a smoke run in the simulator

Checks every primitive-family program of the jit tests on both backends, then times fused
elementwise, a reduction, a matrix product and an MLP value_and_grad step: functrans on the GPU
(including the transfers of arguments and results) vs NumPy on the host, and vs JAX on the GPU
when JAX with CUDA is installed (in its own process). Then a user's numba.cuda.jit kernel (a
weighted pair count into distance bins with atomic adds) as a step of a jitted CUDA program
vs the same kernel launched by plain numba-cuda, with host arrays in and the histogram read
back, and with the inputs already on the device. Prints medians and ratios; < 5 minutes.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np
from numba import cuda  # kernels' global: the simulator swaps it for its own

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import functrans as ft  # noqa: E402
import functrans.numpy as fnp  # noqa: E402
from bench_autodiff import init_mlp, mlp_loss, mlp_value_and_grad_numpy  # noqa: E402
from timing import fmt, median_time  # noqa: E402


def check_programs() -> int:
    """Every jit-table program on cuda vs cpu (the tolerance of tests/test_jit.py)."""
    from test_jit import CASES, _assert_close
    failures = 0
    for name, (f, args) in sorted(CASES.items()):
        args = [fnp.asarray(a) for a in args]
        try:
            want = ft.jit(f, backend="cpu")(*args)
            got = ft.jit(f, backend="cuda")(*args)
            for w, g in zip(ft.tree_util.tree_leaves(want), ft.tree_util.tree_leaves(got)):
                _assert_close(name, g, w, False)
        except Exception as e:  # report every failure, then fail at the end
            failures += 1
            print(f"  MISMATCH {name}: {type(e).__name__}: {str(e)[:200]}")
    print(f"correctness: {len(CASES) - failures}/{len(CASES)} programs agree with the cpu "
          "backend")
    return failures


def workloads(tiny: bool):
    n, m, batch = (1 << 10, 32, 8) if tiny else (1 << 24, 2048, 1024)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    a = rng.standard_normal((m, m)).astype(np.float32)
    sizes = [64, 32, 10] if tiny else [784, 1024, 1024, 10]
    params = init_mlp(sizes, np.float32)
    xb = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    yb = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
    return [
        ("fused sum(tanh(x)*sin(x) + x*x*0.5)",
         lambda v: fnp.sum(fnp.tanh(v) * fnp.sin(v) + v * v * 0.5),
         lambda v: np.sum(np.tanh(v) * np.sin(v) + v * v * 0.5), (x,)),
        ("reduction max over rows", lambda v: fnp.max(v, axis=1),
         lambda v: np.max(v, axis=1), (a,)),
        ("matmul relu(A @ A + 1)", lambda v: fnp.maximum(v @ v + 1.0, 0.0),
         lambda v: np.maximum(v @ v + 1.0, 0.0), (a,)),
        ("MLP value_and_grad step", ft.value_and_grad(mlp_loss),
         mlp_value_and_grad_numpy, (params, xb, yb)),
    ]


def time_functrans(tiny: bool):
    rows = []
    for label, f, ref, args in workloads(tiny):
        gpu = ft.jit(f, backend="cuda")
        got, want = gpu(*args), ref(*args)
        ok = all(np.allclose(np.asarray(g), np.asarray(w), rtol=2e-3, atol=2e-3)
                 for g, w in zip(ft.tree_util.tree_leaves(got), ft.tree_util.tree_leaves(want)))
        repeat = 3 if tiny else 15
        t_gpu = median_time(lambda: ft.block_until_ready(gpu(*args)), repeat=repeat,
                            min_time=0.0 if tiny else 0.2)
        t_np = median_time(lambda: ref(*args), repeat=repeat, min_time=0.0 if tiny else 0.2)
        rows.append((label, t_np, t_gpu, ok))
    return rows


_JAX = """
import json, sys, time, statistics
import numpy as np
import jax, jax.numpy as jnp
sys.path.insert(0, sys.argv[1])
from bench_autodiff import init_mlp, make_mlp_loss
tiny = sys.argv[2] == "1"
n, m, batch = (1 << 10, 32, 8) if tiny else (1 << 24, 2048, 1024)
rng = np.random.default_rng(0)
x = jnp.asarray(rng.standard_normal(n).astype(np.float32))
a = jnp.asarray(rng.standard_normal((m, m)).astype(np.float32))
sizes = [64, 32, 10] if tiny else [784, 1024, 1024, 10]
params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in init_mlp(sizes, np.float32)]
xb = jnp.asarray(rng.standard_normal((batch, sizes[0])).astype(np.float32))
yb = jnp.asarray(np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)])
loss = make_mlp_loss(jnp, jax.scipy.special.logsumexp)
fns = [(jax.jit(lambda v: jnp.sum(jnp.tanh(v) * jnp.sin(v) + v * v * 0.5)), (x,)),
       (jax.jit(lambda v: jnp.max(v, axis=1)), (a,)),
       (jax.jit(lambda v: jnp.maximum(v @ v + 1.0, 0.0)), (a,)),
       (jax.jit(jax.value_and_grad(loss)), (params, xb, yb))]
out = []
for f, args in fns:
    jax.block_until_ready(f(*args))
    t = []
    for _ in range(15):
        t0 = time.perf_counter(); jax.block_until_ready(f(*args)); t.append(time.perf_counter() - t0)
    out.append(statistics.median(t))
print(json.dumps(out))
"""


def time_jax(tiny: bool):
    try:
        import importlib.util
        if importlib.util.find_spec("jax") is None:
            return None
    except Exception:
        return None
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([sys.executable, "-c", _JAX, here, "1" if tiny else "0"],
                         capture_output=True, text=True, timeout=240)
    if out.returncode:
        print(f"(JAX run failed: {out.stderr.strip().splitlines()[-1:]})")
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def _pair_count_kernel():
    @cuda.jit
    def pair_count(pos, w, hist, rmax):
        """hist[b] += w_i w_j over the pairs i < j whose distance falls in bin b."""
        i = cuda.grid(1)
        n = pos.shape[0]
        nbins = hist.shape[0]
        if i < n:
            for j in range(i + 1, n):
                dx = pos[i, 0] - pos[j, 0]
                dy = pos[i, 1] - pos[j, 1]
                dz = pos[i, 2] - pos[j, 2]
                b = int(math.sqrt(dx * dx + dy * dy + dz * dz) / rmax * nbins)
                if b < nbins:
                    cuda.atomic.add(hist, b, w[i] * w[j])
    return pair_count


def time_user_kernel(tiny: bool):
    """The pair count in a jitted CUDA program vs plain numba-cuda: (label, plain, functrans,
    agree) rows; host-to-host (inputs copied in, the histogram read back) and device-resident
    (inputs already on the device, the histogram left there)."""
    kernel = _pair_count_kernel()
    n, nbins, threads = (48, 16, 8) if tiny else (1 << 15, 64, 256)
    rmax = np.float32(2.0)
    rng = np.random.default_rng(0)
    pos = rng.uniform(0.0, 1.0, (n, 3)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, n).astype(np.float32)
    launch = (-(-n // threads), threads)
    hist_type = ft.ShapeDtypeStruct((nbins,), np.float32)
    program = ft.jit(lambda p, v: ft.numba_call(kernel, hist_type, p, v, rmax=rmax,
                                                launch=launch), backend="cuda")

    def plain_device(d_pos, d_w):
        hist = cuda.device_array(nbins, np.float32)
        hist.copy_to_device(np.zeros(nbins, np.float32))
        kernel[launch](d_pos, d_w, hist, rmax)
        return hist

    def plain(p, v):
        return plain_device(cuda.to_device(p), cuda.to_device(v)).copy_to_host()

    def functrans_host(p, v):
        return np.asarray(program(p, v))

    resident = ft.jit(lambda a: a * 1, backend="cuda")
    r_pos, r_w = resident(pos), resident(w)
    d_pos, d_w = cuda.to_device(pos), cuda.to_device(w)

    def synced(f, *args):
        def run():
            out = f(*args)
            cuda.synchronize()
            return out
        return run

    want = plain(pos, w)
    ok = np.allclose(functrans_host(pos, w), want, rtol=1e-4, atol=1e-3)
    ok_resident = np.allclose(np.asarray(program(r_pos, r_w)), want, rtol=1e-4, atol=1e-3)
    if tiny:  # the oracle: every pair, in NumPy
        i, j = np.triu_indices(n, 1)
        b = (np.sqrt(((pos[i] - pos[j]) ** 2).sum(-1)) / rmax * nbins).astype(np.int64)
        keep = b < nbins
        exact = np.bincount(b[keep], (w[i] * w[j])[keep], minlength=nbins)
        ok = ok and np.allclose(want, exact, rtol=1e-4, atol=1e-3)
    repeat, min_time = (3, 0.0) if tiny else (15, 0.2)
    rows = []
    for label, base, ours, agree in (
            ("pair count, host arrays in and out", synced(plain, pos, w),
             synced(functrans_host, pos, w), ok),
            ("pair count, inputs on the device", synced(plain_device, d_pos, d_w),
             synced(program, r_pos, r_w), ok_resident)):
        t_base = median_time(base, repeat=repeat, min_time=min_time)
        t_ours = median_time(ours, repeat=repeat, min_time=min_time)
        rows.append((label, t_base, t_ours, agree))
    print(f"\nuser CUDA kernel ({n} points, {n * (n - 1) // 2} pairs, {nbins} bins, atomics)")
    print(f"{'benchmark':40} {'numba-cuda':>12} {'functrans jit':>14} {'ratio':>9}  correct")
    for label, t_base, t_ours, agree in rows:
        print(f"{label:40} {fmt(t_base):>12} {fmt(t_ours):>14} {t_ours / t_base:>8.2f}x"
              f"  {'yes' if agree else 'NO'}")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="small shapes (for the simulator)")
    args = parser.parse_args()
    start = time.perf_counter()
    print(f"cuda devices: {ft.devices('cuda')}")
    failures = check_programs()
    rows = time_functrans(args.tiny)
    jax_times = time_jax(args.tiny)
    print(f"\n{'benchmark':40} {'NumPy host':>12} {'functrans GPU':>14} {'vs NumPy':>9}"
          + (f" {'JAX GPU':>10} {'vs JAX':>8}" if jax_times else "") + "  correct")
    for k, (label, t_np, t_gpu, ok) in enumerate(rows):
        line = f"{label:40} {fmt(t_np):>12} {fmt(t_gpu):>14} {t_gpu / t_np:>8.2f}x"
        if jax_times:
            line += f" {fmt(jax_times[k]):>10} {t_gpu / jax_times[k]:>7.2f}x"
        print(line + f"  {'yes' if ok else 'NO'}")
    user_rows = time_user_kernel(args.tiny)
    print(f"\n({time.perf_counter() - start:.0f} s)")
    if failures or not all(ok for *_, ok in rows + user_rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
