"""Devices: what running shards in parallel buys, and what it costs.

1. a compute-heavy per-shard program (a 1,000-step loop of transcendentals on 8k float64 per
   shard: cache-resident, and too small for one kernel's own threads): 2 shards on 2 devices
   vs the same 2 shards one after the other on 1 device
2. data-parallel MLP 784-512-512-10 value_and_grad step, global batch 256, float32:
   pmap over 2 devices (pmean of the gradients) vs jit on 1 device
3. dispatch of an empty pmap (identity on 2 floats) vs an empty jit
4. psum latency between 2 MPI processes (one device each), vs mpi4py's own allreduce

Run: ``python benchmarks/bench_spmd.py`` (part 4 needs the ``mpi`` extra).
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np

import functrans as ft
import functrans.numpy as fnp
from functrans import lax

try:
    from .bench_autodiff import init_mlp, mlp_loss
    from .timing import median_time, table
except ImportError:  # run as a script
    from bench_autodiff import init_mlp, mlp_loss
    from timing import median_time, table


def heavy(x):
    # Bounded and away from zero (no subnormal slow paths): sin(1.7 v) + tanh(v) / 2.
    return lax.fori_loop(0, 1000, lambda i, v: fnp.sin(v * 1.7) + fnp.tanh(v) * 0.5, x)


def check_and_time(n_devices=2):
    out = []
    with ft.config.override(num_cpu_devices=n_devices):
        rng = np.random.default_rng(0)
        x = rng.standard_normal((n_devices, 1 << 13))
        on_all = ft.pmap(heavy)
        on_one = ft.pmap(heavy, devices=ft.devices()[:1])
        want = ft.jit(ft.vmap(heavy))(x)
        np.testing.assert_allclose(on_all(x), want, rtol=1e-12)
        rows = [("1 device, shards in turn",
                 median_time(lambda: [on_one(x[i:i + 1]) for i in range(n_devices)])),
                (f"{n_devices} devices (pmap)", median_time(lambda: on_all(x)))]
        out.append(table(f"per-shard loop of sin/tanh, {n_devices} x 8k float64", rows,
                         rows[0][0]))

        params = init_mlp([784, 512, 512, 10], np.float32)
        xb = rng.standard_normal((256, 784)).astype(np.float32)
        yb = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 256)]
        single = ft.jit(ft.value_and_grad(mlp_loss))

        def dp(p, x, y):
            loss, g = ft.value_and_grad(mlp_loss)(p, x, y)
            return lax.pmean(loss, "d"), lax.pmean(g, "d")
        parallel = ft.pmap(dp, "d", in_axes=(None, 0, 0))
        per = 256 // n_devices
        xs, ys = xb.reshape(n_devices, per, 784), yb.reshape(n_devices, per, 10)
        loss1, g1 = single(params, xb, yb)
        lossp, gp = parallel(params, xs, ys)
        # float32 sums in two halves vs one pass: agree to float32 rounding of the losses.
        np.testing.assert_allclose(np.asarray(lossp)[0], loss1, rtol=1e-5)
        np.testing.assert_allclose(np.asarray(gp[0][0])[0], g1[0][0], rtol=1e-3, atol=1e-5)
        rows = [("jit on 1 device", median_time(lambda: single(params, xb, yb))),
                (f"pmap over {n_devices} devices", median_time(lambda: parallel(params, xs, ys)))]
        out.append(table("MLP value_and_grad step, batch 256, float32", rows, rows[0][0]))

        ident_p, ident_j = ft.pmap(lambda v: v), ft.jit(lambda v: v)
        two = np.ones(n_devices)
        rows = [("jit(identity)", median_time(lambda: ident_j(two))),
                (f"pmap(identity) over {n_devices}", median_time(lambda: ident_p(two)))]
        out.append(table("dispatch", rows, rows[0][0]))
    out.append(mpi_latency())
    return "\n".join(out)


_MPI_SCRIPT = textwrap.dedent("""
    import statistics, time
    import numpy as np
    import functrans as ft
    from functrans import lax
    from mpi4py import MPI
    ft.config.update("num_cpu_devices", 1)
    ft.distributed.initialize()
    comm = MPI.COMM_WORLD
    f = ft.pmap(lambda v: lax.psum(v, "i"), "i")
    x = np.ones(1)
    assert float(np.asarray(f(x))[0]) == 2.0

    def median(fn, n=2000):
        for _ in range(50):
            ft.block_until_ready(fn())  # (waits for a kernel still compiling: tiered jit)
        comm.Barrier()
        t = []
        for _ in range(n):
            t0 = time.perf_counter(); fn(); t.append(time.perf_counter() - t0)
        return statistics.median(t)
    buf, res = np.ones(1), np.empty(1)
    raw = median(lambda: comm.Allreduce(buf, res))
    ours = median(lambda: f(x))
    if comm.Get_rank() == 0:
        print(f"{raw * 1e6:.1f} {ours * 1e6:.1f}")
""")


def mpi_latency():
    mpiexec = pathlib.Path(sys.executable).parent / "mpiexec"
    if not mpiexec.exists():
        return "\npsum across 2 MPI processes: skipped (pip install -e '.[mpi]')"
    script = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / "functrans_psum_latency.py"
    script.write_text(_MPI_SCRIPT)
    out = subprocess.run([str(mpiexec), "-n", "2", sys.executable, "-m", "mpi4py", str(script)],
                         capture_output=True, text=True, timeout=600)
    if out.returncode:
        raise RuntimeError(out.stderr)
    raw, ours = (float(v) * 1e-6 for v in out.stdout.split())
    return table("psum of one float64 across 2 MPI processes (1 device each)",
                 [("mpi4py Allreduce", raw), ("functrans pmap(psum)", ours)],
                 "mpi4py Allreduce")


if __name__ == "__main__":
    print(check_and_time())
