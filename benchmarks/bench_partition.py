"""jit over sharded arrays (global view): what partitioning costs and what it buys.

* a 2048x2048 float32 matmul chain ``tanh(A @ B) @ C`` with ``A`` split by rows over 2 CPU
  devices, against the same jit unsharded (both use every core)
* jit dispatch of a sharded elementwise program (2 shards of 8 floats) against unsharded
* data-parallel training step of an MLP 784-512-512-10, batch 2048, float32: one process
  limited to one core, against 2 MPI processes with one core each (the batch split over them,
  gradients all-reduced by the partitioned program), and the FSDP step's bytes per process
  (parameters split over the processes, each layer gathered when used)

Every timed result is checked first (against the unsharded program). Run:
``python benchmarks/bench_partition.py`` (starts the one-core and MPI runs itself; the MPI
part needs the ``mpi`` extra).
"""
from __future__ import annotations

import os
import pathlib
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import cpu_name  # noqa: E402

SIZES = (784, 512, 512, 10)
BATCH = 2048
ONE_CORE = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                             "NUMBA_NUM_THREADS")}


def median(fn, repeat, barrier=None):
    for _ in range(3):
        fn()
    samples = []
    for _ in range(repeat):
        if barrier is not None:
            barrier()
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def in_process() -> list:
    import numpy as np

    import functrans as ft
    import functrans.numpy as fnp
    from functrans.sharding import NamedSharding, PartitionSpec as P

    ft.config.update("num_cpu_devices", 2)
    mesh = ft.make_mesh((2,), ("x",))
    rng = np.random.default_rng(0)
    a, b, c = (rng.normal(size=(2048, 2048)).astype(np.float32) for _ in range(3))
    chain = ft.jit(lambda a, b, c: fnp.tanh(a @ b) @ c)
    placed = (ft.device_put(a, NamedSharding(mesh, P("x"))),
              ft.device_put(b, NamedSharding(mesh, P())), ft.device_put(c, NamedSharding(mesh, P())))
    np.testing.assert_allclose(chain(*placed), chain(a, b, c), rtol=1e-5, atol=1e-3)
    rows = []
    for _ in range(2):  # interleaved: the machine's drift hits both alike
        plain = median(lambda: chain(a, b, c).block_until_ready(), 10)
        sharded = median(lambda: chain(*placed).block_until_ready(), 10)
    rows.append(("matmul chain 2048^2 f32, rows split over 2 devices", plain, sharded, "<= 1.15x"))
    double = ft.jit(lambda v: v * 2.0)
    small = np.ones(8, np.float32)
    split = ft.device_put(small, NamedSharding(mesh, P("x")))
    assert np.asarray(double(split)).tolist() == [2.0] * 8
    plain = median(lambda: double(small), 3000)
    sharded = median(lambda: double(split), 3000)
    rows.append(("jit dispatch, 8 floats in 2 shards", plain, sharded, "<= 50 us"))
    return rows


def mlp_params(seed=0):
    import numpy as np
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(m, n)).astype(np.float32) * np.float32(1 / np.sqrt(m)),
             np.zeros(n, np.float32)) for m, n in zip(SIZES[:-1], SIZES[1:])]


def mlp_step():
    import functrans as ft
    from bench_autodiff import mlp_loss as loss  # the ReLU MLP's softmax cross-entropy

    @ft.jit
    def step(params, x, y):
        grads = ft.grad(loss)(params, x, y)
        return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, grads)]
    return step


def batch(seed=1):
    import numpy as np
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(BATCH, SIZES[0])).astype(np.float32)
    y = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], BATCH)]
    return x, y


def one_core_step() -> float:
    """Seconds per step of the unsharded MLP step in this (one-core) process."""
    step = mlp_step()
    params = mlp_params()
    x, y = batch()
    return median(lambda: step(params, x, y)[0][0].block_until_ready(), 15)


