"""Let waiting worker threads sleep: no multi-millisecond stalls when other processes are busy.

Numba's ``prange`` loops (users' kernels, the blocked convolution drivers) run on Numba's
OpenMP thread pool (GNU libgomp); jit's generated loops and cut products ran there too until
they moved to functrans's work-sharing pool (transforms/native/work_pool.py), whose figures
are in its docstring. The measurements below are from that time. By default libgomp's idle
threads, and a thread waiting at the barrier that ends a parallel loop, spin for about 300,000
iterations (a few milliseconds) before sleeping. On an idle machine a parallel loop's other
thread arrives within microseconds, so the spin costs nothing; but when another process keeps
a core busy, the spinning thread holds its core while the thread it waits for has none, until
the scheduler's time slice ends. On the 2-core VM this project is measured on, with two other
busy processes, a jitted ``a + b`` of 400k float32 took 0.34 ms at the median but 4.4 ms at the
90th percentile (12 ms at worst), and an MLP training step's 90th percentile was 64 ms against
a 2.6 ms median; with ``OMP_WAIT_POLICY=PASSIVE`` (waiting threads sleep at once) the same
runs' 90th percentiles were 0.46 ms and 2.6 ms, and the idle machine's medians did not move
(2.5 ms for the MLP step, 7.0-7.3 ms for a CNN gradient, either way). So functrans sets
``OMP_WAIT_POLICY=PASSIVE`` at import unless it is set already; libgomp reads it when it starts,
which is when the first parallel loop runs.

Sleeping at once costs a wake-up (tens of microseconds) at every parallel region, which
matters since jit's matrix products also run on this pool (transforms/native/blas_split.py):
a 512x128 @ 128x128 float32 product took 136 us at the median against 89 us on OpenBLAS's
own (spinning) threads. So waiting threads first spin briefly, ``GOMP_SPINCOUNT=1000``
iterations (microseconds), then sleep. Measured on the 2-core VM, quiet: that product 89 us,
the MLP's products as fast as OpenBLAS's threads (516-552 us against 515-564); the 2-block
transformer step 14.4 ms (15.3 sleeping at once); with another process spinning on one core,
its p50/p90 22.2/23.6 ms (21.3/22.4 sleeping at once, 34/37 ms spinning 10,000 iterations,
JAX 27-31/29-36 ms).
"""
from __future__ import annotations

import os


def sleep_while_waiting() -> None:
    """Ask OpenMP's threads to spin briefly, then sleep, while they wait (unless the user
    chose a policy or a spin count).

    >>> sleep_while_waiting()
    >>> os.environ["OMP_WAIT_POLICY"], os.environ["GOMP_SPINCOUNT"]  # (set at import)
    ('PASSIVE', '1000')
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("GOMP_SPINCOUNT", "1000")
