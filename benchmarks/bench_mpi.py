"""Collectives across 2 MPI processes: functrans's pmap collectives against mpi4py's own calls
on the same buffers.

* psum of 1 float32: a whole ``pmap(psum)`` call, a ``pmap(identity)`` call (what dispatch
  alone costs), and one pmap running 100 psums in a row (per psum) vs ``Allreduce``
* psum of 10M float32 per shard vs ``Allreduce`` of 10M; with it, what pmap's own copies of
  a 10M block cost (``pmap(identity)``) and a psum whose result the shard sums to a scalar
* all_gather of 10M float32 per shard vs ``Allgather`` of 10M per process
* psum_scatter (tiled) of 10M float32 per shard vs ``Reduce_scatter_block`` of 10M

Each with 1 device per process (pmap over ``ft.devices()``: one shard per process, the shape
MPI's own calls have) and with 2 devices per process (two shards per process: their values
are combined or stacked locally around the one MPI call; the baseline stays the per-process
MPI call). Every functrans result is checked against NumPy first.

Run: ``python benchmarks/bench_mpi.py`` (starts ``mpiexec -n 2`` itself, once per device
count; needs the ``mpi`` extra), or one configuration directly:
``mpiexec -n 2 python -m mpi4py benchmarks/bench_mpi.py 1``.
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

BIG = 10_000_000
TARGETS = {"psum, 1 float32 (per psum, 100 in one pmap)": "<= 50 us",
           "psum, 10M float32": "<= 1.3x", "all_gather, 10M float32": "<= 1.3x",
           "psum_scatter, 10M float32": "<= 1.3x"}


def median(comm, fn, repeat):
    """Median seconds of ``fn()`` on this process; the processes start each call together."""
    for _ in range(3):
        fn()
    samples = []
    for _ in range(repeat):
        comm.Barrier()
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def measure(n_local: int) -> list:
    """Rows (label, mpi4py seconds or None, functrans seconds) on this process."""
    import numpy as np
    from mpi4py import MPI

    import functrans as ft
    from functrans import lax

    ft.config.update("num_cpu_devices", n_local)
    ft.distributed.initialize()
    comm, nproc = MPI.COMM_WORLD, MPI.COMM_WORLD.Get_size()
    n = ft.device_count()
    rank = comm.Get_rank()
    rows = []

    one = np.ones((n_local, 1), np.float32)
    psum = ft.pmap(lambda v: lax.psum(v, "i"), "i")
    ident = ft.pmap(lambda v: v, "i")

    def hundred(v):
        for _ in range(100):
            v = lax.psum(v, "i") * np.float32(1 / n)
        return v
    many = ft.pmap(hundred, "i")
    assert np.asarray(psum(one)).tolist() == [[float(n)]] * n_local
    assert np.asarray(many(one)).tolist() == [[1.0]] * n_local
    buf, res = np.ones(1, np.float32), np.empty(1, np.float32)
    raw = median(comm, lambda: comm.Allreduce(buf, res), 3000)
    rows.append(("psum, 1 float32 (a whole pmap call)", raw, median(comm, lambda: psum(one), 2000)))
    rows.append(("pmap(identity), 1 float32 (dispatch alone)", None,
                 median(comm, lambda: ident(one), 2000)))
    rows.append(("psum, 1 float32 (per psum, 100 in one pmap)", raw,
                 median(comm, lambda: many(one), 200) / 100))

    rng = np.random.default_rng(rank)
    big = rng.integers(-4, 4, (n_local, BIG)).astype(np.float32)
    total = np.empty(BIG, np.float32)
    comm.Allreduce(big.sum(0), total)
    got = np.asarray(psum(big))
    assert (got == total).all()
    send, recv = np.ascontiguousarray(big[0]), np.empty(BIG, np.float32)
    allreduce = median(comm, lambda: comm.Allreduce(send, recv), 15)
    rows.append(("psum, 10M float32", allreduce, median(comm, lambda: psum(big), 15)))
    # Where the rest goes: pmap's own copies of a 10M block in and out, and a psum whose
    # result is summed to a scalar in the shard (no 40 MB output to copy out).
    rows.append(("pmap(identity), 10M float32 (pmap's copies)", None,
                 median(comm, lambda: ident(big), 15)))
    summed = ft.pmap(lambda v: lax.psum(v, "i").sum(), "i")
    rows.append(("psum, 10M float32, summed in the shard", allreduce,
                 median(comm, lambda: summed(big), 15)))

    gather = ft.pmap(lambda v: lax.all_gather(v, "i"), "i")
    everyone = np.concatenate(comm.allgather(big))
    assert (np.asarray(gather(big))[0] == everyone).all()
    gathered = np.empty(nproc * BIG, np.float32)
    rows.append(("all_gather, 10M float32", median(comm, lambda: comm.Allgather(send, gathered),
                                                   15),
                 median(comm, lambda: gather(big), 15)))

    scatter = ft.pmap(lambda v: lax.psum_scatter(v, "i", tiled=True), "i")
    chunk = BIG // n
    mine = slice(rank * n_local * chunk, (rank + 1) * n_local * chunk)
    assert (np.asarray(scatter(big)).reshape(-1) == total[mine]).all()
    part = np.empty(BIG // nproc, np.float32)
    rows.append(("psum_scatter, 10M float32",
                 median(comm, lambda: comm.Reduce_scatter_block(send, part), 15),
                 median(comm, lambda: scatter(big), 15)))
    return rows


def fmt(seconds) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e6:.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


def report(rows, n_local, nproc) -> str:
    lines = [f"\n{nproc} processes x {n_local} device(s) each",
             f"  {'collective':48} {'mpi4py':>10} {'functrans':>10} {'ratio':>7}  target"]
    for label, raw, ours in rows:
        ratio = "-" if raw is None else f"{ours / raw:.2f}x"
        lines.append(f"  {label:48} {fmt(raw):>10} {fmt(ours):>10} {ratio:>7}  "
                     f"{TARGETS.get(label, '')}")
    return "\n".join(lines)


def main_under_mpi(n_local: int) -> None:
    from mpi4py import MPI
    rows = measure(n_local)
    if MPI.COMM_WORLD.Get_rank() == 0:
        print(report(rows, n_local, MPI.COMM_WORLD.Get_size()), flush=True)


def main() -> None:
    mpiexec = pathlib.Path(sys.executable).parent / "mpiexec"
    if not mpiexec.exists():
        sys.exit("bench_mpi.py needs the mpi extra (pip install -e '.[mpi]'), whose mpiexec "
                 "sits next to the Python executable")
    print(f"CPU: {cpu_name()}, {os.cpu_count()} cores")
    for n_local in (1, 2):
        done = subprocess.run([str(mpiexec), "-n", "2", sys.executable, "-m", "mpi4py",
                               __file__, str(n_local)], text=True, capture_output=True,
                              timeout=1800)
        if done.returncode:
            sys.exit(done.stdout + done.stderr)
        print(done.stdout.rstrip())


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main_under_mpi(int(sys.argv[1]))
    else:
        main()