def under_mpi() -> None:
    import numpy as np
    from mpi4py import MPI

    import functrans as ft
    from functrans.experimental import multihost_utils as mu
    from functrans.sharding import NamedSharding, PartitionSpec as P

    ft.distributed.initialize()
    comm, rank, nproc = MPI.COMM_WORLD, MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
    mesh = ft.make_mesh((nproc,), ("x",), axis_types=(ft.sharding.AxisType.Auto,))
    step = mlp_step()
    params, (x, y) = mlp_params(), batch()
    want = step(params, x, y)  # the unsharded step, in each process
    rows = slice(rank * BATCH // nproc, (rank + 1) * BATCH // nproc)
    xs = ft.make_array_from_process_local_data(NamedSharding(mesh, P("x")), x[rows])
    ys = ft.make_array_from_process_local_data(NamedSharding(mesh, P("x")), y[rows])
    dp = ft.device_put(params, NamedSharding(mesh, P()))
    got = step(dp, xs, ys)
    for g, w in zip(ft.tree_util.tree_leaves(got), ft.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(mu.process_allgather(g, tiled=True), w, rtol=1e-4, atol=1e-5)
    dp_time = median(lambda: ft.block_until_ready(step(dp, xs, ys)), 15, comm.Barrier)

    fsdp = ft.device_put(params, NamedSharding(mesh, P("x")))
    fsdp = [(w, ft.device_put(b, NamedSharding(mesh, P()))) for w, b in fsdp]
    got = step(fsdp, xs, ys)
    for g, w in zip(ft.tree_util.tree_leaves(got), ft.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(mu.process_allgather(g, tiled=True), w, rtol=1e-4, atol=1e-5)
    fsdp_time = median(lambda: ft.block_until_ready(step(fsdp, xs, ys)), 15, comm.Barrier)
    held = sum(a.local_nbytes for a in ft.tree_util.tree_leaves(got))
    total = sum(a.nbytes for a in ft.tree_util.tree_leaves(got))
    layer = max(w.nbytes for w, _ in params)
    times = comm.gather((dp_time, fsdp_time), root=0)
    if rank == 0:
        print(f"MPI {nproc} {max(t[0] for t in times)!r} {max(t[1] for t in times)!r} "
              f"{held} {total} {layer}", flush=True)


def fmt(seconds) -> str:
    return f"{seconds * 1e6:.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


def main() -> None:
    print(f"CPU: {cpu_name()}, {os.cpu_count()} cores")
    print(f"\n  {'program':54} {'unsharded':>10} {'sharded':>10} {'ratio':>7}  target")
    for label, plain, sharded, target in in_process():
        print(f"  {label:54} {fmt(plain):>10} {fmt(sharded):>10} "
              f"{sharded / plain:6.2f}x  {target}")
    env = dict(os.environ, **ONE_CORE)
    one = subprocess.run([sys.executable, __file__, "one-core"], env=env, text=True,
                         capture_output=True, timeout=1200)
    if one.returncode:
        sys.exit(one.stdout + one.stderr)
    single = float(one.stdout.split()[-1])
    mpiexec = pathlib.Path(sys.executable).parent / "mpiexec"
    if not mpiexec.exists():
        print("\n(MPI rows skipped: the mpi extra's mpiexec is not installed)")
        return
    done = subprocess.run([str(mpiexec), "-n", "2", "-bind-to", "core", sys.executable, "-m",
                           "mpi4py", __file__, "mpi"], env=env, text=True, capture_output=True,
                          timeout=1200)
    if done.returncode:
        sys.exit(done.stdout + done.stderr)
    _, nproc, dp, fsdp, held, total, layer = next(
        line for line in done.stdout.splitlines() if line.startswith("MPI ")).split()
    dp, fsdp = float(dp), float(fsdp)
    print(f"\nMLP {'-'.join(map(str, SIZES))} training step, batch {BATCH}, float32, "
          "one core per process:")
    print(f"  1 process:                        {fmt(single):>10}")
    print(f"  {nproc} processes, data parallel:      {fmt(dp):>10}  speed-up "
          f"{single / dp:.2f}x (target >= 1.6x)")
    print(f"  {nproc} processes, FSDP:               {fmt(fsdp):>10}  speed-up {single / fsdp:.2f}x")
    print(f"  FSDP bytes per process: {int(held):,} of {int(total):,} parameter bytes "
          f"({int(held) / int(total):.0%}), plus one gathered layer at a time (largest "
          f"{int(layer):,} bytes)")


if __name__ == "__main__":
    if sys.argv[1:] == ["one-core"]:
        print(one_core_step())
    elif sys.argv[1:] == ["mpi"]:
        under_mpi()
    else:
        main()
